"""The deployed personal agent that ``clawgym serve --config chat`` runs: its builder.

The served policy answers real clients (OpenClaw, the openai SDK) through the gateway; every
main-line turn is recorded and judged; with ``serve.train: true`` a personal trainer trains on
judged turns in the background and publishes new weights in place. The config is a launcher YAML
(``method``, ``policy``, ``judge``, ``trainer``) plus a ``serve:`` section::

    serve: {host: 127.0.0.1, port: 8000, api_key: null, log: runs/chat/turns.jsonl,
            idle_timeout_s: 1800, train: true, batch_size: 8, max_staleness: 2, baseline: batch,
            max_tokens: 512,
            adapters: shared, users: {}, admin_key: null, max_users: 16}

The policy, its trainer and the judges come from the builder of ``clawgym train``
(:func:`~clawgym.rl.launch.build.build_stack`, with the :class:`~clawgym.rl.launch.build.StackOptions` serve
needs): ``policy.backend: hf`` serves in this process; ``sglang`` (with the ``gpu`` section) serves from an SGLang
server placed by that builder and publishes trained weights to it (shared adapters only). This module adds what
only serving has: the responder, the gateway, the dashboard, the turn log and the wish memory, and it builds
the personal learner (:mod:`clawgym.personal`) with them passed in.
``adapters: shared`` trains one set of weights for everyone (:class:`~clawgym.personal.trainer.PersonalTrainer`).
``adapters: per_user`` gives every user their own LoRA adapter on one base model, served together in
one batch and trained only on that user's turns (:mod:`clawgym.personal.user_adapters`); users come from
``users`` (API key -> user id) or the requests' ``user`` field. ``admin_key`` unlocks the dashboard's
data and ``DELETE /v1/users/{id}``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, AsyncIterator

from clawgym.rl.launch import ConfigError, RunConfig
from clawgym.rl.methods import PROB_JUDGES

if TYPE_CHECKING:  # the builder imports torch, the judges, the app and the trainers only when it builds
    from fastapi import FastAPI

    from clawgym.core.policy import Policy, SamplingParams
    from clawgym.inference.streaming import StreamItem
    from clawgym.personal.learner import Learner
    from clawgym.personal.user_adapters import UserAdapters
    from clawgym.personal.wish_checks import BackgroundCompiler
    from clawgym.personal.wish_memory import WishMemory
    from clawgym.rl.launch import Stack
    from clawgym.rl.trainer import Trainer
    from clawgym.rl.types import JSONObject, Turn
    from clawgym.serve.dashboard import Dashboard
    from clawgym.serve.gateway import ChatGateway, PolicyResponder, Responder
    from clawgym.serve.sessions import RequestView
    from clawgym.serve.turn_log import TurnLog


@dataclass
class Serving:
    app: FastAPI
    gateway: ChatGateway
    policy: Policy
    trainer: Learner | None = None  # the personal learner of serve.adapters, when serve.train
    adapters: UserAdapters | None = None  # per_user
    dashboard: Dashboard | None = None
    wishes: WishMemory | None = None  # what each user asked for (clawgym.personal.wish_memory)
    compiler: BackgroundCompiler | None = None  # serve.wish_checks: compiles new wishes (clawgym.personal.wish_checks)


def build_serving(config: RunConfig, device: str = "cuda") -> Serving:
    """Policy, judges, gateway, dashboard (and the background learner) from a launcher config.

    ``policy.backend: hf`` serves in this process (CPU / one device); ``sglang`` (the GPU section) serves
    from an SGLang server placed by the same builder as ``clawgym train`` (``device``: see
    :func:`~clawgym.rl.launch.build.build_stack`; a trainer only when serve trains or keeps per-user adapters).
    """
    from clawgym.core.chat_protocol import conversation
    from clawgym.inference.chat_template import encode_prompt
    from clawgym.personal.learner import LearnerHooks, adapter_slots, build_learner
    from clawgym.personal.rubric import first_request
    from clawgym.personal.wish_memory import WishMemory
    from clawgym.rl.judge import JudgeStage
    from clawgym.rl.launch.build import StackOptions, build_stack
    from clawgym.rl.launch.placement import serves_in_process
    from clawgym.rl.launch.serve_rules import serve_problem
    from clawgym.rl.types import read_jsonl
    from clawgym.serve.app import build_gateway_app
    from clawgym.serve.dashboard import Dashboard
    from clawgym.serve.fitting import ContextFitter
    from clawgym.serve.gateway import ChatGateway, PolicyResponder, UserResponder
    from clawgym.serve.sessions import SessionTracker
    from clawgym.serve.turn_log import TurnLog
    from clawgym.serve.users import UserDirectory

    problem = serve_problem(config)  # checked at load_config(..., serving=True); a config loaded for train, here
    if problem:
        raise ConfigError(problem)
    serve = config.serve
    if not serves_in_process(config):
        problems = sglang_problems(config)
        if problems:
            raise ConfigError("clawgym serve with the sglang backend: " + "; ".join(problems))
    out = Path(config.loop.output_dir)
    per_user = serve.adapters == "per_user"
    stack = build_stack(config, device=device, options=StackOptions(
        trainer=serve.train or per_user, adapter_slots=adapter_slots(serve),  # per_user: the gate's spare one too
        siblings=serve.train and not per_user and serve.hindsight_k > 0))  # the learner's hindsight groups
    policy, tokenizer, max_positions = stack.policy, stack.tokenizer, stack.max_positions
    dashboard = Dashboard()
    log = TurnLog(Path(serve.log or out / "turns.jsonl"))
    steps = out / "train_steps.jsonl"
    dashboard.rebuild(log.turns(), read_jsonl(steps) if steps.exists() else ())
    wishes = WishMemory(log, on_change=dashboard.observe_wishes)  # replays the log's wish events
    compiler = _wish_compiler(config, stack, wishes, log) if serve.wish_checks else None
    hooks = LearnerHooks(
        wishes_of=wishes.texts,  # the rubric (and the teacher of serve.teacher_wishes) reads what each user asked
        checks_of=wishes.checks if serve.wish_checks else None,  # and runs their compiled checks first
        on_step=dashboard.observe_step_record,
        on_error=dashboard.observe_train_error, on_scored=dashboard.observe_wishes_met,
        on_group=log.record_group,  # what each group showed the trainer, for reading later
        on_training=dashboard.observe_training)  # versions, the gate's verdicts, alarms
    personal = build_learner(config, stack, out, hooks)
    learner, adapters = personal.learner, personal.adapters
    responder: Responder = UserResponder(adapters) if adapters is not None else PolicyResponder(policy)
    if personal.publish_first:  # shared weights restored from a checkpoint, served by SGLang
        assert stack.trainer is not None and isinstance(responder, PolicyResponder)
        responder = PublishFirst(responder, stack.trainer)

    def on_judged(turn: Turn) -> None:
        dashboard.observe_judged(turn)
        for wish in wishes.observe_judged(turn):  # a correction (judged, or sent as feedback) becomes a wish
            if compiler is not None and not wish.check_state:  # on its own thread, off the reply's path, with the
                compiler.submit(  # request the wish corrected
                    wish.user, wish.id, wish.text, first_request(conversation(list(turn.context))))
        if learner is not None:
            learner.add(turn)

    fitter = ContextFitter(lambda messages, tools: len(encode_prompt(tokenizer, messages, tools)), max_positions)
    judges = stack.judges
    gateway = ChatGateway(responder, log, tracker=SessionTracker(idle_timeout_s=serve.idle_timeout_s),
                          judge_stage=JudgeStage(judges) if judges else None, on_judged=on_judged,
                          on_recorded=dashboard.observe_turn, model_name=config.policy.model, fitter=fitter,
                          call_guard=serve.call_guard and bool(getattr(policy, "supports_prose_only", False)),
                          person_last=serve.person_last)
    gateway.model_info = {"context_window": max_positions, "max_output_tokens": serve.max_tokens}
    if learner is not None:
        learner.recover(gateway.log.turns())  # judged before a restart, never trained: not lost

    async def forget(user: str) -> dict[str, int | bool]:
        """Everything the server keeps about ``user``: turns, sessions, wishes, adapter, pending samples, step
        records."""
        import asyncio

        dropped_events = await asyncio.to_thread(gateway.log.forget_user, user)
        result = {"log_events_deleted": dropped_events, "turns_in_memory_dropped": gateway.forget_user(user),
                  "wishes_deleted": wishes.forget(user),
                  "pending_samples_dropped": learner.forget(user) if learner is not None else 0,
                  "adapter_deleted": adapters.forget(user) if adapters is not None else False}
        await asyncio.to_thread(_forget_step_records, steps, user)
        dashboard.forget(user)
        return result

    users = UserDirectory(serve.users, serve.admin_key, shared_key=serve.api_key)
    app = build_gateway_app(gateway, api_key=serve.api_key, default_max_tokens=serve.max_tokens, users=users,
                            default_temperature=config.rollout.temperature,  # what the trainer trains at
                            dashboard=dashboard, forget=forget if per_user or serve.admin_key else None,
                            wishes=wishes, max_output_tokens=serve.max_tokens,  # what /v1/models advertises
                            learner=learner)
    if learner is not None:
        dashboard.observe_training(learner.status())
    return Serving(app, gateway, policy, learner, adapters, dashboard, wishes, compiler)


def _wish_compiler(config: RunConfig, stack: Stack, wishes: WishMemory, log: TurnLog) -> BackgroundCompiler:
    """``serve.wish_checks``: the judge model compiles each new wish on a thread of its own (the person's replies
    in ``log`` tell its drafts apart), and what a restart left uncompiled is queued now. Needs an in-process model
    and bubblewrap (the install line, if missing)."""
    from clawgym.personal.check_runner import CheckRunner
    from clawgym.personal.learner import judge_model
    from clawgym.personal.wish_checks import BackgroundCompiler, WishCompiler, person_replies
    from clawgym.sandbox import SandboxUnavailable

    model = judge_model(config, stack)
    if getattr(model, "model", None) is None or getattr(model, "tokenizer", None) is None:
        raise ConfigError("serve.wish_checks: the judge model writes each wish's check in this process (an hf "
                          f"model), and the judge {config.judge.model!r} is not one")
    try:
        runner = CheckRunner()
    except SandboxUnavailable as exc:
        raise ConfigError(f"serve.wish_checks runs each compiled check in a bubblewrap sandbox: {exc}") from None
    compiler = BackgroundCompiler(WishCompiler(model, runner), on_compiled=lambda user, wish_id, outcome: (
        wishes.set_check(user, wish_id, outcome.wish, outcome.code, outcome.note)),
        replies_of=lambda user: person_replies(log.turns(), user))
    for wish in wishes.uncompiled():
        compiler.submit(wish.user, wish.id, wish.text)
    return compiler


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

    async def respond(self, view: RequestView, body: JSONObject,
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

