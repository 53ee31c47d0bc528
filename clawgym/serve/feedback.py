"""Explicit feedback (``POST /v1/feedback``): a thumb up/down and/or a correction, and how it combines
with the judge.

Body: ``{"response_id": "chatcmpl-…"}`` (the id the gateway returned) or ``{"session_id": "…"}`` (that
session's last turn), plus ``"thumb": "up" | "down"`` and/or ``"correction": "…"`` (what the answer
should have done). Bad bodies are 400, an unknown response or session 404, another user's turn 403,
feedback on a turn that already has some 409; none of them changes anything.

The rule, one sentence: **the person's explicit word beats the judge's reading of it.**

- thumb up -> verdict +1, thumb down -> -1; a correction without a thumb counts as -1 (it is a
  correction), with a thumb up it keeps +1;
- the correction becomes a hindsight hint ("The user's correction: …"), so OPD and Hybrid train on it;
- feedback that arrives before the turn is judged replaces the judge's verdict (its votes stay in the
  log for the judge's own evaluation); feedback on a turn already judged (and maybe trained) sends the
  turn to the trainer once more, carrying only the explicit signal.

Feedback is recorded in the turn log as its own event, once per turn.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from clawgym.rl.types import JSONValue, JudgeResult, Turn

THUMBS = ("up", "down")
MAX_CORRECTION_CHARS = 4000


class FeedbackError(ValueError):
    def __init__(self, status: int, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.param = param


@dataclass
class Feedback:
    response_id: str | None = None
    session_id: str | None = None
    thumb: str | None = None
    correction: str | None = None

    @property
    def score(self) -> float:
        return 1.0 if self.thumb == "up" else -1.0

    @property
    def hint(self) -> str | None:
        return f"The user's correction: {self.correction}" if self.correction else None

    def to_dict(self) -> dict[str, str]:
        return {k: v for k, v in asdict(self).items() if v is not None}


def parse_feedback(body: JSONValue) -> Feedback:
    if not isinstance(body, dict):
        raise FeedbackError(400, "the feedback body must be a JSON object")
    unknown = sorted(set(body) - {"response_id", "session_id", "thumb", "correction", "user"})
    if unknown:
        raise FeedbackError(400,
                            f"unknown field(s) {unknown}; use response_id or session_id, thumb, correction", unknown[0])
    feedback = Feedback(**{k: body.get(k) for k in ("response_id", "session_id", "thumb", "correction")})
    if (feedback.response_id is None) == (feedback.session_id is None):
        raise FeedbackError(400,
                            "give exactly one of response_id (the id a completion returned) or session_id",
                            "response_id")
    for name in ("response_id", "session_id", "correction"):
        value = getattr(feedback, name)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise FeedbackError(400, f"'{name}' must be a non-empty string", name)
    if feedback.thumb is not None and feedback.thumb not in THUMBS:
        raise FeedbackError(400, f"'thumb' must be 'up' or 'down', got {feedback.thumb!r}", "thumb")
    if feedback.thumb is None and feedback.correction is None:
        raise FeedbackError(400, "give a thumb ('up' or 'down') and/or a correction", "thumb")
    if feedback.correction is not None and len(feedback.correction) > MAX_CORRECTION_CHARS:
        raise FeedbackError(400, f"'correction' is longer than {MAX_CORRECTION_CHARS} characters", "correction")
    if feedback.response_id is not None:
        feedback.response_id = feedback.response_id.removeprefix("chatcmpl-")
    return feedback


def apply_feedback(turn: Turn) -> Turn:
    """Let the recorded feedback (``turn.info["feedback"]``) override the judge, by the module's rule."""
    data = turn.info.get("feedback")
    if not data:
        return turn
    feedback = Feedback(**data)
    verdicts = [name for name in turn.judge if name != "hint"]
    for name in verdicts:
        turn.judge[name] = JudgeResult(score=feedback.score, votes=turn.judge[name].votes, source="feedback",
                                       raw=turn.judge[name].raw)
    if not verdicts:
        turn.judge["feedback"] = JudgeResult(score=feedback.score, votes=[feedback.score], source="feedback")
    if feedback.hint:
        hint = turn.judge.get("hint")
        turn.judge["hint"] = JudgeResult(score=1.0, votes=hint.votes if hint else [1.0],
                                         hints=[feedback.hint], source="feedback", raw=hint.raw if hint else [])
    return turn


def feedback_only(turn: Turn) -> Turn:
    """A copy of an already-judged turn that carries only the explicit signal (for a late feedback)."""
    copy = Turn.from_dict(turn.to_dict())
    copy.judge = {}
    return apply_feedback(copy)
