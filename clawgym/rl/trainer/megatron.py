"""The megatron trainer: the same losses on megatron-core (GPTModel, TP/PP, distributed optimizer).

**MegatronTrainer**: started under ``torchrun`` on a GPU partition (``python -m
   clawgym.rl.trainer.megatron --help``). Each rank builds its TP/PP shard of a GPTModel, loads its
   slice of the HF weights, wraps it in megatron's DDP with the distributed optimizer, and trains
   with the pipeline schedule from ``get_forward_backward_func``. Log-probs come from
   ``vocab_parallel_cross_entropy`` over vocab-parallel logits. Losses are normalised by the global
   totals of the step (all DP ranks), as in the torch trainer. Not supported here yet: LoRA and the
   ``opd_topk`` method (full-vocabulary teacher logits would need a vocab-parallel top-K).

   Tested on CPU (gloo, with megatron-core's few hard-coded CUDA tensors redirected in the test
   process only): one step equals the torch trainer's step (loss, KL, grad norm, weights) for TP=2
   and for DP=2 with the distributed optimizer. Pipeline parallelism (p2p) and the dist-checkpoint
   writer are CUDA-only in megatron-core and run only on a GPU partition.

The weight conversion lives in :mod:`clawgym.rl.trainer.megatron_convert`, the set-up in
:mod:`clawgym.rl.trainer.megatron_setup`; both are re-exported here.
"""


from __future__ import annotations

import argparse
import dataclasses
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from clawgym.rl.trainer.megatron_convert import (  # noqa: F401  (re-exported)
    ModelShape,
    fuse_gate_up,
    fuse_qkv,
    hf_to_megatron,
    megatron_to_hf,
    megatron_tensor_to_hf,
    padded_vocab_size,
    pp_layer_range,
    pp_stage_state,
    pp_to_global,
    split_gate_up,
    split_qkv,
    tp_merge,
    tp_merged_shape,
    tp_shard,
)
from clawgym.rl.trainer.megatron_setup import (  # noqa: F401  (re-exported)
    MegatronConfig,
    _load_hf_state_dict,
    _rope_base,
    initialize_distributed,
    megatron_available,
    transformer_config_from_hf,
)

logger = logging.getLogger(__name__)


class MegatronTrainer:
    """Trains an HF Llama/Qwen2 checkpoint with megatron-core; one instance per torchrun rank."""

    def __init__(self, hf_model_dir: str | Path, tokenizer: Any, config: MegatronConfig | None = None) -> None:
        self.config = config or MegatronConfig()
        ok, why = megatron_available()
        if not ok and self.config.device == "cuda":
            raise RuntimeError(f"MegatronTrainer cannot start: {why}")
        from megatron.core import parallel_state as ps
        from transformers import AutoConfig

        self.device = torch.device(self.config.device)
        self.tokenizer = tokenizer
        self.hf_config = AutoConfig.from_pretrained(str(hf_model_dir))
        self.shape = ModelShape.from_hf_config(self.hf_config)
        initialize_distributed(self.config.tensor_parallel, self.config.pipeline_parallel, self.config.seed, self.config.device)
        self.ps = ps
        self.tp_rank, self.tp_size = ps.get_tensor_model_parallel_rank(), ps.get_tensor_model_parallel_world_size()
        self.pp_rank, self.pp_size = ps.get_pipeline_model_parallel_rank(), ps.get_pipeline_model_parallel_world_size()
        self.dp_rank, self.dp_size = ps.get_data_parallel_rank(), ps.get_data_parallel_world_size()
        self.padded_vocab = padded_vocab_size(self.shape.vocab_size, self.config.make_vocab_size_divisible_by, self.tp_size)
        self.tf_config = transformer_config_from_hf(self.hf_config, self.config)
        self.step = 0
        self.version = 0

        hf_state = _load_hf_state_dict(Path(hf_model_dir))
        self.model = self._build_and_load(hf_state, trainable=True)
        tcfg = self.config.trainer
        needs_frozen = tcfg.kl_coef > 0 or tcfg.method in ("opd", "hybrid")
        # the initial weights serve as OPD teacher and KL reference ("current" reuses the policy)
        self.frozen = self._build_and_load(hf_state, trainable=False) if needs_frozen else None
        del hf_state
        self._wrap_ddp_and_optimizer()

    # ---- construction --------------------------------------------------------------------------

    def _layer_spec(self) -> Any:
        from megatron.core.models.gpt.gpt_layer_specs import (
            get_gpt_layer_local_spec,
            get_gpt_layer_with_transformer_engine_spec,
        )

        if self.config.transformer_engine:
            return get_gpt_layer_with_transformer_engine_spec()
        return get_gpt_layer_local_spec(normalization="RMSNorm")

    def _build_and_load(self, hf_state: Mapping[str, torch.Tensor], trainable: bool) -> torch.nn.Module:
        from megatron.core.models.gpt import GPTModel

        model = GPTModel(
            config=self.tf_config,
            transformer_layer_spec=self._layer_spec(),
            vocab_size=self.padded_vocab,
            max_sequence_length=self.config.max_sequence_length,
            pre_process=self.ps.is_pipeline_first_stage(),
            post_process=self.ps.is_pipeline_last_stage(),
            share_embeddings_and_output_weights=self.shape.tie_embeddings,
            position_embedding_type="rope",
            rotary_base=int(_rope_base(self.hf_config)),
        ).to(self.device)
        if self.config.bf16:
            model = model.to(torch.bfloat16)
        full = hf_to_megatron(hf_state, self.shape, te_spec=self.config.transformer_engine, padded_vocab=self.padded_vocab)
        stage = pp_stage_state(full, self.shape.num_layers, self.pp_rank, self.pp_size, self.shape.tie_embeddings)
        local = {name: tp_shard(name, t, self.tp_rank, self.tp_size, self.shape) for name, t in stage.items()}
        missing, unexpected = model.load_state_dict(local, strict=False)
        missing = [m for m in missing if not m.endswith("_extra_state")]
        if missing or unexpected:
            raise RuntimeError(f"HF -> megatron load mismatch: missing {missing[:5]}, unexpected {unexpected[:5]}")
        if not trainable:
            model.eval().requires_grad_(False)
        return model

    def _wrap_ddp_and_optimizer(self) -> None:
        from megatron.core.distributed import DistributedDataParallel, DistributedDataParallelConfig, finalize_model_grads
        from megatron.core.optimizer import OptimizerConfig, get_megatron_optimizer

        tcfg = self.config.trainer
        ddp_config = DistributedDataParallelConfig(
            grad_reduce_in_fp32=True,
            overlap_grad_reduce=False,
            use_distributed_optimizer=self.config.use_distributed_optimizer,
        )
        self.model = DistributedDataParallel(config=self.tf_config, ddp_config=ddp_config, module=self.model)
        self.tf_config.no_sync_func = self.model.no_sync
        self.tf_config.finalize_model_grads_func = finalize_model_grads
        opt_config = OptimizerConfig(
            optimizer="adam",
            lr=tcfg.lr,
            weight_decay=tcfg.weight_decay,
            adam_beta1=tcfg.betas[0],
            adam_beta2=tcfg.betas[1],
            clip_grad=tcfg.max_grad_norm,
            bf16=self.config.bf16,
            params_dtype=torch.bfloat16 if self.config.bf16 else torch.float32,
            use_distributed_optimizer=self.config.use_distributed_optimizer,
        )
        self.optimizer = get_megatron_optimizer(opt_config, [self.model])

    # ---- batching --------------------------------------------------------------------------------

    def _micro_batches(self, samples: Sequence[Any], extra: Mapping[str, Sequence[torch.Tensor]], width: int) -> list[dict]:
        """Right-padded micro-batches of identical shape (the pipeline schedule needs fixed shapes)."""
        mbs = self.config.trainer.micro_batch_size
        batches = []
        for start in range(0, len(samples), mbs):
            part = list(range(start, min(start + mbs, len(samples))))
            input_ids = torch.full((mbs, width), int(self.tokenizer.pad_token_id or 0), dtype=torch.long)
            mask = torch.zeros((mbs, width), dtype=torch.float32)  # over target positions (p predicts p+1)
            old = torch.zeros((mbs, width))
            named = {k: torch.zeros((mbs, width)) for k in extra}
            for row, i in enumerate(part):
                s = samples[i]
                n_p, n_r = len(s.prompt_ids), len(s.response_ids)
                input_ids[row, : n_p + n_r] = torch.tensor(s.prompt_ids + s.response_ids)
                span = slice(n_p - 1, n_p - 1 + n_r)
                mask[row, span] = torch.tensor(s.loss_mask, dtype=torch.float32)
                old[row, span] = torch.tensor(s.old_logprobs)
                for key, values in extra.items():
                    named[key][row, span] = values[i]
            batch = {"input_ids": input_ids, "loss_mask": mask, "old_logprobs": old, **named}
            batches.append({k: v.to(self.device, non_blocking=True) for k, v in batch.items()})
        return batches

    @staticmethod
    def _forward(model: torch.nn.Module, input_ids: torch.Tensor) -> torch.Tensor:
        """GPTModel forward with a causal mask: vocab-parallel logits [b, s, V/TP] on the last stage,
        the hidden state for the next stage elsewhere (right padding never affects earlier positions)."""
        position_ids = torch.arange(input_ids.shape[1], device=input_ids.device)[None].expand_as(input_ids)
        mask = None  # on CUDA the causal mask is implied by the layer spec
        if input_ids.device.type == "cpu":  # megatron's default mask is built on CUDA; spell it out on CPU
            n = input_ids.shape[1]
            mask = torch.triu(torch.ones(n, n, dtype=torch.bool, device=input_ids.device), 1)[None, None]
        return model(input_ids, position_ids, mask)

    def _run(self, model: torch.nn.Module, batches: list[dict], loss_fn: Any, forward_only: bool) -> list[dict]:
        from megatron.core import tensor_parallel
        from megatron.core.pipeline_parallel import get_forward_backward_func

        temperature = self.config.trainer.temperature

        def forward_step(data_iterator: Iterator[dict], model_chunk: torch.nn.Module):
            batch = next(data_iterator)
            ids = batch["input_ids"]
            output = self._forward(model_chunk, ids)

            def loss_func(logits: torch.Tensor):
                targets = torch.roll(ids, shifts=-1, dims=1)
                logprobs = -tensor_parallel.vocab_parallel_cross_entropy(logits.float() / temperature, targets)
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

    @torch.no_grad()
    def _frozen_logprobs(self, batches: list[dict], key: str, input_key: str = "input_ids") -> None:
        """Forward-only pass of the initial (or current) weights; stores per-token logprobs in each batch."""
        model = self.frozen if (self.frozen is not None and (key == "ref_logprobs" or self.config.trainer.teacher == "initial")) else self.model
        collected: list[torch.Tensor] = []

        def keep(batch: dict, logprobs: torch.Tensor):
            collected.append(logprobs.detach())
            return logprobs.new_zeros(()), {}

        swapped = [dict(b, input_ids=b[input_key]) for b in batches]
        self._run(model, swapped, keep, forward_only=True)
        for batch, logprobs in zip(batches, collected):  # only the last stage computes losses
            batch[key] = logprobs

    # ---- the step ------------------------------------------------------------------------------

    def train_step(self, samples: Sequence[Any]) -> dict[str, float]:
        """Advantages over all ``samples``, then one optimiser step per ``micro_batch_size * grad_accum *
        DP`` samples (as in the torch trainer); every rank passes the same list and takes its DP share."""
        from clawgym.rl.trainer.samples import sample_advantages, validate_samples

        tcfg = self.config.trainer
        validate_samples(samples, self.shape.vocab_size, tcfg.method)
        if len(samples) < self.dp_size:
            raise ValueError(f"{len(samples)} samples cannot feed {self.dp_size} data-parallel ranks")
        adv_rl = sample_advantages(samples, tcfg.advantage)  # over the whole batch, before any split
        per_step = tcfg.micro_batch_size * tcfg.grad_accum * self.dp_size
        starts = list(range(0, len(samples), per_step))
        if len(starts) > 1 and len(samples) - starts[-1] < self.dp_size:
            starts.pop()  # a last chunk too small for every DP rank joins the one before
        bounds = list(zip(starts, starts[1:] + [len(samples)]))
        totals: dict[str, float] = {}
        for lo, hi in bounds:
            for key, value in self._optimizer_step(samples[lo:hi], adv_rl[lo:hi]).items():
                totals[key] = totals.get(key, 0.0) + value
        self.version += 1
        metrics = {key: value / len(bounds) for key, value in totals.items()}
        metrics.update(step=float(self.step), version=float(self.version), samples=float(len(samples)),
                       optimizer_steps=float(len(bounds)))
        return metrics

    def _optimizer_step(self, samples: Sequence[Any], adv_rl: torch.Tensor) -> dict[str, float]:
        from clawgym.rl import losses
        from clawgym.rl.trainer.samples import teacher_prompt_ids

        tcfg = self.config.trainer
        mine = list(range(self.dp_rank, len(samples), self.dp_size))
        local = [samples[i] for i in mine]
        width = max(len(s.prompt_ids) + len(s.response_ids) for s in samples)
        extra: dict[str, list[torch.Tensor]] = {"rl_adv": [torch.full((len(s.response_ids),), float(adv_rl[i])) for i, s in zip(mine, local)]}
        if tcfg.method in ("opd", "hybrid"):
            teacher_ids = [teacher_prompt_ids(self.tokenizer, s) if s.hint else s.prompt_ids for s in local]
            width = max(width, max(len(t) + len(s.response_ids) for t, s in zip(teacher_ids, local)))
        batches = self._micro_batches(local, extra, width)
        if tcfg.method in ("opd", "hybrid"):
            self._add_teacher_inputs(batches, local, teacher_ids, width)
            self._frozen_logprobs(batches, "teacher_positions_logprobs", input_key="teacher_input_ids")
            for batch in batches:
                if "teacher_positions_logprobs" in batch:
                    batch["teacher_logprobs"] = _realign(batch["teacher_positions_logprobs"], batch["teacher_src"], batch["old_logprobs"])
        if tcfg.kl_coef > 0:
            self._frozen_logprobs(batches, "ref_logprobs")

        counts = torch.tensor([sum(sum(s.loss_mask) for s in local), sum(1 for s in local if sum(s.loss_mask) > 0)], dtype=torch.float64, device=self.device)
        torch.distributed.all_reduce(counts, group=self.ps.get_data_parallel_group())
        num_tokens, num_sequences = float(counts[0]), float(counts[1])
        scale = len(batches) * self.dp_size  # undo the schedule's 1/num_microbatches and DDP's 1/dp averaging

        def loss_fn(batch: dict, logprobs: torch.Tensor):
            mask, old = batch["loss_mask"], batch["old_logprobs"]
            if tcfg.method == "grpo":
                advantages = batch["rl_adv"]
            elif tcfg.method == "opd":
                advantages = losses.opd_advantages(batch["teacher_logprobs"], old)
            else:
                advantages = losses.hybrid_advantages(batch["rl_adv"], batch["teacher_logprobs"], old, tcfg.w_rl, tcfg.w_opd)
            pg, clipped = losses.ppo_clip_loss(logprobs, old, advantages, tcfg.eps_clip, tcfg.eps_clip_high)
            per_token = pg
            kl_value = logprobs.new_zeros(())
            if tcfg.kl_coef > 0:
                kl = losses.kl_k3(logprobs, batch["ref_logprobs"])
                per_token = per_token + tcfg.kl_coef * kl
                kl_value = losses.token_mean(kl.detach(), mask, num_tokens)
            loss = losses.aggregate(per_token, mask, tcfg.aggregation, num_tokens, num_sequences)
            report = {
                "loss": loss.detach().clone(),
                "kl": kl_value,
                "clipped": (clipped * mask).sum().detach() / max(num_tokens, 1.0),
            }
            return loss * scale, report

        self.model.zero_grad_buffer()
        self.optimizer.zero_grad()
        reports = self._run(self.model, batches, loss_fn, forward_only=False)
        success, grad_norm, _ = self.optimizer.step()
        if success:
            self.step += 1
        metrics = {"grad_norm": float(grad_norm) if grad_norm is not None else float("nan"), "skipped": float(not success)}
        if reports:  # last pipeline stage
            for key in ("loss", "kl", "clipped"):
                value = torch.stack([r[key].float() for r in reports]).sum()
                torch.distributed.all_reduce(value, group=self.ps.get_data_parallel_group())
                metrics["clip_frac" if key == "clipped" else key] = float(value)
        return metrics

    def _add_teacher_inputs(self, batches: list[dict], local: Sequence[Any], teacher_ids: Sequence[list[int]], width: int) -> None:
        mbs = self.config.trainer.micro_batch_size
        for b, start in enumerate(range(0, len(local), mbs)):
            ids = torch.full((mbs, width), int(self.tokenizer.pad_token_id or 0), dtype=torch.long)
            src = torch.zeros((mbs, width), dtype=torch.long)  # teacher position feeding each student position
            has = torch.zeros((mbs, width), dtype=torch.float32)
            for row, i in enumerate(range(start, min(start + mbs, len(local)))):
                s, t = local[i], teacher_ids[i]
                ids[row, : len(t) + len(s.response_ids)] = torch.tensor(t + s.response_ids)
                n_r = len(s.response_ids)
                src[row, len(s.prompt_ids) - 1 : len(s.prompt_ids) - 1 + n_r] = torch.arange(len(t) - 1, len(t) - 1 + n_r)
                has[row, len(s.prompt_ids) - 1 : len(s.prompt_ids) - 1 + n_r] = 1.0 if s.hint else 0.0
            batches[b]["teacher_input_ids"] = ids.to(self.device)
            batches[b]["teacher_src"] = torch.stack([src, has.long()]).to(self.device)

    # ---- export and checkpoints --------------------------------------------------------------------

    @torch.no_grad()
    def iter_export(self) -> Iterator[tuple[str, torch.Tensor]]:
        """HF ``(name, full tensor)`` pairs, one parameter at a time, on global rank 0 (every rank must iterate).

        TP shards meet by ``all_gather`` of tensors inside the TP group; a later pipeline stage sends each
        merged tensor to rank 0 by ``broadcast`` over the pipeline group. Only names and shapes travel as
        Python objects (once per stage), so no rank ever pickles the model.
        """
        dist, ps = torch.distributed, self.ps
        if self.dp_rank != 0:  # data-parallel replicas hold the same weights: the first one sends
            return
        tp_group, pp_group = ps.get_tensor_model_parallel_group(), ps.get_pipeline_model_parallel_group()
        pp_ranks = dist.get_process_group_ranks(pp_group)
        local = {k: v for k, v in self.model.module.state_dict().items() if not k.endswith("_extra_state")}
        te = self.config.transformer_engine
        for stage in range(self.pp_size):
            meta = [[(k, tuple(v.shape), v.dtype) for k, v in local.items()] if self.pp_rank == stage else None]
            if self.pp_size > 1:
                dist.broadcast_object_list(meta, src=pp_ranks[stage], group=pp_group)
            for name, shard_shape, dtype in meta[0]:
                full = None
                if self.pp_rank == stage:
                    shard = local[name].detach().contiguous()
                    parts = [shard]
                    if self.tp_size > 1:
                        parts = [torch.empty_like(shard) for _ in range(self.tp_size)]
                        dist.all_gather(parts, shard, group=tp_group)
                    full = tp_merge(name, parts)
                if self.tp_rank != 0:
                    continue
                if stage > 0:
                    if full is None:
                        merged_shape = tp_merged_shape(name, shard_shape, self.tp_size)
                        full = torch.empty(merged_shape, dtype=dtype, device=self.device)
                    dist.broadcast(full, src=pp_ranks[stage], group=pp_group)
                if self.pp_rank == 0:
                    global_name = next(iter(pp_to_global({name: full}, self.shape.num_layers, stage, self.pp_size)))
                    yield from megatron_tensor_to_hf(global_name, full, self.shape, te_spec=te)

    # Where export_weights puts the merged tensors: host fp32 by default; the builder keeps them on the GPU in
    # bf16 when SGLang takes them from there (tensor / NCCL transports).
    export_device: str | torch.device = "cpu"
    export_dtype: torch.dtype = torch.float32

    def export_weights(self) -> dict[str, torch.Tensor] | None:
        """The full HF state dict on global rank 0 (None elsewhere), built by :meth:`iter_export`."""
        weights = {}
        for name, tensor in self.iter_export():  # tied: the last stage's output_layer copy is the same tensor
            weights.setdefault(name, tensor.to(device=self.export_device, dtype=self.export_dtype))
        return weights if torch.distributed.get_rank() == 0 else None

    def save_checkpoint(self, path: str | Path) -> None:
        """megatron dist-checkpoint of model + optimizer, written to a temp dir and renamed by rank 0."""
        from megatron.core import dist_checkpointing

        from clawgym.rl.trainer import checkpoint as ckpt

        target = Path(path).absolute()
        tmp = target.parent / f".{target.name}.tmp-step{self.step}"
        if torch.distributed.get_rank() == 0:
            tmp.mkdir(parents=True, exist_ok=True)
        torch.distributed.barrier()
        model_sd = self.model.module.sharded_state_dict()
        state = {"model": model_sd, "optimizer": self.optimizer.sharded_state_dict(model_sd)}
        dist_checkpointing.save(state, str(tmp))
        torch.distributed.barrier()
        if torch.distributed.get_rank() == 0:
            ckpt.write_json(tmp / "trainer_state.json", {"step": self.step, "version": self.version,
                                                          "config": dataclasses.asdict(self.config)})
            (tmp / ckpt.COMPLETE_MARKER).write_text("ok\n")
            old = target.parent / f".{target.name}.old-step{self.step}"
            if target.exists():
                os.rename(target, old)
            os.rename(tmp, target)
            import shutil

            shutil.rmtree(old, ignore_errors=True)
        torch.distributed.barrier()

    def load_checkpoint(self, path: str | Path) -> None:
        from megatron.core import dist_checkpointing

        from clawgym.rl.trainer import checkpoint as ckpt

        directory = ckpt.resolve(path)
        model_sd = self.model.module.sharded_state_dict()
        state = {"model": model_sd, "optimizer": self.optimizer.sharded_state_dict(model_sd, is_loading=True)}
        loaded = dist_checkpointing.load(state, str(directory))
        self.model.module.load_state_dict(loaded["model"])
        self.optimizer.load_state_dict(loaded["optimizer"])
        meta = ckpt.read_json(directory / "trainer_state.json")
        self.step, self.version = int(meta["step"]), int(meta["version"])


def _realign(teacher_positions: torch.Tensor, src: torch.Tensor, old: torch.Tensor) -> torch.Tensor:
    """Move teacher logprobs (indexed by hinted-prompt positions) onto the student's positions.

    Samples without a hint get teacher := old (no OPD term), as in the torch trainer.
    """
    index, has = src[0], src[1].to(old.dtype)
    moved = teacher_positions.gather(1, index)
    return has * moved + (1.0 - has) * old


# ============================================================================================
# Launcher entry point: torchrun --nproc-per-node N -m clawgym.rl.trainer.megatron ...
# ============================================================================================


def main(argv: Sequence[str] | None = None) -> int:
    """Train on a JSONL of Samples; exports HF weights (rank 0) and a dist checkpoint at the end."""
    from clawgym.rl.trainer.torch_trainer import TrainerConfig
    from clawgym.rl.types import Sample, read_jsonl

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--hf-model", required=True, help="HF checkpoint directory (Llama / Qwen2 family)")
    parser.add_argument("--samples", required=True, help="JSONL of clawgym Sample records")
    parser.add_argument("--tp", type=int, default=1)
    parser.add_argument("--pp", type=int, default=1)
    parser.add_argument("--method", default="grpo", choices=["grpo", "binary", "opd", "hybrid"])
    parser.add_argument("--advantage", default="grpo", choices=["grpo", "raw"])
    parser.add_argument("--lr", type=float, default=1e-6)
    parser.add_argument("--kl-coef", type=float, default=0.0)
    parser.add_argument("--micro-batch-size", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=16, help="samples per optimiser step (all DP ranks)")
    parser.add_argument("--te", action="store_true", help="use the Transformer Engine layer spec")
    parser.add_argument("--save", default=None, help="dist checkpoint directory")
    parser.add_argument("--export", default=None, help="write the trained HF weights (safetensors) here, rank 0")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)

    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(args.hf_model)
    trainer_cfg = TrainerConfig(method=args.method, advantage=args.advantage, lr=args.lr, kl_coef=args.kl_coef,
                                micro_batch_size=args.micro_batch_size)
    trainer = MegatronTrainer(args.hf_model, tokenizer, MegatronConfig(tensor_parallel=args.tp, pipeline_parallel=args.pp,
                                                                       transformer_engine=args.te, trainer=trainer_cfg))
    samples = [s for s in read_jsonl(args.samples, Sample)]
    for start in range(0, len(samples), args.batch_size):
        metrics = trainer.train_step(samples[start : start + args.batch_size])
        if torch.distributed.get_rank() == 0:
            logger.info("step %d: %s", trainer.step, metrics)
    if args.save:
        trainer.save_checkpoint(args.save)
    weights = trainer.export_weights()
    if weights is not None and args.export:
        from safetensors.torch import save_file

        Path(args.export).mkdir(parents=True, exist_ok=True)
        save_file({k: v.contiguous() for k, v in weights.items() if k != "lm_head.weight" or not trainer.shape.tie_embeddings},
                  str(Path(args.export) / "model.safetensors"))
        trainer.hf_config.save_pretrained(args.export)  # a loadable HF checkpoint directory
        tokenizer.save_pretrained(args.export)
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
