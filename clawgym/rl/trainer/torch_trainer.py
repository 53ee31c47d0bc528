"""The torch trainer: an HF causal LM (full or LoRA via peft) on CPU or one GPU, trained on Samples.

One ``train_step(samples)`` = advantages over the whole batch, then one AdamW step per
``micro_batch_size * grad_accum`` samples, each accumulated over micro-batches. Batches are
**right-padded with an attention mask** (no packing: HF's sdpa/eager attention would let packed
sequences see each other). Logits are computed only at response positions (decoder hidden states
gathered there, then the LM head), so long agent prompts cost no ``[L, V]`` logits.

Every loss is normalised by the totals of the optimiser step (tokens for ``aggregation="token"``,
sequences for ``"sequence"``), so splitting a step into micro-batches changes nothing but memory. With
``shared_prefix`` (default) a step is split by prompt, so a GRPO group's prompt runs once
(:func:`~clawgym.rl.trainer.batching.response_logits`); with ``gradient_checkpointing``, a micro-batch of at
most ``checkpoint_above_tokens`` forwarded tokens is not checkpointed.

Methods (``TrainerConfig.method``):

- ``grpo`` (alias ``binary``): A = GRPO-normalised or raw reward (``Sample.advantage`` wins when set), PPO-clip.
- ``opd``: A_t = log pi_teacher(a_t | s + hint) - log pi_old(a_t | s), PPO-clip. Every sample needs
  a hint (or precomputed ``teacher_logprobs``).
- ``hybrid``: A_t = w_rl * A + w_opd * (teacher - old); samples without a hint get no teacher term
  (teacher := old), unlike OpenClaw-RL's Megatron path where they got a spurious (initial - current) term.
- ``opd_topk``: w_opd * top-K reverse KL to the hinted teacher + w_rl * PPO-clip on A.
- ``sft``: -log pi on the loss-masked tokens (demonstrations: the warm start before RL). ``train_step(samples,
  method="sft")`` takes one such step in a run whose configured method is another: same model and optimiser.

The reference (k3 KL) and, by default, the OPD teacher are the *initial* weights: the base model with
adapters disabled under LoRA, else a frozen copy made at construction. ``teacher="policy"`` uses the
current weights (no grad); ``teacher="judge"`` a separate ``teacher_model`` (the judge's, same tokenizer).
"""

from __future__ import annotations

import copy
import logging
import math
import time
from collections.abc import Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import torch
from torch import nn

from clawgym.rl import losses
from clawgym.rl.trainer import checkpoint as ckpt
from clawgym.rl.trainer.batching import (
    Batch,
    checkpointing_off,
    collate,
    forwarded_tokens,
    gather_logprobs,
    micro_batches,
    pad_rows,
    response_logits,
    trained_micro_batches,
    uses_frozen_prompt,
)
from clawgym.rl.trainer.config import (  # noqa: F401  (re-exported: importers of the trainer's config)
    LoraSettings,
    TrainerConfig,
)
from clawgym.rl.trainer.frozen_prompt import PromptKV, token_counts
from clawgym.rl.trainer.lora import merged_lora_state_dict, wrap_lora
from clawgym.rl.trainer.samples import (  # noqa: F401  (re-exported: the trainers' shared sample code)
    HINT_HEADER,
    hinted_messages,
    render_prompt_ids,
    sample_advantages,
    teacher_prompt_ids,
    validate_samples,
)
from clawgym.rl.types import Sample

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

_collate = collate  # the name megatron's equivalence test script imports from here


def token_ids(tokenizer: PreTrainedTokenizerBase, tokens: Sequence[str]) -> list[int]:
    """The vocabulary ids of the ``tokens`` that are single tokens of this tokenizer. One that is not (SmolLM2
    spells ``<tool_call>`` in ordinary, trained tokens) has no row of its own to train: skipped, and said so."""
    ids = []
    for token in tokens:
        encoded = tokenizer.encode(token, add_special_tokens=False)
        if len(encoded) == 1:
            ids.append(int(encoded[0]))
        else:
            logging.getLogger(__name__).warning("trainer.lora.trainable_tokens: %r is %d tokens of this tokenizer, "
                                                "not one; its rows are not trained", token, len(encoded))
    return ids


logger = logging.getLogger(__name__)


# --------------------------------------------------------------------------------------------
# The trainer
# --------------------------------------------------------------------------------------------


class TorchTrainer:
    """Trains ``model`` (which it owns from now on) on judged Samples; see the module docstring."""

    def __init__(self, model: nn.Module, tokenizer: PreTrainedTokenizerBase, config: TrainerConfig | None = None,
                 teacher_model: nn.Module | None = None) -> None:
        self.config = config or TrainerConfig()
        self.teacher_model = teacher_model  # teacher="judge": the judge's frozen model (may be set after construction)
        self.tokenizer = tokenizer
        self.device = next(model.parameters()).device
        self.step = 0  # optimiser steps taken
        self.version = 0  # train_step calls (one weight publication each)
        pad = getattr(tokenizer, "pad_token_id", None)
        self.pad_id = int(pad if pad is not None else (getattr(tokenizer, "eos_token_id", None) or 0))
        self.vocab_size = int(model.get_input_embeddings().weight.shape[0])
        # long prompt beginnings run without gradients, once per set of weights (frozen_prompt.py): the trained
        # weights' (cleared when they change), the initial weights' and the judge's (kept)
        above = self.config.frozen_prompt_above
        self._policy_kv, self._initial_kv, self._judge_kv = (PromptKV(above) if above else None for _ in range(3))

        needs_frozen = self.config.teacher == "initial" and (
            self.config.kl_coef > 0 or self.config.method in ("opd", "hybrid", "opd_topk")
        )
        self._frozen: nn.Module | None = None
        if self.config.lora is None:
            if needs_frozen or self.config.kl_coef > 0 or self.config.monitor_kl:
                self._frozen = copy.deepcopy(model).eval().requires_grad_(False)
            self.model = model
        else:
            self.model = wrap_lora(model, self.config.lora, self.config.seed,
                                   token_ids(tokenizer, self.config.lora.trainable_tokens))
        if self.config.gradient_checkpointing:
            # transformers 5 renamed it (the old name warns and goes in v6); >=4.45 has only the old one
            enable = (getattr(self.model, "activation_checkpointing_enable", None)
                      or self.model.gradient_checkpointing_enable)
            enable()
            if self.config.lora is not None:
                self.model.enable_input_require_grads()
        self.model.train()
        params = [p for p in self.model.parameters() if p.requires_grad]
        if not params:
            raise ValueError("the model has no trainable parameters")
        self.optimizer = torch.optim.AdamW(
            params, lr=self.config.lr, betas=self.config.betas, weight_decay=self.config.weight_decay
        )

    # ---- setup ---------------------------------------------------------------------------------

    @contextmanager
    def _initial_weights(self) -> Iterator[nn.Module]:
        """The frozen initial model: adapters disabled (LoRA) or the copy made at construction."""
        if self.config.lora is not None:
            with self.model.disable_adapter():
                yield self.model
        else:
            if self._frozen is None:
                raise RuntimeError("no frozen copy of the initial weights was kept")
            yield self._frozen

    def _teacher_kv(self) -> PromptKV | None:
        return {"initial": self._initial_kv, "policy": self._policy_kv}.get(self.config.teacher, self._judge_kv)

    def _teacher(self):
        if self.config.teacher == "initial":
            return self._initial_weights()
        if self.config.teacher == "policy":
            return nullcontext(self.model)
        if self.teacher_model is None:
            raise RuntimeError("teacher='judge' but no teacher_model (the judge's model) was given")
        return nullcontext(self.teacher_model)

    # ---- advantages ----------------------------------------------------------------------------

    def rl_advantages(self, samples: Sequence[Sample]) -> torch.Tensor:
        return sample_advantages(samples, self.config.advantage)

    @torch.no_grad()
    def compute_teacher_logprobs(self, samples: Sequence[Sample]) -> None:
        """Fill ``teacher_logprobs`` of hinted samples: log pi_teacher(response | hinted prompt)."""
        todo = [s for s in samples if s.teacher_logprobs is None and s.hint]
        hinted = [teacher_prompt_ids(self.tokenizer, s, self.config.hint_format) for s in todo]
        cfg = self.config
        with self._teacher() as teacher, checkpointing_off(teacher):  # no gradients: nothing to recompute
            for indices in micro_batches(hinted, cfg.micro_batch_size, cfg.shared_prefix):
                chunk = [todo[i] for i in indices]
                batch = collate([hinted[i] for i in indices], [s.response_ids for s in chunk], self.pad_id,
                                self.device)
                logits = response_logits(teacher, batch, cfg.temperature, cfg.shared_prefix, self._teacher_kv())
                logprobs = gather_logprobs(logits, batch.targets)
                for row, s in zip(logprobs.cpu(), chunk):
                    s.teacher_logprobs = row[: len(s.response_ids)].tolist()

    # ---- the step ------------------------------------------------------------------------------

    def train_step(self, samples: Sequence[Sample], method: str | None = None) -> dict[str, float]:
        """Advantages, then AdamW steps over ``micro_batch_size * grad_accum`` chunks; returns metrics.

        ``method`` (default: the configured one) is ``"sft"`` for the warm start's steps before RL."""
        method = method or self.config.method
        validate_samples(samples, self.vocab_size, method)
        cfg = self.config
        start_time = time.perf_counter()
        self.model.train()
        frozen_before = token_counts(self._policy_kv, self._initial_kv, self._judge_kv)
        if self._policy_kv is not None:
            self._policy_kv.clear()  # the weights may have been loaded since the last step
        if method in ("opd", "hybrid"):
            self.compute_teacher_logprobs(samples)
        rl_adv = self.rl_advantages(samples)
        per_step = cfg.micro_batch_size * cfg.grad_accum
        totals: dict[str, float] = {}
        tokens = 0
        for start in range(0, len(samples), per_step):
            chunk = list(range(start, min(start + per_step, len(samples))))
            metrics = self._optimizer_step([samples[i] for i in chunk], rl_adv[chunk], method)
            tokens += int(metrics.pop("tokens"))
            for key, value in metrics.items():
                totals[key] = totals.get(key, 0.0) + value
        n_steps = math.ceil(len(samples) / per_step)
        out = {key: value / n_steps for key, value in totals.items()}
        elapsed = time.perf_counter() - start_time
        self.version += 1
        staleness = [self.version - 1 - s.policy_version for s in samples]
        out.update(
            tokens=float(tokens),
            response_tokens=float(sum(sum(s.loss_mask) for s in samples)),
            samples=float(len(samples)),
            optimizer_steps=float(n_steps),
            step_time_s=elapsed,
            tokens_per_s=tokens / elapsed if elapsed > 0 else 0.0,
            reward_mean=float(sum(s.reward for s in samples) / len(samples)),
            advantage_mean=float(rl_adv.mean()),
            advantage_abs_mean=float(rl_adv.abs().mean()),
            staleness_mean=float(sum(staleness) / len(staleness)),
            staleness_max=float(max(staleness)),
            step=float(self.step),
            version=float(self.version),
            lr=float(cfg.lr),
        )
        if self._policy_kv is not None:  # prompt tokens run without gradients for this step, and served from cache
            now = token_counts(self._policy_kv, self._initial_kv, self._judge_kv)
            out.update(frozen_prompt_tokens=float(now[0] - frozen_before[0]),
                       frozen_prompt_reused_tokens=float(now[1] - frozen_before[1]))
        return out

    def _behavior(self, logprobs: torch.Tensor, sampled: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(the old logprobs of the PPO ratio, a per-token importance weight or None).

        ``none``: the sampler's logprobs are the old policy's (the sampler serves the trainer's weights).
        ``tis`` (truncated importance sampling; Yao et al. 2025, "Your efficient RL framework secretly
        brings you off-policy RL training"): when the sampler's weights are a rounding of the trainer's
        (``policy.quantize``), the trainer's own logprobs before the update are the old policy, and each
        token's advantage is weighted by ``min(pi_trainer / pi_sampler, tis_cap)``.
        """
        if self.config.behavior_correction == "none":
            return sampled, None
        old = logprobs.detach()
        return old, torch.exp(old - sampled).clamp(max=self.config.tis_cap)

    def _optimizer_step(self, samples: list[Sample], rl_adv: torch.Tensor, method: str) -> dict[str, float]:
        cfg = self.config
        masks = [torch.tensor(s.loss_mask, dtype=torch.float32) for s in samples]
        num_tokens = float(sum(m.sum() for m in masks))
        num_sequences = float(sum(1 for m in masks if m.sum() > 0))
        sums = dict(loss=0.0, pg_loss=0.0, kl=0.0, topk_kl=0.0, clipped=0.0, ratio=0.0,
                    opd_adv=0.0, abs_logprob_diff=0.0, nll=0.0, entropy=0.0)
        tokens = 0
        self.optimizer.zero_grad(set_to_none=True)
        for indices, batch in trained_micro_batches([s.prompt_ids for s in samples], [s.response_ids for s in samples],
                                                    cfg.micro_batch_size, cfg.shared_prefix, self.pad_id,
                                                    self.device, self._policy_kv):
            part = [samples[i] for i in indices]
            tokens += int(batch.attention_mask.sum())
            mask = pad_rows([s.loss_mask for s in part], batch.targets.shape[1], self.device)
            adv_rl = rl_adv[indices].to(self.device)
            with self._checkpointing_for(batch):
                self._micro_batch_loss(part, batch, mask, adv_rl, num_tokens, num_sequences, sums,
                                       method).backward()

        params = [p for group in self.optimizer.param_groups for p in group["params"]]
        grad_norm = float(torch.nn.utils.clip_grad_norm_(params,
                                                         cfg.max_grad_norm if cfg.max_grad_norm > 0 else float("inf")))
        skipped = not math.isfinite(grad_norm)
        if skipped:
            logger.warning("non-finite gradient norm at step %d; skipping the update", self.step)
            self.optimizer.zero_grad(set_to_none=True)
        else:
            self.optimizer.step()
            self.step += 1
            if self._policy_kv is not None:
                self._policy_kv.clear()
        denom = max(num_tokens, 1.0)
        return {
            "loss": sums["loss"],
            "pg_loss": sums["pg_loss"],
            "kl": sums["kl"],
            "topk_kl": sums["topk_kl"],
            "clip_frac": sums["clipped"] / denom,
            "ratio_mean": sums["ratio"] / denom,
            "opd_adv_mean": sums["opd_adv"] / denom,
            "abs_logprob_diff": sums["abs_logprob_diff"] / denom,
            "nll": sums["nll"] / denom,
            "entropy": sums["entropy"] / denom,
            "grad_norm": grad_norm,
            "skipped": float(skipped),
            "tokens": float(tokens),
        }

    def _micro_batch_loss(self, part: list[Sample], batch: Batch, mask: torch.Tensor, adv_rl: torch.Tensor,
                          num_tokens: float, num_sequences: float, sums: dict[str, float],
                          method: str) -> torch.Tensor:
        """The loss of one micro-batch (normalised by the optimiser step's totals), its metrics added to ``sums``."""
        cfg = self.config
        logits = response_logits(self.model, batch, cfg.temperature, cfg.shared_prefix, self._policy_kv)
        logprobs = gather_logprobs(logits, batch.targets)
        sums["nll"] += float((-logprobs.detach() * mask).sum())
        sums["entropy"] += float((losses.token_entropy(logits.detach()) * mask).sum())
        if method == "sft":
            return self._sft_loss(logprobs, batch, mask, num_tokens, num_sequences, sums)
        sampled = pad_rows([s.old_logprobs for s in part], batch.targets.shape[1], self.device, logprobs.dtype)
        off_policy = torch.tensor([s.off_policy for s in part], device=self.device)
        sampled = torch.where(off_policy[:, None], logprobs.detach(), sampled)  # sampled from another prompt
        old, behavior_weight = self._behavior(logprobs, sampled)
        per_token = torch.zeros_like(logprobs)

        if method == "grpo":
            advantages = adv_rl[:, None].expand_as(logprobs)
        elif method in ("opd", "hybrid"):
            teacher = pad_rows(
                [s.teacher_logprobs if s.teacher_logprobs is not None else s.old_logprobs for s in part],
                batch.targets.shape[1],
                self.device,
                logprobs.dtype,
            )
            no_teacher = torch.tensor([s.teacher_logprobs is None for s in part], device=self.device)
            teacher = torch.where(no_teacher[:, None], old, teacher)  # no hint: no OPD advantage
            opd = losses.opd_advantages(teacher, old)
            sums["opd_adv"] += float((opd * mask).sum())
            if method == "opd":
                advantages = opd
            else:
                advantages = losses.hybrid_advantages(adv_rl, teacher, old, cfg.w_rl, cfg.w_opd)
        else:  # opd_topk
            advantages = adv_rl[:, None].expand_as(logprobs)
            teacher_logp = self._teacher_full_logprobs(part, batch.targets.shape[1])
            topk = losses.topk_reverse_kl(torch.log_softmax(logits, -1), teacher_logp, cfg.topk)
            per_token = per_token + cfg.w_opd * topk
            sums["topk_kl"] += float(losses.token_mean(topk.detach(), mask, num_tokens))

        if behavior_weight is not None:
            advantages = advantages * behavior_weight
        pg, clipped = losses.ppo_clip_loss(logprobs, old, advantages, cfg.eps_clip, cfg.eps_clip_high)
        if method == "opd_topk":
            pg = cfg.w_rl * pg
        per_token = per_token + pg
        if cfg.kl_coef > 0:
            ref = self._reference_logprobs(batch)
            kl = losses.kl_k3(logprobs, ref)
            per_token = per_token + cfg.kl_coef * kl
            sums["kl"] += float(losses.token_mean(kl.detach(), mask, num_tokens))
        elif cfg.monitor_kl:
            kl = losses.kl_k3(logprobs.detach(), self._reference_logprobs(batch))
            sums["kl"] += float(losses.token_mean(kl, mask, num_tokens))

        loss = losses.aggregate(per_token, mask, cfg.aggregation, num_tokens, num_sequences)
        sums["loss"] += float(loss.detach())
        sums["pg_loss"] += float(losses.aggregate(pg.detach(), mask, cfg.aggregation, num_tokens, num_sequences))
        sums["clipped"] += float((clipped * mask).sum())
        sums["ratio"] += float((torch.exp(logprobs.detach() - old) * mask).sum())
        sums["abs_logprob_diff"] += float(((logprobs.detach() - sampled).abs() * mask).sum())
        return loss

    def _sft_loss(self, logprobs: torch.Tensor, batch: Batch, mask: torch.Tensor, num_tokens: float,
                  num_sequences: float, sums: dict[str, float]) -> torch.Tensor:
        """-log pi on the demonstration's masked tokens (+ the k3 KL to the initial weights when kl_coef > 0)."""
        cfg = self.config
        per_token = losses.nll(logprobs)
        if cfg.kl_coef > 0:
            kl = losses.kl_k3(logprobs, self._reference_logprobs(batch))
            per_token = per_token + cfg.kl_coef * kl
            sums["kl"] += float(losses.token_mean(kl.detach(), mask, num_tokens))
        loss = losses.aggregate(per_token, mask, cfg.aggregation, num_tokens, num_sequences)
        sums["loss"] += float(loss.detach())
        sums["ratio"] += float(mask.sum())  # no ratio: the demonstration is the target, not a sample
        return loss

    def _checkpointing_for(self, batch: Batch):
        """Checkpointing as configured, except for a micro-batch that forwards no more than
        ``checkpoint_above_tokens`` tokens: it keeps its activations (and can run a shared prompt once), and one
        whose prompt beginning is frozen (``frozen_prompt_above``): the rest runs on the beginning's keys and
        values, which checkpointed layers would drop, and is short (its replies)."""
        if self.config.gradient_checkpointing and (uses_frozen_prompt(batch, self._policy_kv) or
                forwarded_tokens(batch, self.config.shared_prefix) <= self.config.checkpoint_above_tokens):
            return checkpointing_off(self.model)
        return nullcontext()

    @torch.no_grad()
    def _reference_logprobs(self, batch: Batch) -> torch.Tensor:
        """The initial weights' log-probs of the sampled tokens: a constant of the KL term, built without a graph."""
        with self._initial_weights() as reference, checkpointing_off(reference):
            return gather_logprobs(response_logits(reference, batch, self.config.temperature,
                                                   self.config.shared_prefix, self._initial_kv), batch.targets)

    @torch.no_grad()
    def _teacher_full_logprobs(self, part: Sequence[Sample], depth: int) -> torch.Tensor:
        prompts = [teacher_prompt_ids(self.tokenizer, s, self.config.hint_format) for s in part]
        batch = collate(prompts, [s.response_ids for s in part], self.pad_id, self.device)
        with self._teacher() as teacher, checkpointing_off(teacher):
            logits = response_logits(teacher, batch, self.config.temperature, self.config.shared_prefix,
                                     self._teacher_kv())
            return torch.log_softmax(logits, -1)[:, :depth]

    # ---- publishing weights --------------------------------------------------------------------

    # Where export_weights puts its copy by default: the builder sets the serving GPU and bf16 when SGLang
    # is colocated, so the tensor transport sends handles instead of a host copy.
    export_device: str | torch.device = "cpu"
    export_dtype: torch.dtype | None = None

    @torch.no_grad()
    def export_weights(self, device: str | torch.device | None = None,
                       dtype: torch.dtype | None = None) -> dict[str, torch.Tensor]:
        """A full HF state dict of the current policy for serving (LoRA deltas merged, model untouched)."""
        device = self.export_device if device is None else device
        dtype = dtype or self.export_dtype
        if self.config.lora is None:
            state = self.model.state_dict()
        else:
            state = merged_lora_state_dict(self.model)
        return {k: v.detach().to(device=device, dtype=dtype or v.dtype).clone() for k, v in state.items()}

    state_dict_for_serving = export_weights

    @torch.no_grad()
    def export_adapters(self) -> dict[str, torch.Tensor]:
        """The LoRA adapters alone, fp32 on the host, in the names peft saves (``...q_proj.lora_A.weight``), as
        the megatron trainer's ``export_adapters``: what an SGLang server loads with ``/load_lora_adapter``."""
        if self.config.lora is None:
            raise ValueError("this trainer trains full weights: there are no adapters to export")
        if self.config.lora.trainable_tokens:
            raise ValueError("trained token rows are not LoRA adapters: export merged weights (trainer.lora.export "
                             "merged) when trainer.lora.trainable_tokens is set")
        return {n.replace(".default", ""): p.detach().to("cpu", torch.float32).clone()
                for n, p in self.model.named_parameters() if "lora_" in n}

    # ---- checkpoints ---------------------------------------------------------------------------

    def trainable_state_dict(self) -> dict[str, torch.Tensor]:
        """The trained parameters only (all of them, or just the LoRA adapters)."""
        return {n: p.detach().cpu().contiguous().clone() for n, p in self.model.named_parameters() if p.requires_grad}

    def load_trainable_state_dict(self, weights: dict[str, torch.Tensor]) -> None:
        """Put back what :meth:`trainable_state_dict` took (a checkpoint's, or a snapshot kept to score an
        earlier step); the optimiser and the version are left as they are."""
        expected = {n for n, p in self.model.named_parameters() if p.requires_grad}
        if set(weights) != expected:
            missing, extra = sorted(expected - set(weights))[:5], sorted(set(weights) - expected)[:5]
            raise ValueError(f"checkpoint parameters differ from the model's: missing {missing}, unexpected {extra}")
        params = dict(self.model.named_parameters())
        with torch.no_grad():
            for name, value in weights.items():
                params[name].copy_(value.to(params[name].device, params[name].dtype))

    def save_checkpoint(self, path: str | Path) -> Path:
        """Weights + optimizer + step/version + RNG + config in one directory, written atomically."""
        from safetensors.torch import save_file

        with ckpt.atomic_directory(path) as tmp:
            save_file(self.trainable_state_dict(), str(tmp / "trainable.safetensors"))
            torch.save(self.optimizer.state_dict(), tmp / "optimizer.pt")
            rng = {"cpu": torch.get_rng_state()}
            if torch.cuda.is_available():
                rng["cuda"] = torch.cuda.get_rng_state_all()
            torch.save(rng, tmp / "rng.pt")
            ckpt.write_json(
                tmp / "trainer_state.json",
                {"step": self.step, "version": self.version, "config": self.config.to_dict(),
                 "lora": self.config.lora is not None},
            )
        return Path(path)

    def load_checkpoint(self, path: str | Path) -> None:
        """Restore a checkpoint into this trainer (built from the same base model and config)."""
        from safetensors.torch import load_file

        directory = ckpt.resolve(path)
        state = ckpt.read_json(directory / "trainer_state.json")
        if bool(state["lora"]) != (self.config.lora is not None):
            raise ValueError("checkpoint and trainer disagree on LoRA; build the trainer with the checkpoint's config")
        self.load_trainable_state_dict(load_file(str(directory / "trainable.safetensors")))
        self.optimizer.load_state_dict(torch.load(directory / "optimizer.pt",
                                                  map_location=self.device, weights_only=True))
        rng = torch.load(directory / "rng.pt", weights_only=False)
        torch.set_rng_state(rng["cpu"])
        if "cuda" in rng and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(rng["cuda"])
        self.step, self.version = int(state["step"]), int(state["version"])


