"""The deployed personal agent that ``clawgym serve --config chat`` runs: its builder.

The served policy answers real clients (OpenClaw, the openai SDK) through the gateway; every
main-line turn is recorded and judged; with ``serve.train: true`` a personal trainer trains on
judged turns in the background and publishes new weights in place. The config is a launcher YAML
(``method``, ``policy``, ``judge``, ``trainer``) plus a ``serve:`` section::

    serve: {host: 127.0.0.1, port: 8000, api_key: null, log: runs/chat/turns.jsonl,
            idle_timeout_s: 1800, train: true, batch_size: 8, max_staleness: 2, baseline: batch,
            max_tokens: 512,
            adapters: shared, users: {}, admin_key: null, max_users: 16}

(the keys, their defaults and their rules: :class:`~clawgym.rl.launch.schema.ServeSection`, checked with
the rest of the config when it is loaded).

The policy, its trainer and the judges come from the builder of ``clawgym train``
(:func:`~clawgym.rl.launch.build.build_stack`, with the :class:`~clawgym.rl.launch.build.StackOptions` serve
needs): ``policy.backend: hf`` serves in this process; ``sglang`` (with the ``gpu`` section) serves from an SGLang
server placed by that builder and publishes trained weights to it (shared adapters only). This module adds what
only serving has: the responder, the personal trainer, the gateway, the dashboard and the wish memory.
``adapters: shared`` trains one set of weights for everyone (:class:`PersonalTrainer`).
``adapters: per_user`` gives every user their own LoRA adapter on one base model, served together in
one batch and trained only on that user's turns (:mod:`clawgym.serve.user_adapters`); users come from
``users`` (API key -> user id) or the requests' ``user`` field. ``admin_key`` unlocks the dashboard's
data and ``DELETE /v1/users/{id}``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, AsyncIterator

from clawgym.rl.launch import ConfigError, RunConfig
from clawgym.rl.methods import PROB_JUDGES

if TYPE_CHECKING:  # the builder imports torch, the judges, the app and the trainers only when it builds
    from fastapi import FastAPI

    from clawgym.core.policy import Policy, SamplingParams
    from clawgym.inference.streaming import StreamItem
    from clawgym.rl.launch import ServeSection, Stack
    from clawgym.rl.trainer import Trainer
    from clawgym.rl.types import Turn
    from clawgym.serve.dashboard import Dashboard
    from clawgym.serve.gateway import ChatGateway, PolicyResponder, Responder
    from clawgym.serve.hindsight import HindsightGroups, HindsightSettings
    from clawgym.serve.personal_trainer import PersonalTrainer
    from clawgym.serve.sessions import RequestView
    from clawgym.serve.user_adapters import UserAdapters, UserAdapterTrainer
    from clawgym.serve.wish_memory import WishMemory

@dataclass
class Serving:
    app: FastAPI
    gateway: ChatGateway
    policy: Policy
    trainer: PersonalTrainer | UserAdapterTrainer | None = None  # shared | per_user adapters, when serve.train
    adapters: UserAdapters | None = None  # per_user
    dashboard: Dashboard | None = None
    wishes: WishMemory | None = None  # what each user asked for (clawgym.serve.wish_memory)


@dataclass
class Learner:
    """The stack of ``clawgym train``'s builder (policy, trainer, judges) and what serve puts on it: who answers
    (the responder) and who learns (the personal trainer of ``serve.adapters``; None without ``serve.train``)."""

    stack: Stack
    responder: Responder
    personal: PersonalTrainer | UserAdapterTrainer | None = None
    adapters: UserAdapters | None = None  # per_user


def build_serving(config: RunConfig, device: str = "cuda") -> Serving:
    """Policy, judges, gateway, dashboard (and the background trainer) from a launcher config.

    ``policy.backend: hf`` serves in this process (CPU / one device); ``sglang`` (the GPU section) serves
    from an SGLang server placed by the same builder as ``clawgym train`` (``device``: see
    :func:`~clawgym.rl.launch.build.build_stack`).
    """
    from clawgym.inference.chat_template import encode_prompt
    from clawgym.rl.judge import JudgeStage
    from clawgym.rl.launch.serve_rules import serve_problem
    from clawgym.rl.types import read_jsonl
    from clawgym.serve.app import build_gateway_app
    from clawgym.serve.dashboard import Dashboard
    from clawgym.serve.fitting import ContextFitter
    from clawgym.serve.gateway import ChatGateway
    from clawgym.serve.sessions import SessionTracker
    from clawgym.serve.turn_log import TurnLog
    from clawgym.serve.users import UserDirectory
    from clawgym.serve.wish_memory import WishMemory

    problem = serve_problem(config)  # checked at load_config(..., serving=True); a config loaded for train, here
    if problem:
        raise ConfigError(problem)
    serve = config.serve
    out = Path(config.loop.output_dir)
    learner = build_learner(config, out, device)
    policy, personal, adapters = learner.stack.policy, learner.personal, learner.adapters
    tokenizer, max_positions = learner.stack.tokenizer, learner.stack.max_positions
    dashboard = Dashboard()
    log_path = Path(serve.log or out / "turns.jsonl")
    log = TurnLog(log_path)
    steps = out / "train_steps.jsonl"
    dashboard.rebuild(log.turns(), read_jsonl(steps) if steps.exists() else ())
    wishes = WishMemory(log, on_change=dashboard.observe_wishes)  # replays the log's wish events
    if getattr(personal, "hindsight", None) is not None:
        personal.hindsight.rubric.wishes_of = wishes.texts  # the rubric scores against what each user asked
        personal.hindsight.on_scored = dashboard.observe_wishes_met
        personal.hindsight.on_group = log.record_group  # what each group showed the trainer, for reading later
    if serve.teacher_wishes and personal is not None:
        personal.wishes_of = wishes.texts

    def on_judged(turn: Turn) -> None:
        dashboard.observe_judged(turn)
        wishes.observe_judged(turn)  # a correction (judged, or sent as feedback) becomes a wish
        if personal is not None:
            personal.add(turn)

    if personal is not None:
        personal.on_step = lambda record: dashboard.observe_step(record.get("user", "default"), record.get(
            "adapter_version", record.get("policy_version", 0)))
        personal.on_error = dashboard.observe_train_error
    fitter = ContextFitter(lambda messages, tools: len(encode_prompt(tokenizer, messages, tools)), max_positions)
    judges = learner.stack.judges
    gateway = ChatGateway(learner.responder, log, tracker=SessionTracker(idle_timeout_s=serve.idle_timeout_s),
                          judge_stage=JudgeStage(judges) if judges else None, on_judged=on_judged,
                          on_recorded=dashboard.observe_turn, model_name=config.policy.model, fitter=fitter)
    gateway.model_info = {"context_window": max_positions, "max_output_tokens": serve.max_tokens}
    if personal is not None:
        personal.recover(gateway.log.turns())  # judged before a restart, never trained: not lost

    async def forget(user: str) -> dict[str, Any]:
        """Everything the server keeps about ``user``: turns, sessions, wishes, adapter, pending samples, step
        records."""
        import asyncio

        dropped_events = await asyncio.to_thread(gateway.log.forget_user, user)
        result = {"log_events_deleted": dropped_events, "turns_in_memory_dropped": gateway.forget_user(user),
                  "wishes_deleted": wishes.forget(user),
                  "pending_samples_dropped": personal.forget(user) if hasattr(personal, "forget") else 0,
                  "adapter_deleted": adapters.forget(user) if adapters is not None else False}
        await asyncio.to_thread(_forget_step_records, steps, user)
        dashboard.forget(user)
        return result

    users = UserDirectory(serve.users, serve.admin_key, shared_key=serve.api_key)
    app = build_gateway_app(gateway, api_key=serve.api_key, default_max_tokens=serve.max_tokens, users=users,
                            default_temperature=config.rollout.temperature,  # what the trainer trains at
                            dashboard=dashboard,
                            forget=forget if serve.adapters == "per_user" or serve.admin_key else None,
                            wishes=wishes)
    return Serving(app, gateway, policy, personal, adapters, dashboard, wishes)


def build_learner(config: RunConfig, out: Path, device: str = "cuda") -> Learner:
    """The policy, trainer and judges from :func:`~clawgym.rl.launch.build.build_stack` (the builder and plan of
    ``clawgym train``; a trainer only when serve trains or keeps per-user adapters), then the responder and the
    personal trainer of ``serve.adapters`` on them."""
    from clawgym.rl.launch.build import StackOptions, build_stack

    serve = config.serve
    in_process = not (config.gpu.enabled or config.policy.backend != "hf")
    if not in_process:
        problems = sglang_problems(config)
        if problems:
            raise ConfigError("clawgym serve with the sglang backend: " + "; ".join(problems))
    per_user = serve.adapters == "per_user"
    stack = build_stack(config, device=device, options=StackOptions(
        trainer=serve.train or per_user, adapter_slots=serve.max_users + 1 if per_user else 0))
    if per_user:
        return _per_user(serve, stack, out)
    return _shared(config, stack, out, in_process)


def _shared(config: RunConfig, stack: Stack, out: Path, in_process: bool) -> Learner:
    """One set of weights for everyone: the trainer's copy trains and publishes each step to the served policy."""
    from clawgym.serve.gateway import PolicyResponder
    from clawgym.serve.personal_trainer import PersonalTrainer

    serve, policy, trainer = config.serve, stack.policy, stack.trainer
    learner = Learner(stack, PolicyResponder(policy))
    if not serve.train:
        return learner
    assert trainer is not None  # StackOptions(trainer=True)
    checkpoint = out / "checkpoint"
    if checkpoint.is_dir():  # a restart: continue from the last published weights, at their version
        trainer.load_checkpoint(checkpoint)
        if in_process:
            policy.load_weights(trainer.export_weights(), version=int(trainer.version))
        else:  # the SGLang server gets them before it answers anyone
            learner.responder = PublishFirst(learner.responder, trainer)
    learner.personal = PersonalTrainer(trainer, policy, batch_size=serve.batch_size,
                                       max_staleness=serve.max_staleness, output_dir=out,
                                       baseline=serve.baseline)
    if serve.hindsight_k:
        learner.personal.hindsight = _hindsight_groups(config, policy, stack.judge_policy or policy,
                                                       learner.personal.temperature)
    return learner


def _per_user(serve: ServeSection, stack: Stack, out: Path) -> Learner:
    """One adapter per user on one base model (the stack's multi-adapter policy; the judges read its base
    model, slot 0); the adapters saved before a restart are restored."""
    from clawgym.serve.gateway import UserResponder
    from clawgym.serve.user_adapters import UserAdapters, UserAdapterTrainer

    trainer = stack.trainer
    assert trainer is not None  # StackOptions(adapter_slots > 0) builds one
    adapters = UserAdapters(stack.policy, out / "adapters")
    personal = UserAdapterTrainer(trainer, adapters, batch_size=serve.batch_size,
                                  max_staleness=serve.max_staleness, output_dir=out,
                                  baseline=serve.baseline)
    for user, outcome in adapters.restore(trainer).items():
        print(f"  adapter of {user}: {outcome}")
    return Learner(stack, UserResponder(adapters), personal if serve.train else None, adapters)


def hindsight_settings(serve: ServeSection) -> HindsightSettings | None:
    """The :class:`HindsightSettings` of ``serve.hindsight_*`` (None when off); the config's validation has
    checked them (:func:`~clawgym.rl.launch.serve_rules.serve_problem`)."""
    if not serve.hindsight_k:
        return None
    from clawgym.serve.hindsight import HindsightSettings

    return HindsightSettings(k=serve.hindsight_k, verdict_weight=serve.hindsight_verdict_weight,
                             max_tokens=serve.max_tokens, max_queued=serve.hindsight_max_queued,
                             prompted=serve.hindsight_prompted, answered=serve.hindsight_answered)


def _hindsight_groups(config: RunConfig, policy: Policy, judge_policy: Policy, temperature: float) -> HindsightGroups:
    """Siblings from the served policy, scored by a rubric judge on the judge's model (the wishes are
    attached by :func:`build_serving` once the wish memory exists)."""
    from clawgym.rl.judge import RubricJudge
    from clawgym.serve.hindsight import HindsightGroups

    if not hasattr(judge_policy, "model"):
        raise ConfigError("serve.hindsight_k: the rubric judge reads label probabilities from a "
                          f"local hf model, and the judge {config.judge.model!r} is not one")
    sampler, owned = _prompted_sampler(config, policy, judge_policy)
    rubric = RubricJudge(judge_policy, refusals_fail=config.serve.hindsight_refusals_fail)
    return HindsightGroups(policy, rubric, hindsight_settings(config.serve), temperature=temperature,
                           teacher_hint=config.method == "hybrid", hint_format=config.trainer.hint_format,
                           sampler=sampler, owns_sampler=owned)


def _prompted_sampler(config: RunConfig, policy: Policy, judge_policy: Policy) -> tuple[Policy, bool]:
    """(who samples the prompted siblings, whether the groups own it): ``serve.hindsight_prompted_model``
    loaded in process (the judge's model when it is that one), else the served policy."""
    name = config.serve.hindsight_prompted_model
    if not name or not config.serve.hindsight_prompted:
        return policy, False
    from clawgym.inference.hf import HFPolicy
    from clawgym.inference.models import load_tokenizer
    from clawgym.rl.launch.placement import resolve_model

    model = resolve_model(config, name)
    if load_tokenizer(model).get_vocab() != policy.tokenizer.get_vocab():
        raise ConfigError(f"serve.hindsight_prompted_model {name!r} has another tokenizer than the policy "
                          f"{config.policy.model!r}; its replies are trained as the policy's token ids")
    if judge_policy is not policy and config.judge.model == name:
        return judge_policy, False  # the judge's model: loaded once, closed by the stack
    return HFPolicy.from_pretrained(model, device=config.policy.device, name=f"siblings:{model}"), True


def sglang_problems(config: RunConfig) -> list[str]:
    """Why ``clawgym serve`` cannot run this config with the sglang backend (empty: it can); the schema
    already refuses ``trainer.teacher: judge`` with an SGLang judge."""
    from clawgym.rl.launch.schema import judge_parts

    problems = []
    if config.serve.adapters == "per_user":
        problems.append("serve.adapters: per_user needs the in-process hf policy (it serves every user's LoRA adapter "
                        "in one batch and swaps one adapter at a time); the sglang backend receives one set of merged "
                        "weights for everyone: use serve.adapters: shared, or policy.backend: hf "
                        "with gpu.enabled: false")
    prob = [part for part in judge_parts(config.judge.type) if part in PROB_JUDGES]
    if prob:
        problems.append(f"judge.type {'+'.join(prob)} reads label probabilities from an in-process hf model, but with "
                        "the sglang backend the judge is an SGLang server: use judge.type prm,hint "
                        "(generated votes) or rules")
    return problems


class PublishFirst:
    """After a restart: publish the restored trainer's weights, at the trainer's version, to the SGLang
    server (on the serving loop, where its HTTP client and weight transport live) before the first answer."""

    def __init__(self, responder: PolicyResponder, trainer: Trainer) -> None:
        import asyncio

        self.responder, self.trainer, self.policy = responder, trainer, responder.policy
        self._lock = asyncio.Lock()
        self.published = False

    async def respond(self, view: RequestView, body: dict[str, Any],
                      sampling: SamplingParams) -> AsyncIterator[StreamItem]:
        import asyncio

        async with self._lock:
            if not self.published:
                from clawgym.rl.trainer.transport import served_weights

                await self.policy.update_weights(await asyncio.to_thread(served_weights(self.trainer, self.policy)),
                                                 version=int(self.trainer.version))
                self.published = True
        async for item in self.responder.respond(view, body, sampling):
            yield item


def _forget_step_records(path: Path, user: str) -> None:
    """Rewrite the trainer's step records without ``user``'s (they name the user's turn ids)."""
    import json
    import os

    if not path.exists():
        return
    lines = [line for line in path.read_text(encoding="utf-8").splitlines(keepends=True)
             if line.strip() and json.loads(line).get("user") != user]
    tmp = path.with_suffix(".rewrite")
    tmp.write_text("".join(lines), encoding="utf-8")
    os.replace(tmp, path)

