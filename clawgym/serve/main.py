"""``clawgym serve --config chat``: the deployed personal agent.

The served policy answers real clients (OpenClaw, the openai SDK) through the gateway; every
main-line turn is recorded and judged; with ``serve.train: true`` the :class:`PersonalTrainer`
trains on judged turns in the background and publishes new weights to the policy in place. The
config is a launcher YAML (``method``, ``policy``, ``judge``, ``trainer``) plus a ``serve:`` section:

    serve: {host: 127.0.0.1, port: 8000, api_key: null, log: runs/chat/turns.jsonl,
            idle_timeout_s: 1800, train: true, batch_size: 8, max_staleness: 2, max_tokens: 512}
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clawgym.rl.launch import ConfigError, RunConfig, build_judges, load_config, trainer_config


@dataclass
class ServeSettings:
    host: str = "127.0.0.1"
    port: int = 8000
    api_key: str | None = None
    log: str | None = None  # default: <loop.output_dir>/turns.jsonl
    idle_timeout_s: float = 1800.0
    train: bool = True
    batch_size: int = 8
    max_staleness: int = 2
    max_tokens: int = 512

    @classmethod
    def from_config(cls, config: RunConfig) -> "ServeSettings":
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(config.serve) - known)
        if unknown:
            raise ConfigError(f"serve: unknown key(s) {unknown}; known: {sorted(known)}")
        return cls(**config.serve)


@dataclass
class Serving:
    app: Any
    gateway: Any
    policy: Any
    trainer: Any = None  # PersonalTrainer when serve.train


def build_serving(config: RunConfig) -> Serving:
    """Policy, judges, gateway (and the background trainer) from a launcher config (CPU / one device)."""
    from clawgym.serve.app import build_gateway_app
    from clawgym.serve.gateway import ChatGateway, PolicyResponder
    from clawgym.serve.turn_log import TurnLog
    from clawgym.serve.sessions import SessionTracker
    from clawgym.serve.personal_trainer import PersonalTrainer
    from clawgym.rl.judge import JudgeStage
    from clawgym.rl.policy.hf import HFPolicy
    from clawgym.rl.policy.models import load_model

    settings = ServeSettings.from_config(config)
    if config.gpu.enabled or config.policy.backend != "hf":
        raise ConfigError("clawgym serve runs the hf backend on this machine; set policy.backend: hf")
    serve_model, tokenizer = load_model(config.policy.model, device=config.policy.device, seed=config.policy.seed)
    policy = HFPolicy(serve_model, tokenizer, name=config.policy.model, max_batch_size=config.policy.max_batch_size)
    judges, _ = build_judges(config, policy)
    personal = None
    if settings.train:
        from clawgym.rl.trainer import TorchTrainer

        train_model, _ = load_model(config.policy.model, device=config.policy.device, seed=config.policy.seed)
        trainer = TorchTrainer(train_model, tokenizer,
                               trainer_config(config, getattr(train_model.config, "num_hidden_layers", None)))
        checkpoint = Path(config.loop.output_dir) / "checkpoint"
        if checkpoint.is_dir():  # a restart: continue from the last published weights
            trainer.load_checkpoint(checkpoint)
            policy.load_weights(trainer.export_weights())
        personal = PersonalTrainer(trainer, policy, batch_size=settings.batch_size,
                                   max_staleness=settings.max_staleness, output_dir=config.loop.output_dir)
    log_path = Path(settings.log or Path(config.loop.output_dir) / "turns.jsonl")
    gateway = ChatGateway(
        PolicyResponder(policy), TurnLog(log_path), tracker=SessionTracker(idle_timeout_s=settings.idle_timeout_s),
        judge_stage=JudgeStage(judges) if judges else None, on_judged=personal.add if personal else None,
        model_name=config.policy.model,
    )
    if personal is not None:
        personal.recover(gateway.log.turns())  # judged before a restart, never trained: not lost
    app = build_gateway_app(gateway, api_key=settings.api_key, default_max_tokens=settings.max_tokens)
    return Serving(app, gateway, policy, personal)


def main_serve(args: Any) -> int:
    import uvicorn

    config = load_config(args.config, getattr(args, "set", []) or [])
    settings = ServeSettings.from_config(config)
    serving = build_serving(config)
    print(f"clawgym gateway on http://{settings.host}:{settings.port}/v1 (model {config.policy.model}; "
          f"training {'on' if serving.trainer else 'off'}; turns -> {serving.gateway.log.path})")
    uvicorn.run(serving.app, host=settings.host, port=settings.port, log_level="info")
    return 0
