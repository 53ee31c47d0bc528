"""Rule judges that cost nothing (tool errors, exit codes, tests, the env's answer check) and the composite."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Sequence

from clawgym.core.messages import text_of
from clawgym.rl.judge.llm import LLMJudge
from clawgym.rl.judge.prompts import clip
from clawgym.rl.types import JudgeResult, Turn

EXIT_CODE = re.compile(r"exit[ _]code\s*[:=]?\s*(-?\d+)", re.IGNORECASE)
TEST_COUNTS = re.compile(r"(\d+)\s+(failed|passed|errors?)\b", re.IGNORECASE)
UNITTEST_FAILED = re.compile(r"FAILED \((?:failures|errors)=\d+")


def _tool_texts(turn: Turn) -> list[str]:
    return [text_of(m) for m in turn.next_state if m.get("role") == "tool"]


class RuleJudge:
    """A judge that costs nothing: ``verdict`` returns ``(score, reason)`` or None when it does not apply."""

    name = "rule"

    def verdict(self, turn: Turn) -> tuple[float, str] | None:
        raise NotImplementedError

    async def judge(self, turn: Turn) -> JudgeResult | None:
        verdict = self.verdict(turn)
        if verdict is None:
            return None
        score, reason = verdict
        return JudgeResult(score=float(score), votes=[float(score)], source=f"rule:{self.name}", raw=[reason])


class ToolErrorRule(RuleJudge):
    """-1 when a tool result in the next state is an error: it starts with ``Error:`` (the env contract's tool
    errors) or is a JSON object whose ``status`` is ``"error"`` (what OpenClaw sends back for a failed call:
    ``{"status": "error", "tool": "apply_patch", "error": "..."}``)."""

    name = "tool_error"

    def verdict(self, turn: Turn) -> tuple[float, str] | None:
        for text in _tool_texts(turn):
            if text.lstrip().startswith("Error:") or _json_status(text) == "error":
                return -1.0, f"tool error: {clip(text.strip(), 200)}"
        return None


def _json_status(text: str) -> str | None:
    """The ``status`` of a tool result that is a JSON object, else None."""
    body = text.strip()
    if not body.startswith("{"):
        return None
    try:
        value = json.loads(body)
    except json.JSONDecodeError:
        return None
    status = value.get("status") if isinstance(value, dict) else None
    return status.lower() if isinstance(status, str) else None


class ExitCodeRule(RuleJudge):
    """-1 when a tool result reports a non-zero ``exit code: N``; +1 for all-zero only if ``zero_is_good``."""

    name = "exit_code"

    def __init__(self, zero_is_good: bool = False) -> None:
        self.zero_is_good = zero_is_good

    def verdict(self, turn: Turn) -> tuple[float, str] | None:
        codes = [int(c) for text in _tool_texts(turn) for c in EXIT_CODE.findall(text)]
        if not codes:
            return None
        bad = [c for c in codes if c != 0]
        if bad:
            return -1.0, f"non-zero exit code {bad[0]}"
        return (1.0, "exit code 0") if self.zero_is_good else None


class TestsRule(RuleJudge):
    """Test output in the next state: any failure or error -> -1; only passes -> +1.

    Reads ``info["tests_failed"]``/``info["tests_passed"]`` when the env gives them, else pytest
    summaries (``3 passed, 1 failed``) and unittest's ``FAILED (failures=N)``.
    """

    name = "tests"
    __test__ = False  # not a pytest class

    def verdict(self, turn: Turn) -> tuple[float, str] | None:
        failed = turn.info.get("tests_failed")
        passed = turn.info.get("tests_passed")
        if failed is None and passed is None:
            counts = {"failed": 0, "passed": 0, "error": 0}
            seen = False
            for text in _tool_texts(turn):
                for number, kind in TEST_COUNTS.findall(text):
                    kind = kind.lower()
                    counts["passed" if kind == "passed" else "failed" if kind == "failed" else "error"] += int(number)
                    seen = True
                if UNITTEST_FAILED.search(text):
                    counts["failed"] += 1
                    seen = True
            if not seen:
                return None
            failed, passed = counts["failed"] + counts["error"], counts["passed"]
        failed, passed = int(failed or 0), int(passed or 0)
        if failed > 0:
            return -1.0, f"{failed} test(s) failing"
        if passed > 0:
            return 1.0, f"{passed} test(s) passing, none failing"
        return None


class AnswerRule(RuleJudge):
    """At termination, the env's own check of the final answer: success -> +1, else -1."""

    name = "answer"

    def verdict(self, turn: Turn) -> tuple[float, str] | None:
        if not turn.terminated:
            return None
        success = bool(turn.info.get("success", turn.env_reward > 0))
        return ((1.0, f"env reward {turn.env_reward}: answer accepted")
                if success else (-1.0, f"env reward {turn.env_reward}: answer rejected"))


def default_rules() -> list[RuleJudge]:
    return [ToolErrorRule(), ExitCodeRule(), TestsRule(), AnswerRule()]


class CompositeJudge:
    """Rules plus an LLM judge, combined by one documented rule.

    The rules that apply give a rule verdict: -1 if any says -1 (a verifiable failure wins), else +1.
    - ``mode="replace"`` (default): a rule verdict is final and the LLM is not called (it costs
      nothing, and a verifiable outcome beats an opinion); with no rule verdict the LLM decides.
    - ``mode="join"``: the LLM is always called (its votes and hints are kept); the score is the rule
      verdict when there is one, else the LLM's.
    """

    def __init__(self, rules: Sequence[RuleJudge] | None = None, llm: LLMJudge | None = None, *, mode: str = "replace",
                 name: str = "judge") -> None:
        if mode not in ("replace", "join"):
            raise ValueError(f"mode must be 'replace' or 'join', got {mode!r}")
        self.rules = list(default_rules() if rules is None else rules)
        self.llm = llm
        self.mode = mode
        self.name = name

    async def judge(self, turn: Turn) -> JudgeResult | None:
        ruled = [r for r in await asyncio.gather(*(rule.judge(turn) for rule in self.rules)) if r is not None]
        rule_score = None
        if ruled:
            rule_score = -1.0 if any(r.score < 0 for r in ruled) else 1.0
        if rule_score is not None and (self.mode == "replace" or self.llm is None):
            return JudgeResult(
                score=rule_score,
                votes=[r.score for r in ruled],
                source="+".join(r.source for r in ruled),
                raw=[reason for r in ruled for reason in r.raw],
            )
        if self.llm is None:
            return None
        result = await self.llm.judge(turn)
        if rule_score is not None:
            result.score = rule_score
            result.source = "+".join([r.source for r in ruled] + [result.source])
            result.raw = [reason for r in ruled for reason in r.raw] + result.raw
        return result
