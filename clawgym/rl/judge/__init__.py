"""The shared judge: one PRM / hint judge for every setting, plus free rule judges.

A :class:`Judge` (``base``) looks at one :class:`Turn` — context, action, next state — and returns a
:class:`JudgeResult` (or ``None`` when it has nothing to say). Results land in ``turn.judge[name]``; a judge
whose backend is down raises :class:`JudgeUnavailable` and the turn is judged again later.

- :class:`PRMJudge`: m votes from any Policy backend (often the frozen base model). Each vote must end
  with ``\\boxed{1}``, ``\\boxed{-1}`` or ``\\boxed{0}``; the *last* ``\\boxed{...}`` counts and anything
  else in it makes the vote invalid. Invalid output is retried (``max_retries``), then the vote is
  ``None`` and ignored. Majority of the valid votes -> {+1, -1, 0}; a tie or no valid vote -> 0.
- :class:`HintJudge`: m votes that may carry a hindsight hint between ``[HINT_START]`` and
  ``[HINT_END]`` when they score 1 (OpenClaw-RL's OPD format). Hints longer than ``min_hint_chars``
  (10) survive, are deduplicated after normalising case, whitespace and trailing punctuation, and the
  first ``max_hints`` (3) are kept **longest first** (OpenClaw-RL's ``_select_best_hint`` picks the
  longest; its top-k path keeps shortest first, available as ``hint_order="shortest"``).
  ``result.hints[0]`` is the chosen hint (:func:`chosen_hint`).
- Prompts come from ``clawgym/rl/judge_prompts/``: a frame per judge kind (``prm.txt``, ``hint.txt``)
  and a guide per setting (``guide.<setting>.txt``: terminal sees exit codes and output, toolcall the
  tool result, chat the user's reply, swe test output, gui the page observation). The setting comes
  from the judge's ``setting`` argument, else ``turn.info["setting"]``, else the env id. Templates are
  :class:`string.Template` text (``$task``, ``$context``, ``$action``, ``$next_state``), so the braces
  of ``\\boxed{}`` need no escaping and no template engine is needed.
- Every LLM judge bounds its concurrent calls with a semaphore and caches results by a hash of the
  rendered prompt (template + context tail + action + next state) and the judge model's name and m:
  the same turn twice costs one set of calls, even when both arrive at once.
- Rule judges read verifiable next states: tool errors (``Error:``), non-zero exit codes, failing
  tests, and the env's own answer check at termination. :class:`CompositeJudge` combines them with an
  LLM judge (the rule is documented there).
- The judge of a person's remembered wishes (the rubric judge, wish extraction) is chat-specific and lives
  with the rest of learning from a conversation, in :mod:`clawgym.personal`.
- :class:`JudgeStage` is the async stage: a worker pool draining a turn queue, so rollouts only ever
  enqueue (``on_turn=stage.submit``) and never wait for a verdict.
"""

from clawgym.rl.judge.base import Judge, JudgeUnavailable
from clawgym.rl.judge.llm import HintJudge, JudgeStats, LLMJudge, PRMJudge, Vote
from clawgym.rl.judge.parsing import (
    chosen_hint,
    majority,
    normalise_hint,
    parse_boxed,
    parse_hint,
    parse_verdict,
    select_hints,
)
from clawgym.rl.judge.prob import ProbJudge, ProbScorer, cue_verdict, hint_from_reply
from clawgym.rl.judge.prompts import (
    PROMPT_DIR,
    SETTING_NAMES,
    SETTINGS,
    PromptTemplates,
    clip,
    render_message,
    setting_for,
    turn_fields,
)
from clawgym.rl.judge.rules import (
    AnswerRule,
    CompositeJudge,
    ExitCodeRule,
    RuleJudge,
    TestsRule,
    ToolErrorRule,
    default_rules,
)
from clawgym.rl.judge.stage import JUDGE_TYPES, JudgeStage, StageStats, make_judges

__all__ = [
    # Also re-exported from the package's modules (imported above, used elsewhere only through them).
    "JudgeStats",
    "PROMPT_DIR",
    "SETTINGS",
    "SETTING_NAMES",
    "StageStats",
    "Vote",
    "clip",
    "normalise_hint",
    "render_message",
    "turn_fields",
    "AnswerRule",
    "CompositeJudge",
    "ExitCodeRule",
    "HintJudge",
    "JUDGE_TYPES",
    "Judge",
    "JudgeStage",
    "JudgeUnavailable",
    "LLMJudge",
    "PRMJudge",
    "ProbJudge",
    "ProbScorer",
    "cue_verdict",
    "hint_from_reply",
    "PromptTemplates",
    "RuleJudge",
    "TestsRule",
    "ToolErrorRule",
    "chosen_hint",
    "default_rules",
    "make_judges",
    "majority",
    "parse_boxed",
    "parse_hint",
    "parse_verdict",
    "select_hints",
    "setting_for",
]
