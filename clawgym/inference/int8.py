"""Int8 weight-only serving weights for the CPU: decode reads a quarter of the float32 bytes.

Decoding one token reads every weight once, so on a CPU it is bound by memory bandwidth, not
arithmetic. :func:`quantize_linears` replaces every ``nn.Linear`` of a *served* model (the decoder
layers and the output layer) with an :class:`Int8Linear`: int8 weights with one bfloat16 scale per
output channel (symmetric, round to nearest), multiplied by ``torch.ops.aten._weight_int8pack_mm``
with bfloat16 activations. Embeddings, norms and attention stay bfloat16.

The trainer keeps its full-precision weights. Publishing them to the served model goes through
``load_state_dict`` as before: an :class:`Int8Linear` quantises the ``weight`` it is given. Because
the sampler's weights are then a rounding of the trainer's, the logprobs it records differ slightly
from the trainer's own (measured in docs/models.md); ``trainer.behavior_correction: tis`` corrects
for it (:mod:`clawgym.rl.losses`), and the launch turns it on whenever ``policy.quantize`` is set.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


def _quantize(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(int8 weight, bfloat16 per-row scale) of a ``[out, in]`` float weight."""
    w = weight.detach().float()
    scale = (w.abs().amax(dim=1) / 127.0).clamp(min=1e-12)
    return torch.round(w / scale[:, None]).clamp(-127, 127).to(torch.int8), scale.to(torch.bfloat16)


class Int8Linear(nn.Module):
    """``y = x W^T + b`` with W stored as int8 rows and a bfloat16 scale per row (output in bfloat16)."""

    def __init__(self, in_features: int, out_features: int, bias: bool) -> None:
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.register_buffer("qweight", torch.zeros(out_features, in_features, dtype=torch.int8))
        self.register_buffer("scale", torch.ones(out_features, dtype=torch.bfloat16))
        self.register_buffer("bias", torch.zeros(out_features, dtype=torch.bfloat16) if bias else None)

    @classmethod
    def from_linear(cls, linear: nn.Linear) -> "Int8Linear":
        layer = cls(linear.in_features, linear.out_features, linear.bias is not None)
        layer.set_weight(linear.weight, linear.bias)
        return layer.to(linear.weight.device)

    @torch.no_grad()
    def set_weight(self, weight: torch.Tensor, bias: torch.Tensor | None = None) -> None:
        qweight, scale = _quantize(weight)
        self.qweight.copy_(qweight)
        self.scale.copy_(scale)
        if bias is not None and self.bias is not None:
            self.bias.copy_(bias.detach().to(torch.bfloat16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, self.in_features).to(torch.bfloat16)
        y = torch.ops.aten._weight_int8pack_mm(flat, self.qweight, self.scale)
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*x.shape[:-1], self.out_features)

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, local_metadata: Any, strict: bool,
                              missing_keys: list[str], unexpected_keys: list[str], error_msgs: list[str]) -> None:
        """Take a full-precision ``weight`` (and ``bias``), as the trainer publishes them."""
        weight = state_dict.get(prefix + "weight")
        if weight is None:
            if strict:
                missing_keys.append(prefix + "weight")
            return
        if tuple(weight.shape) != (self.out_features, self.in_features):
            error_msgs.append(f"{prefix}weight: shape {tuple(weight.shape)}, expected "
                              f"{(self.out_features, self.in_features)}")
            return
        bias = state_dict.get(prefix + "bias")
        if self.bias is not None and bias is None and strict:
            missing_keys.append(prefix + "bias")
        self.set_weight(weight, bias)


def quantize_linears(model: nn.Module) -> int:
    """Replace every ``nn.Linear`` in ``model`` by an :class:`Int8Linear`, in place; returns how many.

    A tied output layer gets its own int8 copy (the embedding stays bfloat16 for the lookup), so the
    model is untied; publishing keeps both in step, since the trainer's state dict names both.
    """
    if getattr(model.config, "tie_word_embeddings", False):
        head = model.get_output_embeddings()
        untied = nn.Linear(head.in_features, head.out_features, bias=False, device=head.weight.device,
                           dtype=head.weight.dtype)
        untied.weight = nn.Parameter(head.weight.detach().clone(), requires_grad=False)
        model.set_output_embeddings(untied)
        model.config.tie_word_embeddings = False
    count = 0
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, nn.Linear):
                setattr(module, name, Int8Linear.from_linear(child))
                count += 1
    return count
