"""Config sections -> the trainer's and the loop's own config objects (kept apart so both stay plain)."""

from __future__ import annotations

from typing import Any

from clawgym.rl.launch.schema import ConfigError, LoraSection, RunConfig
from clawgym.rl.launch.teacher import trainer_teacher


def lora_targets(lora: LoraSection, num_layers: int | None) -> tuple[str, ...]:
    """The module names LoRA wraps: the given suffixes, restricted to the top ``top_layers`` layers if set.

    peft matches a target against the end of each module name, so ``layers.29.self_attn.q_proj``
    selects that one projection in layer 29.
    """
    if lora.top_layers <= 0:
        return tuple(lora.target_modules)
    if num_layers is None:
        raise ConfigError("trainer.lora.top_layers needs the model's layer count")
    first = max(0, num_layers - lora.top_layers)
    return tuple(f"layers.{i}.{module}" for i in range(first, num_layers) for module in lora.target_modules)


def trainer_config(config: RunConfig, num_layers: int | None = None) -> Any:
    from clawgym.rl.trainer import LoraSettings, TrainerConfig

    t = config.trainer
    lora = None
    if t.lora.enabled:
        lora = LoraSettings(r=t.lora.r, alpha=t.lora.alpha, dropout=t.lora.dropout,
                            target_modules=lora_targets(t.lora, num_layers if t.lora.top_layers > 0 else None))
    return TrainerConfig(
        method=config.method,  # type: ignore[arg-type]
        lr=t.lr,
        weight_decay=t.weight_decay,
        eps_clip=t.eps_clip,
        eps_clip_high=t.eps_clip_high,
        kl_coef=t.kl_coef,
        w_rl=t.w_rl,
        w_opd=t.w_opd,
        micro_batch_size=t.micro_batch_size,
        grad_accum=t.grad_accum,
        max_grad_norm=t.max_grad_norm,
        lora=lora,
        aggregation=t.aggregation,  # type: ignore[arg-type]
        advantage=t.advantage,  # type: ignore[arg-type]
        teacher=trainer_teacher(config),  # type: ignore[arg-type]
        temperature=1.0,  # HFPolicy logprobs are at temperature 1 whatever the sampling temperature
        gradient_checkpointing=t.gradient_checkpointing,
        seed=config.loop.seed,
    )


def loop_config(config: RunConfig) -> Any:
    from clawgym.rl.loop import LoopConfig

    l, r = config.loop, config.rollout
    return LoopConfig(
        steps=l.steps,
        max_minutes=l.max_minutes,
        batch_groups=l.batch_groups,
        group_size=r.group_size,
        num_workers=r.workers,
        buffer_groups=l.buffer_groups,
        max_staleness=l.max_staleness,
        staleness=l.staleness,  # type: ignore[arg-type]
        reward=l.reward,  # type: ignore[arg-type]
        prm_coef=l.prm_coef,
        drop_zero_advantage=l.drop_zero_advantage,
        temperature=r.temperature,
        top_p=r.top_p,
        max_tokens=r.max_tokens,
        episode_timeout_s=r.episode_timeout_s,
        judge_workers=config.judge.workers,
        eval_every=l.eval_every,
        eval_before=l.eval_before,
        eval_after=l.eval_after,
        eval_episodes=l.eval_episodes,
        eval_temperature=l.eval_temperature,
        checkpoint_every=l.checkpoint_every,
        resume=l.resume,
        output_dir=l.output_dir,
        mode=l.mode,  # type: ignore[arg-type]
        seed=l.seed,
        tensorboard=l.tensorboard,
        plot=l.plot,
    )
