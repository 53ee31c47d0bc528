"""The async judge stage (a worker pool over a turn queue) and judges built from a CLI spec."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Awaitable, Callable, Sequence, Union

from clawgym.core.policy import Policy
from clawgym.rl.judge.base import Judge, JudgeUnavailable
from clawgym.rl.judge.llm import HintJudge, PRMJudge
from clawgym.rl.judge.prob import ProbJudge, ProbScorer
from clawgym.rl.judge.rules import CompositeJudge, default_rules
from clawgym.rl.methods import JUDGE_TYPES, PROB_JUDGES
from clawgym.rl.types import JudgeResult, Turn

logger = logging.getLogger(__name__)

TurnCallback = Callable[[Turn], Union[Awaitable[None], None]]


@dataclass
class StageStats:
    submitted: int = 0
    judged: int = 0
    errors: int = 0
    unavailable: int = 0  # judge attempts that found the judge down or too slow (the turn waited and retried)
    waiting: int = 0  # turns waiting now for a judge that is down


class JudgeStage:
    """A worker pool draining a turn queue through one or more judges (the async judge loop).

    ``submit`` never waits (the queue is unbounded), so it is a valid ``on_turn`` for the rollout
    pool. Each turn is judged by every judge concurrently; results go into ``turn.judge[judge.name]``,
    a judge that fails leaves a 0 result with the error in ``raw`` (the turn is never lost), and
    ``on_judged(turn)`` runs after all judges are done with it. ``await stage.join()`` waits for the
    queue to drain.

    A judge that is down or slow (it raises :class:`JudgeUnavailable`) is different from a judge bug:
    the turn goes back to the queue and is judged again after ``retry_s`` (doubling up to
    ``max_retry_s``), so it is never lost and never half-judged; users are never blocked (``submit``
    does not wait). The log says so once per outage and ``stats.unavailable`` / ``stats.waiting`` count it.
    """

    def __init__(self, judges: Judge | Sequence[Judge], *, workers: int = 4, on_judged: TurnCallback | None = None,
                 retry_s: float = 2.0, max_retry_s: float = 120.0) -> None:
        self.judges: list[Judge] = [judges] if not isinstance(judges, (list, tuple)) else list(judges)
        if not self.judges:
            raise ValueError("a judge stage needs at least one judge")
        names = [j.name for j in self.judges]
        if len(set(names)) != len(names):
            raise ValueError(f"judge names must be unique, got {names}")
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.workers = workers
        self.on_judged = on_judged
        self.retry_s = retry_s
        self.max_retry_s = max_retry_s
        self._backoff = retry_s
        self._down_since: float | None = None
        self.stats = StageStats()
        self._queue: asyncio.Queue[Turn] = asyncio.Queue()
        self._tasks: list[asyncio.Task] = []

    async def start(self) -> "JudgeStage":
        if not self._tasks:
            self._tasks = [asyncio.create_task(self._worker(), name=f"clawgym-judge-{i}") for i in range(self.workers)]
        return self

    def submit(self, turn: Turn) -> None:
        """Enqueue a turn (never blocks). Start the stage first."""
        if not self._tasks:
            raise RuntimeError("the judge stage is not running: call `await stage.start()` first")
        turn.timings.setdefault("queued_at", time.time())
        self.stats.submitted += 1
        self._queue.put_nowait(turn)

    async def join(self) -> None:
        await self._queue.join()

    async def close(self, timeout_s: float | None = None) -> None:
        """Finish the queued turns (at most ``timeout_s``: a judge that is down must not hang a shutdown;
        turns left unjudged stay in the caller's durable log), then stop the workers."""
        if self._tasks:
            try:
                await asyncio.wait_for(self.join(), timeout_s)
            except asyncio.TimeoutError:
                logger.warning("judge stage closed with %d turn(s) unjudged (judge unavailable)", self._queue.qsize())
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            self._tasks = []

    async def __aenter__(self) -> "JudgeStage":
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def judge_turn(self, turn: Turn) -> Turn:
        """Judge one turn with every judge now (also what the workers do).

        Raises :class:`JudgeUnavailable` when a judge is down; the results of the others are not kept
        (the whole turn is judged again later, so a verdict and its hint always come from one attempt).
        """
        results = await asyncio.gather(*(j.judge(turn) for j in self.judges), return_exceptions=True)
        down = [r for r in results if isinstance(r, JudgeUnavailable)]
        if down:
            raise down[0]
        for judge, result in zip(self.judges, results):
            if isinstance(result, BaseException):
                if isinstance(result, asyncio.CancelledError):
                    raise result
                self.stats.errors += 1
                logger.error("judge %s failed on turn %s: %r", judge.name, turn.turn_id, result)
                turn.judge[judge.name] = JudgeResult(score=0.0, source="error",
                                                     raw=[f"{type(result).__name__}: {result}"])
            elif result is not None:
                turn.judge[judge.name] = result
        turn.timings["judged_at"] = time.time()
        return turn

    async def _wait_and_requeue(self, turn: Turn, exc: Exception) -> None:
        """The judge is down: back off, then put the turn back (before ``task_done``, so ``join`` waits)."""
        self.stats.unavailable += 1
        if not turn.timings.get("judge_waiting"):
            turn.timings["judge_waiting"] = 1.0
            self.stats.waiting += 1
        if self._down_since is None:
            self._down_since = time.time()
            logger.warning("judge unavailable (%s): turns wait in the queue and are judged when it is back "
                           "(retrying every %g-%g s)", exc, self.retry_s, self.max_retry_s)
        delay, self._backoff = self._backoff, min(self._backoff * 2, self.max_retry_s)
        await asyncio.sleep(delay)
        self._queue.put_nowait(turn)

    async def _worker(self) -> None:
        while True:
            turn = await self._queue.get()
            try:
                try:
                    await self.judge_turn(turn)
                except JudgeUnavailable as exc:
                    await self._wait_and_requeue(turn, exc)
                    continue
                if turn.timings.pop("judge_waiting", None):
                    self.stats.waiting -= 1
                if self._down_since is not None:
                    logger.warning("judge is back after %.1f s; %d turn(s) still waiting",
                                   time.time() - self._down_since, self.stats.waiting)
                    self._down_since = None
                self._backoff = self.retry_s
                self.stats.judged += 1
                if self.on_judged is not None:
                    out = self.on_judged(turn)
                    if asyncio.iscoroutine(out):
                        await out
            except asyncio.CancelledError:
                raise
            except Exception:
                self.stats.errors += 1
                logger.exception("judging turn %s failed", turn.turn_id)
            finally:
                self._queue.task_done()


def make_judges(spec: str, policy: Policy | None = None, *, m: int = 3, setting: str | None = None,
                **kwargs: object) -> list[Judge]:
    """Judges from a CLI string: ``prm``, ``hint``, ``rules``, ``rules+prm`` (composite), ``prob`` /
    ``probhint`` (label-probability verdicts / + rule hints, named ``prob`` / ``hint``), comma-joined.

    ``prm``/``hint`` need a judge ``policy``. ``rules+prm`` is a :class:`CompositeJudge` named ``judge``.
    """
    judges: list[Judge] = []
    scorer = None
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        if part in ("prm", "hint", "rules+prm") and policy is None:
            raise ValueError(f"judge {part!r} needs a judge policy")
        if part == "prm":
            judges.append(PRMJudge(policy, m=m, setting=setting, **kwargs))  # type: ignore[arg-type]
        elif part == "hint":
            judges.append(HintJudge(policy, m=m, setting=setting, **kwargs))  # type: ignore[arg-type]
        elif part in PROB_JUDGES:  # one shared, batched scorer
            if policy is not None and scorer is None:
                scorer = ProbScorer(policy)
            judges.append(ProbJudge(name="prob" if part == "prob" else "hint", hints=part == "probhint", scorer=scorer))
        elif part == "rules":
            judges.append(CompositeJudge(default_rules(), None, name="rules"))
        elif part == "rules+prm":
            judges.append(CompositeJudge(default_rules(),
                                         PRMJudge(policy, m=m, setting=setting, **kwargs)))  # type: ignore[arg-type]
        else:
            raise ValueError(f"unknown judge {part!r}: use one of {', '.join(JUDGE_TYPES)} (comma-separated)")
    if not judges:
        raise ValueError("no judge given")
    return judges
