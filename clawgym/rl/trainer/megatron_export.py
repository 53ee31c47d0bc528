"""Getting whole tensors out of a TP/PP-sharded megatron trainer: weights, adapters, grads, checkpoints.

Everything funnels through :func:`stream_to_rank0`: TP shards meet by ``all_gather`` of tensors inside the
TP group, a later pipeline stage sends each merged tensor to global rank 0 by ``broadcast`` over the
pipeline group. Only names and shapes travel as Python objects (once per stage), so no rank pickles the
model.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import torch

from clawgym.rl.trainer.megatron_convert import megatron_tensor_to_hf, pp_to_global, tp_merge, tp_merged_shape
from clawgym.rl.trainer.megatron_lora import lora_merged_shape, lora_tp_merge, megatron_to_peft_name


@torch.no_grad()
def stream_to_rank0(trainer: Any, local: Mapping[str, torch.Tensor],
                    merge: Callable = tp_merge,
                    merged_shape: Callable = tp_merged_shape) -> Iterator[tuple[str, torch.Tensor]]:
    """``(global megatron name, whole tensor)`` on global rank 0, one at a time; every rank must iterate.

    ``local`` is this rank's stage-local shards; ``merge(name, shards)`` joins TP shards and
    ``merged_shape(name, shard_shape, tp)`` says the joined shape to the ranks that receive it.
    """
    dist = torch.distributed
    if trainer.dp_rank != 0:  # data-parallel replicas hold the same tensors: the first one sends
        return
    ps = trainer.ps
    tp_group, pp_group = ps.get_tensor_model_parallel_group(), ps.get_pipeline_model_parallel_group()
    pp_ranks = dist.get_process_group_ranks(pp_group)
    for stage in range(trainer.pp_size):
        meta = [[(k, tuple(v.shape), v.dtype) for k, v in local.items()] if trainer.pp_rank == stage else None]
        if trainer.pp_size > 1:
            dist.broadcast_object_list(meta, src=pp_ranks[stage], group=pp_group)
        for name, shard_shape, dtype in meta[0]:
            full = None
            if trainer.pp_rank == stage:
                shard = local[name].detach().contiguous()
                parts = [shard]
                if trainer.tp_size > 1:
                    parts = [torch.empty_like(shard) for _ in range(trainer.tp_size)]
                    dist.all_gather(parts, shard, group=tp_group)
                full = merge(name, parts)
            if trainer.tp_rank != 0:
                continue
            if stage > 0:
                if full is None:
                    full = torch.empty(merged_shape(name, shard_shape, trainer.tp_size),
                                       dtype=dtype, device=trainer.device)
                dist.broadcast(full, src=pp_ranks[stage], group=pp_group)
            if trainer.pp_rank == 0:
                yield next(iter(pp_to_global({name: full}, trainer.shape.num_layers, stage, trainer.pp_size).items()))


def iter_hf_tensors(trainer: Any, local: Mapping[str, torch.Tensor]) -> Iterator[tuple[str, torch.Tensor]]:
    """Base-model tensors (weights or their grads) in HF names, streamed to rank 0."""
    for name, full in stream_to_rank0(trainer, local):
        yield from megatron_tensor_to_hf(name, full, trainer.shape, te_spec=trainer.config.transformer_engine)


def iter_adapter_tensors(trainer: Any, local: Mapping[str, torch.Tensor]) -> Iterator[tuple[str, torch.Tensor]]:
    """LoRA tensors (or their grads) in peft names, streamed to rank 0."""
    for name, full in stream_to_rank0(trainer, local, lora_tp_merge, lora_merged_shape):
        yield megatron_to_peft_name(name), full


def local_grads(trainer: Any) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """This rank's reduced grads of the last backward (DDP's ``main_grad``): (base tensors, adapter tensors)."""
    base, adapters = {}, {}
    for name, param in trainer.model.module.named_parameters():
        if param.requires_grad:
            (adapters if "_lora." in name else base)[name] = param.main_grad
    return base, adapters


def save_dist_checkpoint(trainer: Any, path: str | Path) -> None:
    """megatron dist-checkpoint of model + optimizer, written to a temp dir and renamed by rank 0."""
    from megatron.core import dist_checkpointing

    from clawgym.rl.trainer import checkpoint as ckpt

    target = Path(path).absolute()
    tmp = target.parent / f".{target.name}.tmp-step{trainer.step}"
    if torch.distributed.get_rank() == 0:
        tmp.mkdir(parents=True, exist_ok=True)
    torch.distributed.barrier()
    model_sd = trainer.model.module.sharded_state_dict()
    state = {"model": model_sd, "optimizer": trainer.optimizer.sharded_state_dict(model_sd)}
    dist_checkpointing.save(state, str(tmp))
    torch.distributed.barrier()
    if torch.distributed.get_rank() == 0:
        ckpt.write_json(tmp / "trainer_state.json", {"step": trainer.step, "version": trainer.version,
                                                     "lora": trainer.lora is not None,
                                                     "config": dataclasses.asdict(trainer.config)})
        (tmp / ckpt.COMPLETE_MARKER).write_text("ok\n")
        old = target.parent / f".{target.name}.old-step{trainer.step}"
        if target.exists():
            os.rename(target, old)
        os.rename(tmp, target)
        shutil.rmtree(old, ignore_errors=True)
    torch.distributed.barrier()


def load_dist_checkpoint(trainer: Any, path: str | Path) -> None:
    from megatron.core import dist_checkpointing

    from clawgym.rl.trainer import checkpoint as ckpt

    directory = ckpt.resolve(path)
    meta = ckpt.read_json(directory / "trainer_state.json")
    if bool(meta.get("lora", False)) != (trainer.lora is not None):
        raise ValueError("checkpoint and trainer disagree on LoRA; build the trainer with the checkpoint's config")
    model_sd = trainer.model.module.sharded_state_dict()
    state = {"model": model_sd, "optimizer": trainer.optimizer.sharded_state_dict(model_sd, is_loading=True)}
    loaded = dist_checkpointing.load(state, str(directory))
    trainer.model.module.load_state_dict(loaded["model"])
    trainer.optimizer.load_state_dict(loaded["optimizer"])
    trainer.step, trainer.version = int(meta["step"]), int(meta["version"])
