"""Deployed mode's fourth loop: the served policy learns from its own judged chat turns.

The gateway hands every judged main-line turn to :meth:`PersonalTrainer.add` (never blocks: a list
append). A background task trains whenever ``batch_size`` samples are waiting, in a thread, and then
publishes the weights to the served policy between two decoding steps — users keep being answered
by the current weights the whole time, and nobody ever gets a 503.

The learning signal is OpenClaw-RL's personal-agent one, without its traps:
- grpo: the PRM verdict r ∈ {+1, −1} of the turn, minus a baseline: the mean verdict of the step's
  batch (``baseline: batch``, the default; every turn is its own group, so the batch is the group).
  OpenClaw-RL uses A = r as is (``baseline: none``); a person who is never satisfied gives only −1
  verdicts, and A = −1 on every sampled token pushes probability to tokens nobody sampled. A 0 verdict, or a batch whose
  verdicts all agree, trains nothing by the verdict; such turns are dropped (``zero_advantage``)
  unless a hint still teaches them;
- opd / hybrid: the hint judge's chosen hindsight hint makes the teacher prompt; hybrid also trains on
  the verdict (a PRM judge's, else the hint judge's own vote), so it never silently becomes opd;
- token in, token out: turns without exact token ids and logprobs are refused and counted;
- samples older than ``max_staleness`` policy versions are dropped. The served policy's version is
  the trainer's (each publication sets it, and so does a restart from a checkpoint), so the versions
  in the turn log stay comparable across restarts;
- a step that raises (out of memory on a long turn, a full disk) is logged and counted (``errors``,
  ``refused["train_error"]``, the dashboard); its batch is dropped and training goes on;
- never worse for the people (:mod:`clawgym.personal.publishing`): a step's weights publish only when the
  publish gate (``serve.gate``) finds them not worse on the people's held-back requests and no collapse alarm
  (``serve.alarms``) fires; otherwise the old weights keep serving and the trainer returns to them (an alarm
  also pauses training). Every published version is kept for rollback;
- hindsight (``serve.hindsight_k``): each judged turn becomes a GRPO group of the person's reply and
  sibling replies scored by the rubric judge (:mod:`clawgym.personal.hindsight`); a batch takes whole groups.
  With method hybrid each member also carries the OPD term of a teacher that reads the remembered wishes.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, get_args

from clawgym.personal.teacher_hint import hint_with_wishes, teacher_context
from clawgym.rl.judge import chosen_hint
from clawgym.rl.launch.schema import Baseline
from clawgym.rl.loop import apply_staleness, prm_score, refuse_reason
from clawgym.rl.methods import NEEDS_HINT, USES_HINTS
from clawgym.rl.trainer import Trainer
from clawgym.rl.types import JSONObject, JSONValue, Sample, Turn, read_jsonl, write_jsonl

if TYPE_CHECKING:
    from clawgym.personal.hindsight import HindsightGroups
    from clawgym.personal.publishing import Publisher
    from clawgym.rl.trainer.base import UpdatablePolicy

logger = logging.getLogger(__name__)

BASELINES = get_args(Baseline)  # the serve.baseline values, declared once in the config model


def sample_from_turn(turn: Turn, method: str, temperature: float = 1.0,
                     wishes: list[str] | None = None) -> tuple[Sample | None, str | None]:
    """A personal-agent Sample from one judged turn, or (None, why not).

    ``temperature`` is the trainer's: a turn sampled at another temperature, or with top-p, has
    logprobs of another distribution and would train off-policy (turns logged before the gateway
    recorded its sampling were served at temperature 1.0). ``wishes``: the person's remembered wishes
    (``serve.teacher_wishes``): the OPD teacher reads all of them, not only this turn's hint.
    """
    reason = untrainable_reason(turn, temperature)
    if reason is not None:
        return None, reason
    score = prm_score(turn)
    if score is None and method == "hybrid" and "hint" in turn.judge and turn.judge["hint"].source != "error":
        score = float(turn.judge["hint"].score)  # hint judge only: its vote is the verdict (else hybrid = opd)
    hint = chosen_hint(turn.judge.get("hint")) if method in USES_HINTS else None
    if method in USES_HINTS and wishes:
        hint = hint_with_wishes(hint, wishes)
    if method in NEEDS_HINT and not hint:
        return None, "no_hint"
    if method == "grpo" and not score:
        return None, "no_verdict"
    if method == "hybrid" and not score and not hint:
        return None, "no_signal"
    return Sample(
        prompt_ids=list(turn.prompt_ids), response_ids=list(turn.response_ids),
        old_logprobs=list(turn.response_logprobs), reward=float(score or 0.0), advantage=float(score or 0.0),
        hint=hint, hint_messages=list(turn.context) if hint else None, policy_version=int(turn.policy_version),
        turn_id=turn.turn_id, metadata={"session_id": turn.session_id, "user": str(turn.info.get("user") or "default"),
                                        **(teacher_context(turn) if hint else {})},
    ), None


def untrainable_reason(turn: Turn, temperature: float) -> str | None:
    """Why the turn's own tokens cannot be trained on (no ids or logprobs, or sampled at another
    temperature or with top-p: logprobs of another distribution), or None."""
    reason = refuse_reason(turn)
    if reason is not None:
        return reason
    sampling = turn.info.get("sampling") or {}
    if sampling.get("temperature", 1.0) != temperature or sampling.get("top_p", 1.0) != 1.0:
        return "off_policy_sampling"
    return None


def apply_baseline(samples: list[Sample], baseline: str) -> tuple[list[Sample], int]:
    """Subtract the batch's mean verdict from each verdict's advantage (``batch``) or keep A = r
    (``none``); returns the samples that still teach something and how many were dropped (no
    verdict advantage left and no hint). Members of a hindsight group (a ``group_id``) keep the
    advantage their group gave them."""
    if baseline not in BASELINES:
        raise ValueError(f"unknown baseline {baseline!r}; expected one of {BASELINES}")
    solo = [s for s in samples if not s.group_id]
    if baseline == "batch":
        verdicts = [s.reward for s in solo if s.reward]
        mean = sum(verdicts) / len(verdicts) if verdicts else 0.0
        for s in solo:
            s.advantage = float(s.reward - mean) if s.reward else 0.0
    kept = [s for s in samples if s.advantage or s.hint]
    return kept, len(samples) - len(kept)


# A step's line in ``train_steps.jsonl`` and what ``on_step`` gets: ``step``, ``samples``, ``policy_version``,
# ``trained`` (turn ids) and, per user, ``user``; then the trainer's numeric metrics under their own names.
StepRecord = JSONObject
OnStep = Callable[[StepRecord], object]  # the dashboard's hook; what it returns is ignored
OnError = Callable[[str, str], object]  # (user, message) of a failed step


def step_record(metrics: Mapping[str, float], **own: JSONValue) -> StepRecord:
    """A step's line in ``train_steps.jsonl``: its own fields, then the trainer's numeric metrics. The own
    fields win: the trainer reports a "step" and "samples" of its own (floats, counted its way), which used
    to overwrite the personal trainer's count."""
    return {**own, **{k: float(v) for k, v in metrics.items() if isinstance(v, (int, float)) and k not in own}}


class BackgroundTrainer:
    """The plumbing both personal trainers share: a train task started lazily on the serving loop,
    woken when a batch is due, stopped by :meth:`stop` / :meth:`close`; each step's record is appended
    to ``<out>/train_steps.jsonl`` and handed to ``on_step`` (the dashboard), each failed step to
    ``on_error``."""

    task_name = "clawgym-trainer"

    def __init__(self, trainer: Trainer, *, batch_size: int, max_staleness: int, output_dir: str | Path,
                 baseline: str = "batch", on_step: OnStep | None = None,
                 on_error: OnError | None = None) -> None:
        if baseline not in BASELINES:
            raise ValueError(f"unknown baseline {baseline!r}; expected one of {BASELINES}")
        self.trainer = trainer
        self.baseline = baseline
        self.method = str(trainer.config.method)
        self.temperature = float(trainer.config.temperature)  # rollout.temperature: turns sampled otherwise are refused
        self.batch_size = batch_size
        self.max_staleness = max_staleness
        self.out = Path(output_dir)
        self.on_step = on_step  # every recorded step (the dashboard)
        self.on_error = on_error  # (user, message) of a failed step (the dashboard)
        self.errors = 0  # steps that raised
        self.last_error: str | None = None
        self.stopped = False  # set by stop(): no step starts any more
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None

    def _wake_up(self) -> None:
        if self.stopped:
            return
        if self._task is None or self._task.done():  # lazily, on the serving loop where judged turns arrive
            self._task = asyncio.get_running_loop().create_task(self._run(), name=self.task_name)
        self._wake.set()

    async def _run(self) -> None:
        while not self.stopped:
            await self._wake.wait()
            self._wake.clear()
            if not self.stopped:
                await self._train_due()

    def _step_failed(self, exc: Exception, samples: int, user: str = "default") -> None:
        """A step raised: log and count it, drop its batch (it would fail the same way again) and let
        the next batch train; left alone, the exception would end the train task for good, silently."""
        self.errors += 1
        self.refused["train_error"] += samples
        self.last_error = f"{type(exc).__name__}: {exc}"
        logger.error("train step on %d turns failed (they are dropped; training goes on): %s", samples,
                     self.last_error, exc_info=exc)
        if self.on_error is not None:
            self.on_error(user, self.last_error)

    async def stop(self) -> None:
        """Train no more: the step in flight finishes (published and recorded), no other starts, so the
        served weights stay fixed from here on (what a before/after comparison must score)."""
        self.stopped = True
        self._wake.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _train_due(self) -> None:
        raise NotImplementedError

    def trainable(self, batch: list[Sample]) -> list[Sample]:
        """The batch's samples that are fresh enough and still teach something after the baseline;
        the rest are counted in ``refused`` (stale, zero_advantage)."""
        kept, dropped = apply_baseline(self.fresh(batch), self.baseline)
        self.refused["zero_advantage"] += dropped
        return kept

    def fresh(self, samples: list[Sample]) -> list[Sample]:
        """The samples at most ``max_staleness`` versions behind the trainer; the others are counted stale
        (the loop's filter, :func:`~clawgym.rl.groups.apply_staleness`, in its ``drop`` mode)."""
        fresh, stale = apply_staleness(samples, int(self.trainer.version), self.max_staleness)
        self.refused["stale"] += len(stale)
        return fresh

    def _record_step(self, record: StepRecord) -> None:
        write_jsonl(self.out / "train_steps.jsonl", [record])
        if self.on_step is not None:
            self.on_step(record)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None


class PersonalTrainer(BackgroundTrainer):
    """One set of weights for everyone; ``max_steps`` (None: no limit) ends training once that many
    steps are recorded (a benchmark's exact step budget)."""

    task_name = "clawgym-personal-trainer"
    per_user = False  # one set of weights serves everyone: the controls below take no user

    def __init__(self, trainer: Trainer, policy: UpdatablePolicy, *, batch_size: int = 8, max_staleness: int = 2,
                 output_dir: str | Path = "runs/chat", baseline: str = "batch", max_steps: int | None = None,
                 hindsight: HindsightGroups | None = None, wishes_of: Callable[[str], list[str]] | None = None,
                 on_step: OnStep | None = None, on_error: OnError | None = None,
                 publisher: Publisher | None = None) -> None:
        from clawgym.personal.publishing import Publisher

        self.policy = policy
        self.max_steps = max_steps
        super().__init__(trainer, batch_size=batch_size, max_staleness=max_staleness, output_dir=output_dir,
                         baseline=baseline, on_step=on_step, on_error=on_error)
        if hindsight is not None and self.method not in ("grpo", "hybrid"):
            raise ValueError(f"hindsight groups train with method grpo or hybrid (their rubric rewards are the "
                             f"signal), not {self.method!r}")
        self.out.mkdir(parents=True, exist_ok=True)
        # the gate, the alarms and the kept versions (without a gate or alarms every step publishes)
        self.publisher = publisher if publisher is not None else Publisher(trainer, policy, self.out)
        self.pending: list[Sample] = []
        self.refused: collections.Counter = collections.Counter()
        self.steps = 0
        self.busy = False  # a train step (or a weight swap) is running now
        self.hindsight = hindsight  # HindsightGroups (clawgym.personal.hindsight) or None
        self.wishes_of = wishes_of  # serve.teacher_wishes: user -> remembered wishes, for the OPD teacher's hint
        self.awaiting_group: collections.deque[Turn] = collections.deque()  # judged turns waiting for their group
        self._grouping: asyncio.Task | None = None
        self._group_wake = asyncio.Event()

    def _keep(self, turn: Turn, *, recovering: bool = False) -> bool:
        if self.hindsight is not None:
            return self._await_group(turn, recovering)
        wishes = self.wishes_of(str(turn.info.get("user") or "default")) if self.wishes_of is not None else None
        sample, reason = sample_from_turn(turn, self.method, self.temperature, wishes)
        if sample is None:
            self.refused[reason or "unknown"] += 1
            return False
        self.pending.append(sample)
        return True

    def _training(self) -> bool:
        if self.publisher.paused:
            self.refused["training_paused"] += 1
        return not self.publisher.paused

    def recover(self, turns: list[Turn]) -> int:
        """After a restart: queue the judged turns of the log that no finished step trained on (the gate holds
        back the same turns as before: it sees every judged turn, in the log's order)."""
        steps = self.out / "train_steps.jsonl"
        trained = {i for record in read_jsonl(steps) for i in record["trained"]} if steps.exists() else set()
        self.steps = sum(1 for _ in read_jsonl(steps)) if steps.exists() else 0
        kept = 0
        for turn in (t for t in turns if t.judge):
            if self.publisher.hold(turn) or turn.turn_id in trained:
                continue
            kept += self._training() and self._keep(turn, recovering=True)
        return kept

    def add(self, turn: Turn) -> None:
        """The gateway's ``on_judged``: keep the turn's sample (if trainable and not held back by the publish
        gate, and training is not paused) and wake the trainer."""
        if self.publisher.hold(turn) or not self._training() or not self._keep(turn):
            return
        if self.hindsight is not None:
            self._wake_grouping()
        elif self._task is None or len(self.pending) >= self.batch_size:
            self._wake_up()

    # ------------------------------------------------------------------ hindsight groups
    def _await_group(self, turn: Turn, recovering: bool) -> bool:
        reason = untrainable_reason(turn, self.temperature)
        if reason is None and not recovering and len(self.awaiting_group) >= self.hindsight.settings.max_queued:
            reason = "hindsight_busy"  # the groups fall behind the conversation: skip rather than lag further
        if reason is not None:
            self.refused[reason] += 1
            return False
        self.awaiting_group.append(turn)
        return True

    def _wake_grouping(self) -> None:
        if self.stopped:
            return
        if self._grouping is None or self._grouping.done():
            self._grouping = asyncio.get_running_loop().create_task(self._group_turns(), name="clawgym-hindsight")
        self._group_wake.set()

    async def _group_turns(self) -> None:
        """One turn at a time: sample its siblings, score the group, queue its samples, wake the trainer."""
        while not self.stopped and not self.budget_spent():
            if not self.awaiting_group:
                self._group_wake.clear()
                await self._group_wake.wait()
                continue
            turn = self.awaiting_group.popleft()
            try:
                samples, reason = await self.hindsight.build(turn, prm_score(turn))
            except Exception as exc:  # a failed group loses one turn, never the task
                logger.error("hindsight group of turn %s failed: %s", turn.turn_id, exc, exc_info=exc)
                samples, reason = None, "hindsight_error"
            if samples is None:
                self.refused[reason or "unknown"] += 1
                continue
            self.pending.extend(samples)
            if len(self.pending) >= self.batch_size:
                self._wake_up()

    def forget(self, user: str) -> int:
        """Forget-me: drop the user's samples and the turns waiting for their group; returns how many."""
        kept = [s for s in self.pending if s.metadata.get("user", "default") != user]
        waiting = [t for t in self.awaiting_group if str(t.info.get("user") or "default") != user]
        dropped = len(self.pending) - len(kept) + len(self.awaiting_group) - len(waiting)
        self.pending, self.awaiting_group = kept, collections.deque(waiting)
        return dropped + self.publisher.forget(user)

    # ------------------------------------------------------------------ versions, pause, resume
    def status(self, user: str | None = None) -> JSONObject:
        """The served version, the kept versions, the last gate verdict and alarms, whether training is paused."""
        return {**self.publisher.status(), "steps": self.steps, "pending": len(self.pending)}

    def resume(self, user: str | None = None) -> JSONObject:
        """Train again after an alarm paused training."""
        self.publisher.resume()
        if len(self.pending) >= self.batch_size:
            self._wake_up()
        return self.status()

    async def rollback(self, version: int, user: str | None = None) -> JSONObject:
        """Serve kept version ``version`` again; what was waiting to train on the later weights is dropped."""
        status = await self.publisher.rollback(version)
        self.refused["rolled_back"] += len(self.pending)
        self.pending.clear()
        return {**status, "steps": self.steps, "pending": 0}

    async def stop(self) -> None:
        self.stopped = True
        self._group_wake.set()  # the group being built is finished (its samples are never trained)
        if self._grouping is not None:
            await asyncio.gather(self._grouping, return_exceptions=True)
            self._grouping = None
        await super().stop()

    async def close(self) -> None:
        if self._grouping is not None:
            self._grouping.cancel()
            await asyncio.gather(self._grouping, return_exceptions=True)
            self._grouping = None
        if self.hindsight is not None:
            await self.hindsight.close()
        await self.publisher.close()
        await super().close()

    def take_batch(self) -> list[Sample]:
        """The next batch: ``batch_size`` samples, a hindsight group never split (a group larger than the
        batch is taken whole, alone)."""
        taken, i = 0, 0
        while i < len(self.pending):
            group = self.pending[i].group_id
            j = i + 1
            while group and j < len(self.pending) and self.pending[j].group_id == group:
                j += 1
            if taken and taken + (j - i) > self.batch_size:
                break
            taken, i = taken + (j - i), j
            if taken >= self.batch_size:
                break
        batch, self.pending = self.pending[:taken], self.pending[taken:]
        return batch

    async def _train_due(self) -> None:
        while not self.stopped and not self.budget_spent() and not self.publisher.paused:
            self.drop_stale()
            if len(self.pending) < self.batch_size:
                return
            await self.train_once()

    def budget_spent(self) -> bool:
        return self.max_steps is not None and self.steps >= self.max_steps

    def drop_stale(self) -> None:
        """Drop pending turns that are already too stale to train (the version only grows), before a
        batch is taken: every step then trains on a full batch. Taking the batch first would leave steps
        on the few fresh turns of a batch, which under Adam move the weights about as far as a full
        batch does, on a fraction of the signal."""
        self.pending = self.fresh(self.pending)

    async def train_once(self) -> StepRecord:
        """One step on the next batch; a step that raises is counted (:meth:`_step_failed`), not fatal."""
        batch = self.take_batch()
        fresh = self.trainable(batch)
        if not fresh:
            return {}
        try:
            return await self._step(fresh)
        except Exception as exc:
            self._step_failed(exc, len(fresh))
            return {}

    async def _step(self, fresh: list[Sample]) -> StepRecord:
        async with self.publisher.lock:  # a rollback waits for the step, and the other way round
            self.busy = True  # until the step is checkpointed and logged, so a shutdown never loses its record
            started = time.perf_counter()
            try:
                await self.publisher.prepare()
                metrics = await asyncio.to_thread(self.trainer.train_step, fresh)  # serving goes on meanwhile
                from clawgym.rl.trainer.transport import served_weights

                weights = await asyncio.to_thread(served_weights(self.trainer, self.policy))
                decision = await self.publisher.decide(metrics, weights)
                self.steps += 1
                if decision.publish:
                    # served version := trainer version, also after a restart or a step whose publication failed
                    served_version = await self.publisher.publish(weights, decision, self.steps)
                else:  # the old weights keep serving; the trainer returns to them
                    served_version = await self.publisher.refuse(decision)
                record = step_record(metrics, step=self.steps, samples=len(fresh), policy_version=served_version,
                                     trained=[s.turn_id for s in fresh], **decision.to_json(),
                                     seconds=round(time.perf_counter() - started, 3))
                write_jsonl(self.out / "train_steps.jsonl", [record])
            finally:
                self.busy = False
        if self.on_step is not None:  # (the record is written inside the busy section: a shutdown cannot lose it)
            self.on_step(record)
        logger.info("personal trainer step %d on %d turns -> %s (serving version %s)", self.steps, len(fresh),
                    "published" if decision.publish else "not published", served_version)
        if self.publisher.paused:
            logger.warning("personal training is paused: %s", self.publisher.reason)
        return record
