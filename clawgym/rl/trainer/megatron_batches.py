"""Samples -> the fixed-shape micro-batches megatron's pipeline schedule needs, and the forward it runs."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from clawgym.rl.types import Sample


def micro_batches(samples: Sequence[Sample], extra: Mapping[str, Sequence[torch.Tensor]],
                  width: int, micro_batch_size: int,
                  pad_id: int, device: torch.device, dtype: torch.dtype = torch.float32) -> list[dict]:
    """Right-padded micro-batches of identical shape; per-token values sit at target positions (p predicts p+1).
    Old logprobs come in ``dtype``, that of the logprobs they are compared with."""
    mbs = micro_batch_size
    batches = []
    for start in range(0, len(samples), mbs):
        part = list(range(start, min(start + mbs, len(samples))))
        input_ids = torch.full((mbs, width), pad_id, dtype=torch.long)
        mask = torch.zeros((mbs, width), dtype=torch.float32)
        old = torch.zeros((mbs, width), dtype=dtype)
        named = {k: torch.zeros((mbs, width)) for k in extra}
        for row, i in enumerate(part):
            s = samples[i]
            n_p, n_r = len(s.prompt_ids), len(s.response_ids)
            input_ids[row, : n_p + n_r] = torch.tensor(s.prompt_ids + s.response_ids)
            span = slice(n_p - 1, n_p - 1 + n_r)
            mask[row, span] = torch.tensor(s.loss_mask, dtype=torch.float32)
            old[row, span] = torch.tensor(s.old_logprobs, dtype=dtype)
            for key, values in extra.items():
                named[key][row, span] = values[i]
        batch = {"input_ids": input_ids, "loss_mask": mask, "old_logprobs": old, **named}
        batches.append({k: v.to(device, non_blocking=True) for k, v in batch.items()})
    return batches


def add_teacher_inputs(batches: list[dict], local: Sequence[Sample], teacher_ids: Sequence[list[int]], width: int,
                       micro_batch_size: int, pad_id: int, device: torch.device) -> None:
    """The hinted prompts + responses the teacher reads, and where each student position's teacher logprob is."""
    mbs = micro_batch_size
    for b, start in enumerate(range(0, len(local), mbs)):
        ids = torch.full((mbs, width), pad_id, dtype=torch.long)
        src = torch.zeros((mbs, width), dtype=torch.long)  # teacher position feeding each student position
        has = torch.zeros((mbs, width), dtype=torch.float32)
        for row, i in enumerate(range(start, min(start + mbs, len(local)))):
            s, t = local[i], teacher_ids[i]
            ids[row, : len(t) + len(s.response_ids)] = torch.tensor(t + s.response_ids)
            n_r = len(s.response_ids)
            src[row, len(s.prompt_ids) - 1 : len(s.prompt_ids) - 1 + n_r] = torch.arange(len(t) - 1, len(t) - 1 + n_r)
            has[row, len(s.prompt_ids) - 1 : len(s.prompt_ids) - 1 + n_r] = 1.0 if s.hint else 0.0
        batches[b]["teacher_input_ids"] = ids.to(device)
        batches[b]["teacher_src"] = torch.stack([src, has.long()]).to(device)


def realign(teacher_positions: torch.Tensor, src: torch.Tensor, old: torch.Tensor) -> torch.Tensor:
    """Move teacher logprobs (indexed by hinted-prompt positions) onto the student's positions.

    Samples without a hint get teacher := old (no OPD term), as in the torch trainer.
    """
    index, has = src[0], src[1].to(old.dtype)
    moved = teacher_positions.gather(1, index)
    return has * moved + (1.0 - has) * old


def gpt_forward(model: torch.nn.Module, input_ids: torch.Tensor) -> torch.Tensor:
    """GPTModel forward with a causal mask: vocab-parallel logits [b, s, V/TP] on the last stage,
    the hidden state for the next stage elsewhere (right padding never affects earlier positions)."""
    position_ids = torch.arange(input_ids.shape[1], device=input_ids.device)[None].expand_as(input_ids)
    mask = None  # on CUDA the causal mask is implied by the layer spec
    if input_ids.device.type == "cpu":  # megatron's default mask is built on CUDA; spell it out on CPU
        n = input_ids.shape[1]
        mask = torch.triu(torch.ones(n, n, dtype=torch.bool, device=input_ids.device), 1)[None, None]
    return model(input_ids, position_ids, mask)


def run_schedule(model: torch.nn.Module, batches: list[dict], loss_fn: Callable[[dict, torch.Tensor], object],
                 forward_only: bool, temperature: float) -> list[dict]:
    """megatron's forward/backward schedule (pipelined when PP > 1); ``loss_fn(batch, logprobs)`` on the last stage."""
    from megatron.core import tensor_parallel
    from megatron.core.pipeline_parallel import get_forward_backward_func

    def forward_step(data_iterator, model_chunk: torch.nn.Module):
        batch = next(data_iterator)
        ids = batch["input_ids"]
        output = gpt_forward(model_chunk, ids)

        def loss_func(logits: torch.Tensor):
            targets = torch.roll(ids, shifts=-1, dims=1)
            logprobs = -tensor_parallel.vocab_parallel_cross_entropy(
                logits.to(torch.promote_types(logits.dtype, torch.float32)) / temperature, targets)
            return loss_fn(batch, logprobs)

        return output, loss_func

    return get_forward_backward_func()(
        forward_step_func=forward_step,
        data_iterator=iter(batches),
        model=model,
        num_microbatches=len(batches),
        seq_length=batches[0]["input_ids"].shape[1],
        micro_batch_size=batches[0]["input_ids"].shape[0],
        forward_only=forward_only,
    )
