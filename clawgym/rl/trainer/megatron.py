"""The megatron trainer: the same losses on megatron-core (GPTModel, TP/PP, distributed optimizer), full or LoRA.

**MegatronTrainer**: started under ``torchrun`` on a GPU partition (``python -m
   clawgym.rl.trainer.megatron_cli --help``). Each rank builds its TP/PP shard of a GPTModel, loads its
   slice of the HF weights, optionally freezes it and adds LoRA adapters
   (:mod:`clawgym.rl.trainer.megatron_lora`), wraps it in megatron's DDP with the distributed optimizer,
   and trains with the pipeline schedule from ``get_forward_backward_func``. Log-probs come from
   ``vocab_parallel_cross_entropy`` over vocab-parallel logits. Losses are normalised by the global
   totals of the step (all DP ranks), as in the torch trainer. Not supported here yet: the ``opd_topk``
   method (full-vocabulary teacher logits would need a vocab-parallel top-K).

   Tested on CPU (gloo, with megatron-core's few hard-coded CUDA tensors redirected in the test
   processes only): in float64, a step equals the torch trainer's step (loss, grads, weights) to 1e-6
   for TP=2, PP=2 and DP=2, with and without LoRA (the gaps measured: docs/scaling.md). The
   dist-checkpoint writer is CUDA-only and runs only on a GPU.

Module map: conversion :mod:`~clawgym.rl.trainer.megatron_convert`, set-up
:mod:`~clawgym.rl.trainer.megatron_setup`, micro-batches and schedule
:mod:`~clawgym.rl.trainer.megatron_batches`, export and checkpoints
:mod:`~clawgym.rl.trainer.megatron_export`, command line :mod:`~clawgym.rl.trainer.megatron_cli`.
"""


from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from clawgym.rl.trainer import megatron_export as export
from clawgym.rl.trainer.lora import write_peft_adapters
from clawgym.rl.trainer.megatron_batches import add_teacher_inputs, micro_batches, realign, run_schedule
from clawgym.rl.trainer.megatron_convert import (  # noqa: F401  (re-exported)
    ModelShape,
    fuse_gate_up,
    fuse_qkv,
    hf_to_megatron,
    megatron_tensor_to_hf,
    megatron_to_hf,
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
from clawgym.rl.trainer.megatron_lora import adapter_local_state, adapters_disabled, attach_lora, merged_local_state
from clawgym.rl.trainer.megatron_setup import (  # noqa: F401  (re-exported)
    MegatronConfig,
    _load_hf_state_dict,
    _rope_base,
    initialize_distributed,
    megatron_available,
    transformer_config_from_hf,
)

if TYPE_CHECKING:
    from megatron.core.transformer.spec_utils import ModuleSpec
    from transformers import PreTrainedTokenizerBase

    from clawgym.rl.types import Sample

logger = logging.getLogger(__name__)


class MegatronTrainer:
    """Trains an HF Llama/Qwen2 checkpoint with megatron-core; one instance per torchrun rank."""

    def __init__(self, hf_model_dir: str | Path, tokenizer: PreTrainedTokenizerBase,
                 config: MegatronConfig | None = None) -> None:
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
        initialize_distributed(self.config.tensor_parallel, self.config.pipeline_parallel,
                               self.config.seed, self.config.device)
        self.ps = ps
        self.tp_rank, self.tp_size = ps.get_tensor_model_parallel_rank(), ps.get_tensor_model_parallel_world_size()
        self.pp_rank, self.pp_size = ps.get_pipeline_model_parallel_rank(), ps.get_pipeline_model_parallel_world_size()
        self.dp_rank, self.dp_size = ps.get_data_parallel_rank(), ps.get_data_parallel_world_size()
        self.padded_vocab = padded_vocab_size(self.shape.vocab_size,
                                              self.config.make_vocab_size_divisible_by, self.tp_size)
        self.tf_config = transformer_config_from_hf(self.hf_config, self.config)
        self.step = 0
        self.version = 0

        self.pad_id = int(getattr(tokenizer, "pad_token_id", None) or 0) if tokenizer is not None else 0
        hf_state = _load_hf_state_dict(Path(hf_model_dir))
        self.model = self._build_and_load(hf_state, trainable=True)
        tcfg = self.config.trainer
        self.lora = None  # local adapter name -> LoraAdapter; the base is frozen when set
        if tcfg.lora is not None:
            offset = pp_layer_range(self.shape.num_layers, self.pp_rank, self.pp_size).start
            self.lora = attach_lora(self.model, tcfg.lora, self.shape, self.tp_rank, self.tp_size, offset, tcfg.seed)
        needs_frozen = self.lora is None and (tcfg.kl_coef > 0 or tcfg.method in ("opd", "hybrid"))
        # the initial weights serve as OPD teacher and KL reference ("current" reuses the policy); under
        # LoRA they are the base with its adapters switched off, so no second copy is built
        self.frozen = self._build_and_load(hf_state, trainable=False) if needs_frozen else None
        del hf_state
        self._wrap_ddp_and_optimizer()

    # ---- construction --------------------------------------------------------------------------

    def _layer_spec(self) -> ModuleSpec:
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
        ).to(self.device, self.config.params_dtype)  # norms are built in the default dtype: cast them too
        full = hf_to_megatron(hf_state, self.shape, te_spec=self.config.transformer_engine,
                              padded_vocab=self.padded_vocab)
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
        from megatron.core.distributed import (
            DistributedDataParallel,
            DistributedDataParallelConfig,
            finalize_model_grads,
        )
        from megatron.core.optimizer import OptimizerConfig, get_megatron_optimizer

        tcfg = self.config.trainer
        ddp_config = DistributedDataParallelConfig(
            grad_reduce_in_fp32=self.config.bf16,  # fp32 / fp64 params reduce grads in their own dtype
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
            params_dtype=self.config.params_dtype,
            use_distributed_optimizer=self.config.use_distributed_optimizer,
        )
        self.optimizer = get_megatron_optimizer(opt_config, [self.model])

    @torch.no_grad()
    def _frozen_logprobs(self, batches: list[dict], key: str, input_key: str = "input_ids") -> None:
        """Forward-only pass of the initial (or current) weights; stores per-token logprobs in each batch."""
        initial = key == "ref_logprobs" or self.config.trainer.teacher == "initial"
        model, context = self.model, nullcontext()
        if initial and self.frozen is not None:
            model = self.frozen
        elif initial and self.lora is not None:
            context = adapters_disabled(self.lora)
        collected: list[torch.Tensor] = []

        def keep(batch: dict, logprobs: torch.Tensor):
            collected.append(logprobs.detach())
            return logprobs.new_zeros(()), {}

        swapped = [dict(b, input_ids=b[input_key]) for b in batches]
        with context:
            run_schedule(model, swapped, keep, forward_only=True, temperature=self.config.trainer.temperature)
        for batch, logprobs in zip(batches, collected):  # only the last stage computes losses
            batch[key] = logprobs

    # ---- the step ------------------------------------------------------------------------------

    def train_step(self, samples: Sequence[Sample], method: str | None = None) -> dict[str, float]:
        """Advantages over all ``samples``, then one optimiser step per ``micro_batch_size * grad_accum *
        DP`` samples (as in the torch trainer); every rank passes the same list and takes its DP share.
        ``method`` overrides the configured one for this step (``"sft"``: the warm start)."""
        from clawgym.rl.trainer.samples import sample_advantages, validate_samples

        tcfg = self.config.trainer
        method = method or tcfg.method
        validate_samples(samples, self.shape.vocab_size, method)
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
            for key, value in self._optimizer_step(samples[lo:hi], adv_rl[lo:hi], method).items():
                totals[key] = totals.get(key, 0.0) + value
        self.version += 1
        metrics = {key: value / len(bounds) for key, value in totals.items()}
        metrics.update(step=float(self.step), version=float(self.version), samples=float(len(samples)),
                       optimizer_steps=float(len(bounds)))
        return metrics

    def _optimizer_step(self, samples: Sequence[Sample], adv_rl: torch.Tensor, method: str) -> dict[str, float]:
        from clawgym.rl import losses
        from clawgym.rl.trainer.samples import teacher_prompt_ids

        tcfg = self.config.trainer
        mine = list(range(self.dp_rank, len(samples), self.dp_size))
        local = [samples[i] for i in mine]
        width = max(len(s.prompt_ids) + len(s.response_ids) for s in samples)
        extra: dict[str, list[torch.Tensor]] = {
            "rl_adv": [torch.full((len(s.response_ids),), float(adv_rl[i])) for i, s in zip(mine, local)],
            "off_policy": [torch.full((len(s.response_ids),), float(s.off_policy)) for s in local]}
        if method in ("opd", "hybrid"):
            teacher_ids = [teacher_prompt_ids(self.tokenizer, s, tcfg.hint_format)
                           if s.hint else s.prompt_ids for s in local]
            width = max(width, max(len(t) + len(s.response_ids) for t, s in zip(teacher_ids, local)))
        logprob_dtype = torch.promote_types(self.config.params_dtype, torch.float32)  # logits are upcast before the CE
        batches = micro_batches(local, extra, width, tcfg.micro_batch_size, self.pad_id, self.device, logprob_dtype)
        if method in ("opd", "hybrid"):
            add_teacher_inputs(batches, local, teacher_ids, width, tcfg.micro_batch_size, self.pad_id, self.device)
            self._frozen_logprobs(batches, "teacher_positions_logprobs", input_key="teacher_input_ids")
            for batch in batches:
                if "teacher_positions_logprobs" in batch:
                    batch["teacher_logprobs"] = realign(batch["teacher_positions_logprobs"],
                                                        batch["teacher_src"], batch["old_logprobs"])
        if tcfg.kl_coef > 0:
            self._frozen_logprobs(batches, "ref_logprobs")

        counts = torch.tensor([sum(sum(s.loss_mask) for s in local), sum(1 for s in local if sum(s.loss_mask) > 0)],
                              dtype=torch.float64, device=self.device)
        torch.distributed.all_reduce(counts, group=self.ps.get_data_parallel_group())
        num_tokens, num_sequences = float(counts[0]), float(counts[1])
        scale = len(batches) * self.dp_size  # undo the schedule's 1/num_microbatches and DDP's 1/dp averaging

        def loss_fn(batch: dict, logprobs: torch.Tensor):
            mask, old = batch["loss_mask"], batch["old_logprobs"]
            # a response sampled from another prompt: this policy's own logprobs are the old ones
            old = torch.where(batch["off_policy"] > 0, logprobs.detach(), old)
            if method == "sft":  # demonstrations: -log pi, nothing clipped
                pg, clipped = losses.nll(logprobs), torch.zeros_like(logprobs)
            else:
                if method == "grpo":
                    advantages = batch["rl_adv"]
                elif method == "opd":
                    advantages = losses.opd_advantages(batch["teacher_logprobs"], old)
                else:
                    advantages = losses.hybrid_advantages(batch["rl_adv"], batch["teacher_logprobs"],
                                                          old, tcfg.w_rl, tcfg.w_opd)
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
        reports = run_schedule(self.model, batches, loss_fn, forward_only=False, temperature=tcfg.temperature)
        success, grad_norm, _ = self.optimizer.step()
        if success:
            self.step += 1
        metrics = {"grad_norm": float(grad_norm) if grad_norm is not None else float("nan"),
                   "skipped": float(not success)}
        keys = ("loss", "kl", "clipped")
        values = torch.zeros(len(keys), dtype=torch.float64, device=self.device)
        if reports:  # only the last pipeline stage computes losses
            values = torch.stack([torch.stack([r[key].double() for r in reports]).sum() for key in keys])
            torch.distributed.all_reduce(values, group=self.ps.get_data_parallel_group())
        if self.pp_size > 1:  # every rank reports the step's loss (rank 0, which logs, is on the first stage)
            torch.distributed.broadcast(values, src=self.ps.get_pipeline_model_parallel_last_rank(),
                                        group=self.ps.get_pipeline_model_parallel_group())
        metrics.update({"clip_frac" if key == "clipped" else key: float(v) for key, v in zip(keys, values)})
        return metrics

    # ---- export and checkpoints --------------------------------------------------------------------

    def iter_export(self) -> Iterator[tuple[str, torch.Tensor]]:
        """HF ``(name, full tensor)`` pairs of the policy (LoRA merged in), one at a time, on global rank 0;
        every rank must iterate (see :func:`~clawgym.rl.trainer.megatron_export.stream_to_rank0`)."""
        module = self.model.module
        if self.lora is None:
            local = {k: v for k, v in module.state_dict().items() if not k.endswith("_extra_state")}
        else:
            local = merged_local_state(module, self.lora)
        yield from export.iter_hf_tensors(self, local)

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

    def export_adapters(self) -> dict[str, torch.Tensor] | None:
        """The whole LoRA adapters in peft names (``...q_proj.lora_A.weight``) on global rank 0, None elsewhere."""
        if self.lora is None:
            raise ValueError("this trainer trains full weights: there are no adapters to export")
        out = {name: t.to("cpu", torch.float32)
               for name, t in export.iter_adapter_tensors(self, adapter_local_state(self.lora))}
        return out if torch.distributed.get_rank() == 0 else None

    def save_adapters(self, directory: str | Path, base_model: str = "") -> None:
        """A peft adapter directory (``adapter_model.safetensors`` + ``adapter_config.json``), written by rank 0."""
        adapters = self.export_adapters()
        if adapters is not None:
            write_peft_adapters(directory, adapters, self.config.trainer.lora, base_model)

    def load_adapters(self, state: Mapping[str, torch.Tensor]) -> None:
        """Whole peft-named adapter tensors (e.g. a torch trainer's, or :meth:`export_adapters`) into this rank's
        shards."""
        from clawgym.rl.trainer.megatron_lora import load_peft_adapters

        if self.lora is None:
            raise ValueError("this trainer trains full weights: build it with TrainerConfig(lora=...) to load adapters")
        offset = pp_layer_range(self.shape.num_layers, self.pp_rank, self.pp_size).start
        load_peft_adapters(self.lora, state, self.tp_rank, self.tp_size, offset)
        reload = getattr(self.optimizer, "reload_model_params", None)  # bf16: refresh the fp32 main copies too
        if reload is not None:
            reload()

    def export_grads(self) -> dict[str, torch.Tensor] | None:
        """The reduced grads of the last optimiser step, as it used them (after clipping), in HF/peft names, on rank 0.

        Exists so tests (and debugging) can compare grads tensor by tensor with the torch trainer.
        """
        if self.config.use_distributed_optimizer and self.dp_size > 1:
            raise ValueError("with the distributed optimizer each data-parallel rank holds only "
                             "its shard of the reduced "
                             "grads: export_grads needs use_distributed_optimizer=False or DP=1")
        base, adapters = export.local_grads(self)
        def host(tensor: torch.Tensor) -> torch.Tensor:  # bf16 -> fp32; fp32 and fp64 kept as they are
            return tensor.to("cpu", torch.promote_types(tensor.dtype, torch.float32))

        out = {k: host(v) for k, v in export.iter_hf_tensors(self, base)} if base else {}
        if adapters:
            out.update({k: host(v) for k, v in export.iter_adapter_tensors(self, adapters)})
        return out if torch.distributed.get_rank() == 0 else None

    def save_checkpoint(self, path: str | Path) -> None:
        export.save_dist_checkpoint(self, path)

    def load_checkpoint(self, path: str | Path) -> None:
        export.load_dist_checkpoint(self, path)
