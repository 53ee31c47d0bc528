"""Sequences to tensors and response log-probs: right-padded batches with an attention mask (no packing),
logits computed only at the response positions, so long agent prompts cost no ``[L, V]`` logits, and a
prompt beginning that every row of a batch shares (a GRPO group's prompt, an agent's system prompt and
tools) run through the model once instead of once a row."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import nn

from clawgym.rl.trainer.frozen_prompt import PromptKV, as_cache


@dataclass
class Batch:
    input_ids: torch.Tensor  # [B, L] right-padded
    attention_mask: torch.Tensor  # [B, L]
    positions: torch.Tensor  # [B, T] index of the hidden state that predicts each response token
    targets: torch.Tensor  # [B, T] response token ids (0 where padded)
    response_mask: torch.Tensor  # [B, T] 1 for real response tokens


def collate(prompts: Sequence[Sequence[int]], responses: Sequence[Sequence[int]], pad_id: int,
            device: torch.device) -> Batch:
    lengths = [len(p) + len(r) for p, r in zip(prompts, responses)]
    width, depth = max(lengths), max(len(r) for r in responses)
    batch = len(prompts)
    input_ids = torch.full((batch, width), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((batch, width), dtype=torch.long)
    positions = torch.zeros((batch, depth), dtype=torch.long)
    targets = torch.zeros((batch, depth), dtype=torch.long)
    response_mask = torch.zeros((batch, depth), dtype=torch.float32)
    for i, (prompt, response) in enumerate(zip(prompts, responses)):
        n_prompt, n_resp = len(prompt), len(response)
        input_ids[i, : n_prompt + n_resp] = torch.tensor(list(prompt) + list(response), dtype=torch.long)
        attention_mask[i, : n_prompt + n_resp] = 1
        positions[i, :n_resp] = torch.arange(n_prompt - 1, n_prompt - 1 + n_resp)
        targets[i, :n_resp] = torch.tensor(list(response), dtype=torch.long)
        response_mask[i, :n_resp] = 1.0
    return Batch(
        input_ids.to(device), attention_mask.to(device), positions.to(device), targets.to(device),
        response_mask.to(device)
    )


# Below this many shared tokens the second forward pass costs more than the tokens it saves.
MIN_SHARED_PREFIX = 16


def micro_batches(prompts: Sequence[Sequence[int]], size: int, by_prompt: bool = False) -> list[list[int]]:
    """Index lists of at most ``size`` samples, in order; ``by_prompt``: samples with the same prompt
    (a GRPO group) go into micro-batches of their own, so their prompt can run once, and the others fill
    micro-batches in order. The loss is normalised by the optimiser step's totals, so how a step is cut
    into micro-batches changes its memory and speed, not its result."""
    if not by_prompt:
        return [list(range(start, min(start + size, len(prompts)))) for start in range(0, len(prompts), size)]
    same: dict[tuple[int, ...], list[int]] = {}
    for index, prompt in enumerate(prompts):
        same.setdefault(tuple(prompt), []).append(index)
    groups = [members for members in same.values() if len(members) > 1]
    rest = [members[0] for members in same.values() if len(members) == 1]
    return [chunk[start : start + size] for chunk in groups + [rest] for start in range(0, len(chunk), size)]


def trained_micro_batches(prompts: Sequence[Sequence[int]], responses: Sequence[Sequence[int]], size: int,
                          by_prompt: bool, pad_id: int, device: torch.device,
                          prompt_kv: PromptKV | None) -> Iterator[tuple[list[int], Batch]]:
    """:func:`micro_batches`, collated, for a train step. One whose prompt beginning is frozen (``prompt_kv``) runs
    a row at a time: its replies attend to the whole prompt without checkpointing, so the attention weights the
    backward pass keeps grow as rows x reply x prompt tokens (a hindsight group of 8 OpenClaw replies on its
    12.5k-token prompt: ~17 GB on the 0.5B model, against ~2 GB a row). The rows share the beginning's keys and
    values (run once) and the loss is normalised by the step's totals, so the loss is the micro-batch's; the
    gradient too, unless the rows' prompts differ past their shared beginning (each row then freezes its own
    prompt, leaving out the path through a little more of it)."""
    for indices in micro_batches(prompts, size, by_prompt):
        batch = collate([prompts[i] for i in indices], [responses[i] for i in indices], pad_id, device)
        if len(indices) > 1 and uses_frozen_prompt(batch, prompt_kv):
            for index in indices:
                yield [index], collate([prompts[index]], [responses[index]], pad_id, device)
        else:
            yield list(indices), batch


def forwarded_tokens(batch: Batch, share_prefix: bool) -> int:
    """Token positions the decoder runs for ``batch``: every row at the batch's width, or with a shared
    beginning that :func:`response_logits` would run once, that beginning once and each row's rest."""
    rows, width = batch.input_ids.shape
    shared = shared_prefix_length(batch) if share_prefix else 0
    return shared + rows * (width - shared) if shared >= MIN_SHARED_PREFIX else rows * width


@contextmanager
def checkpointing_off(model: nn.Module) -> Iterator[None]:
    """The model's layers run without activation checkpointing inside (a pass without gradients, or a
    micro-batch small enough to keep its activations), and as configured after."""
    layers = _checkpointed_layers(model)
    for module in layers:
        module.gradient_checkpointing = False
    try:
        yield
    finally:
        for module in layers:
            module.gradient_checkpointing = True


def shared_prefix_length(batch: Batch) -> int:
    """How many leading tokens all rows of ``batch`` have in common, stopping before the first row's
    first prediction (every hidden state the loss reads stays in the per-row part); 0 for one row."""
    rows = batch.input_ids.shape[0]
    if rows < 2:
        return 0
    limit = int(batch.positions[:, 0].min())  # the hidden state that predicts a row's first response token
    differs = (batch.input_ids[:, :limit] != batch.input_ids[:1, :limit]).any(dim=0).nonzero()
    return int(differs[0]) if len(differs) else limit


def frozen_length(batch: Batch) -> int:
    """The beginning of ``batch`` that :class:`~clawgym.rl.trainer.frozen_prompt.PromptKV` may run without
    gradients: what all rows share, or one row's prompt but its last token (which predicts the first reply token)."""
    if batch.input_ids.shape[0] == 1:
        return int(batch.positions[0, 0])
    return shared_prefix_length(batch)


def uses_frozen_prompt(batch: Batch, prompt_kv: PromptKV | None) -> bool:
    return prompt_kv is not None and frozen_length(batch) >= prompt_kv.min_tokens


def response_logits(model: nn.Module, batch: Batch, temperature: float = 1.0,
                    share_prefix: bool = True, prompt_kv: PromptKV | None = None) -> torch.Tensor:
    """Float32 logits ``[B, T, V]`` (fp64 for an fp64 model) at the response positions only, divided by the
    sampling temperature.

    No padding mask is passed: padding is on the right, and under causal attention no real token ever
    attends to a later position, so the real positions come out the same. Without a mask, SDPA runs
    its flash kernel (blocked, causal) instead of materialising ``[B, heads, L, L]`` attention
    weights for the backward pass: at an 8k-token OpenClaw prompt that would be 4.6 GB a layer.

    With ``share_prefix``, a beginning of at least :data:`MIN_SHARED_PREFIX` tokens that every row shares
    runs once, and the rest of each row attends to its keys and values (repeated per row; gradients
    flow back through them and add up): the same logits and gradients as running every row whole, for
    fewer tokens forwarded, e.g. a GRPO group of 8 replies to one prompt. Not under gradient
    checkpointing, which drops the KV cache inside the checkpointed layers.

    With ``prompt_kv`` and a beginning of at least its ``min_tokens`` (:func:`frozen_length`), that beginning's
    keys and values come from ``prompt_kv`` (run without gradients, once per set of weights) and only the
    rest runs here; the caller turns checkpointing off for it (:mod:`clawgym.rl.trainer.frozen_prompt`).
    """
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    decoder, head = base.get_decoder(), base.get_output_embeddings()
    shared = shared_prefix_length(batch) if share_prefix and not _checkpointed_layers(decoder) else 0
    if uses_frozen_prompt(batch, prompt_kv):
        frozen = frozen_length(batch)
        hidden = _hidden_after_frozen(decoder, batch.input_ids, frozen, prompt_kv)
        positions = (batch.positions - frozen).clamp(min=0)
    elif shared >= MIN_SHARED_PREFIX:
        hidden = _hidden_after_prefix(decoder, batch.input_ids, shared)
        positions = (batch.positions - shared).clamp(min=0)  # padded response slots point anywhere; masked later
    else:
        hidden = decoder(input_ids=batch.input_ids, use_cache=False).last_hidden_state
        positions = batch.positions
    index = positions[..., None].expand(-1, -1, hidden.shape[-1])
    logits = head(hidden.gather(1, index))
    logits = logits.to(torch.promote_types(logits.dtype, torch.float32))
    return logits / temperature if temperature != 1.0 else logits


def _checkpointed_layers(model: nn.Module) -> list[nn.Module]:
    return [module for module in model.modules() if getattr(module, "gradient_checkpointing", False)]


def _hidden_after_prefix(decoder: nn.Module, input_ids: torch.Tensor, shared: int) -> torch.Tensor:
    """Last hidden states ``[B, L - shared, H]`` of every row after its first ``shared`` tokens, the
    prefix (the same in every row) run once and its keys and values repeated for the rows."""
    from clawgym.inference.kv_buffer import CACHE_KWARG

    rows, width = input_ids.shape
    cache = getattr(decoder(input_ids=input_ids[:1, :shared], use_cache=True), CACHE_KWARG)
    cache.batch_repeat_interleave(rows)
    positions = torch.arange(shared, width, device=input_ids.device).expand(rows, -1)
    out = decoder(input_ids=input_ids[:, shared:], position_ids=positions, use_cache=True, **{CACHE_KWARG: cache})
    return out.last_hidden_state


def _hidden_after_frozen(decoder: nn.Module, input_ids: torch.Tensor, frozen: int,
                         prompt_kv: PromptKV) -> torch.Tensor:
    """Last hidden states ``[B, L - frozen, H]`` after the first ``frozen`` tokens, whose keys and values
    ``prompt_kv`` holds (or runs now, without gradients)."""
    from clawgym.inference.kv_buffer import CACHE_KWARG

    if _checkpointed_layers(decoder):
        raise RuntimeError("a frozen prompt needs the KV cache: run the rest with checkpointing off")
    rows, width = input_ids.shape
    cache = as_cache(prompt_kv.keys_values(decoder, input_ids[0, :frozen]), rows)
    positions = torch.arange(frozen, width, device=input_ids.device).expand(rows, -1)
    out = decoder(input_ids=input_ids[:, frozen:], position_ids=positions, use_cache=True, **{CACHE_KWARG: cache})
    return out.last_hidden_state


def gather_logprobs(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """log softmax(logits)[target] without materialising the full log-softmax."""
    return logits.gather(-1, targets[..., None]).squeeze(-1) - torch.logsumexp(logits, dim=-1)


def pad_rows(rows: Sequence[Sequence[float]], width: int, device: torch.device,
             dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Per-token rows (loss masks, old logprobs) as one zero-padded ``[B, width]`` tensor (float32 unless
    ``dtype``: logprobs take the logits' dtype, so an fp64 model is not fed fp32-rounded logprobs)."""
    out = torch.zeros((len(rows), width), dtype=dtype)
    for i, row in enumerate(rows):
        out[i, : len(row)] = torch.tensor(list(row), dtype=dtype)
    return out.to(device)
