"""What the rest of clawgym calls on a judge: the :class:`Judge` protocol and :class:`JudgeUnavailable`.

The judge stage (:class:`~clawgym.rl.judge.JudgeStage`), the async loop and the gateway see nothing else
of a judge: a ``name`` (its results land in ``turn.judge[name]``) and ``await judge(turn)``. Rule judges,
the LLM judges (PRM, hint), the label-probability judge and their composite all implement it.
"""

from __future__ import annotations

from typing import Protocol

from clawgym.rl.types import JudgeResult, Turn


class Judge(Protocol):
    """Anything that can judge a turn. ``None`` means "no opinion" (e.g. a rule that does not apply)."""

    name: str

    async def judge(self, turn: Turn) -> JudgeResult | None: ...


class JudgeUnavailable(RuntimeError):
    """The judge's backend is down or too slow: the stage retries the turn later (it is not a verdict)."""
