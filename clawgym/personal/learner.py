"""The personal learner of ``clawgym serve``: one protocol, built in one place.

The server hands every judged main-line turn to a :class:`Learner` and never looks inside it. Two
learners exist: :class:`~clawgym.personal.trainer.PersonalTrainer` (``serve.adapters: shared``, one set
of weights for everyone, with hindsight groups when ``serve.hindsight_k`` is set) and
:class:`~clawgym.personal.user_adapters.UserAdapterTrainer` (``per_user``, one LoRA adapter per person).
:func:`build_learner` builds either from the stack of ``clawgym train``'s builder and the
:class:`LearnerHooks` the server passes in (the wish memory, the dashboard, the turn log): every
dependency is a constructor argument, nothing is assigned afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol

from clawgym.rl.launch import ConfigError, RunConfig
from clawgym.rl.launch.placement import serves_in_process

if TYPE_CHECKING:
    from clawgym.core.policy import Policy
    from clawgym.personal.hindsight import HindsightGroups
    from clawgym.personal.publishing import Publisher
    from clawgym.personal.rubric import RubricJudge
    from clawgym.personal.trainer import OnError, OnStep
    from clawgym.personal.user_adapters import UserAdapters
    from clawgym.rl.launch import Stack
    from clawgym.rl.launch.serve_section import ServeSection
    from clawgym.rl.trainer import Trainer
    from clawgym.rl.types import JSONObject, Turn


class Learner(Protocol):
    """What the server drives: turns in (never blocking), a restart's recovery, forget-me, shutdown, and the
    controls a person (or an admin) has over what serves them: the status, resume, rollback."""

    per_user: bool  # each person has weights of their own (their key controls them), or one set serves everyone

    def add(self, turn: Turn) -> None:
        """A judged turn (the gateway's ``on_judged``): keep its sample if trainable; train in the background."""

    def recover(self, turns: list[Turn]) -> int:
        """After a restart: queue the log's judged turns that no finished step trained on; returns how many."""

    def forget(self, user: str) -> int:
        """Forget-me: drop everything pending of ``user``; returns how many samples or turns were dropped."""

    def status(self, user: str | None = None) -> JSONObject:
        """The served version, the kept versions, the publish gate's last verdict, alarms, whether paused (of
        ``user``'s weights; without ``user``, of everyone's)."""

    def resume(self, user: str | None = None) -> JSONObject:
        """Train (``user``'s weights) again after an alarm paused training; returns the status."""

    async def rollback(self, version: int, user: str | None = None) -> JSONObject:
        """Serve the kept version ``version`` (of ``user``'s weights) again
        (:class:`~clawgym.personal.publishing.UnknownVersion` if it is not kept); returns the status."""

    async def stop(self) -> None:
        """Train no more: the step in flight finishes, the served weights stay fixed from here on."""

    async def close(self) -> None:
        """Cancel the background tasks and release what the learner owns."""


@dataclass(frozen=True)
class LearnerHooks:
    """What the learner reads from and reports to the rest of the server (each optional)."""

    wishes_of: Callable[[str], list[str]] | None = None  # user -> remembered wishes (the wish memory)
    checks_of: Callable[[str], Mapping[str, str]] | None = None  # user -> compiled checks by wish text (wish_checks)
    on_step: OnStep | None = None  # every recorded train step (the dashboard)
    on_error: OnError | None = None  # (user, message) of a failed step (the dashboard)
    on_scored: Callable[[str, float], object] | None = None  # (user, share of wishes a served reply met)
    on_group: Callable[[JSONObject], object] | None = None  # every scored hindsight group (the turn log)
    on_training: Callable[[JSONObject], object] | None = None  # the training status after each change (the dashboard)


@dataclass
class PersonalLearning:
    """What :func:`build_learner` made: the learner (None when the server does not train), the per-user
    adapters (``per_user``: the responder serves them too) and whether a restart restored weights the
    served policy does not hold yet (an SGLang server: publish before the first answer)."""

    learner: Learner | None = None
    adapters: UserAdapters | None = None
    publish_first: bool = False


def build_learner(config: RunConfig, stack: Stack, out: Path, hooks: LearnerHooks = LearnerHooks()) -> PersonalLearning:
    """The learner of ``serve.adapters`` on the stack's policy and trainer (``serve.train``; per-user adapters
    are kept, and restored, even when the server does not train)."""
    serve = config.serve
    if serve.adapters == "per_user":
        return _per_user(config, stack, out, hooks)
    if not serve.train:
        return PersonalLearning()
    return _shared(config, stack, out, hooks)


def _shared(config: RunConfig, stack: Stack, out: Path, hooks: LearnerHooks) -> PersonalLearning:
    """One set of weights for everyone: the trainer's copy trains and publishes each step to the served policy;
    after a restart it continues from the last published weights, at their version."""
    from clawgym.personal.trainer import PersonalTrainer

    serve, policy, trainer = config.serve, stack.policy, stack.trainer
    assert trainer is not None  # the stack was built with a trainer (serve.train)
    publish_first = False
    checkpoint = out / "checkpoint"
    if checkpoint.is_dir():
        trainer.load_checkpoint(checkpoint)
        if serves_in_process(config):
            policy.load_weights(trainer.export_weights(), version=int(trainer.version))
        else:  # the SGLang server gets them before it answers anyone
            publish_first = True
    judge_policy = stack.judge_policy or policy
    rubric = _rubric(config, judge_policy, hooks) if serve.hindsight_k or serve.gate.enabled else None
    hindsight = _hindsight_groups(config, stack, judge_policy, rubric, hooks) if serve.hindsight_k else None
    learner = PersonalTrainer(trainer, policy, batch_size=serve.batch_size, max_staleness=serve.max_staleness,
                              output_dir=out, baseline=serve.baseline, hindsight=hindsight,
                              wishes_of=hooks.wishes_of if serve.teacher_wishes else None,
                              on_step=hooks.on_step, on_error=hooks.on_error,
                              publisher=_publisher(config, trainer, policy, rubric, out, hooks))
    return PersonalLearning(learner, publish_first=publish_first)


def _publisher(config: RunConfig, trainer: Trainer, policy: Policy, rubric: RubricJudge | None, out: Path,
               hooks: LearnerHooks) -> Publisher:
    """The publish gate (``serve.gate``: on a copy of the served model), the alarms, the kept versions."""
    import copy

    from clawgym.inference.hf import HFPolicy
    from clawgym.personal.gate import PublishGate
    from clawgym.personal.publishing import Publisher

    serve, gate = config.serve, None
    if serve.gate.enabled:
        assert rubric is not None and hooks.wishes_of is not None  # the gate scores replies against the wishes
        candidate = HFPolicy(copy.deepcopy(policy.model), policy.tokenizer, name="gate-candidate")
        gate = PublishGate(serve.gate, rubric, hooks.wishes_of, candidate, policy, out / "gate_lengths.json")
    return Publisher(trainer, policy, out, gate=gate, alarms=serve.alarms, keep_versions=serve.keep_versions,
                     on_change=hooks.on_training)


def adapter_slots(serve: ServeSection) -> int:
    """The served model's adapter slots with ``serve.adapters: per_user``: the base model's (0), one a user, and
    the publish gate's candidate's when it gates; 0 with shared weights."""
    if serve.adapters != "per_user":
        return 0
    return serve.max_users + 1 + int(serve.train and serve.gate.enabled)


def _per_user(config: RunConfig, stack: Stack, out: Path, hooks: LearnerHooks) -> PersonalLearning:
    """One adapter per user on one base model (the stack's multi-adapter policy; the judges read its base
    model, slot 0); the adapters saved before a restart are restored. Each user's steps pass their own publish
    gate (``serve.gate``: decoded on the spare slot :func:`adapter_slots` counts) and alarms."""
    from clawgym.personal.user_adapters import UserAdapters, UserAdapterTrainer, UserGating

    serve, trainer = config.serve, stack.trainer
    assert trainer is not None  # the stack keeps a trainer for per-user adapters
    gated = serve.train and serve.gate.enabled
    adapters = UserAdapters(stack.policy, out / "adapters", candidate=gated)
    rubric = _rubric(config, _base_judge(stack, trainer), hooks) if gated else None
    if gated:
        assert hooks.wishes_of is not None  # the gate scores replies against the wishes
    gating = UserGating(serve.gate if gated else None, rubric, hooks.wishes_of, serve.alarms, serve.keep_versions)
    learner = UserAdapterTrainer(trainer, adapters, batch_size=serve.batch_size, max_staleness=serve.max_staleness,
                                 output_dir=out, baseline=serve.baseline, gating=gating, on_step=hooks.on_step,
                                 on_error=hooks.on_error, on_training=hooks.on_training)
    for user, outcome in adapters.restore(trainer).items():
        print(f"  adapter of {user}: {outcome}")
    return PersonalLearning(learner if serve.train else None, adapters)


def _base_judge(stack: Stack, trainer: Trainer) -> Any:
    """What the per-user gate's wish judge reads: a judge model of its own, else the base model on the trainer's
    copy (the served model's slot 0 cannot be read outside its engine: see
    :class:`~clawgym.personal.user_adapters.TrainerBase`)."""
    from clawgym.inference.multi_adapter import AdapterPolicy
    from clawgym.personal.user_adapters import TrainerBase

    judge = stack.judge_policy
    if judge is None or isinstance(judge, AdapterPolicy):
        return TrainerBase(trainer)  # type: ignore[arg-type]  # per-user adapters train with the torch trainer
    return judge


def _rubric(config: RunConfig, judge_policy: Policy, hooks: LearnerHooks) -> RubricJudge:
    """The wish judge the hindsight groups and the publish gate share (one cache), on the judge's model."""
    from clawgym.personal.rubric import RubricJudge

    if not hasattr(judge_policy, "model"):
        raise ConfigError("serve.hindsight_k and serve.gate: the rubric judge reads label probabilities from a "
                          f"local hf model, and the judge {config.judge.model!r} is not one")
    cues = config.serve.rubric_cues
    return RubricJudge(judge_policy, hooks.wishes_of, refusals_fail=config.serve.hindsight_refusals_fail,
                       answers_request=config.serve.hindsight_answers_request, checks_of=hooks.checks_of, cues=cues,
                       read_facts=cues)


def judge_model(config: RunConfig, stack: Stack) -> Any:
    """The model the wish judge reads (and that writes the wishes' compiled checks): the judge's own, else the
    served policy (shared weights) or the base model on the trainer's copy (per-user adapters)."""
    if config.serve.adapters == "per_user" and stack.trainer is not None:
        return _base_judge(stack, stack.trainer)
    return stack.judge_policy or stack.policy


def _hindsight_groups(config: RunConfig, stack: Stack, judge_policy: Policy, rubric: RubricJudge,
                      hooks: LearnerHooks) -> HindsightGroups:
    """Siblings from the served policy, scored by the rubric judge against the wish memory; the prompted ones
    from the stack's ``sibling_policy`` when it has one (``serve.hindsight_prompted_model``): the groups close it,
    unless it is the judge's, which the stack closes."""
    from clawgym.personal.hindsight import HindsightGroups, hindsight_settings

    policy = stack.policy
    sampler = stack.sibling_policy or policy
    return HindsightGroups(policy, rubric, hindsight_settings(config.serve), temperature=config.rollout.temperature,
                           teacher_hint=config.method == "hybrid", hint_format=config.trainer.hint_format,
                           sampler=sampler, owns_sampler=sampler is not policy and sampler is not judge_policy,
                           on_scored=hooks.on_scored, on_group=hooks.on_group)
