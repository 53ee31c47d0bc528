"""The records that flow through the RL loops: Turn -> (judge) -> Sample -> trainer.

Token in, token out: a Turn carries the exact prompt and response token ids the policy saw and
sampled, with the sampled tokens' logprobs and the policy version, so the trainer never re-tokenises
a rendering. Everything serialises to one JSON line and back (``to_dict`` / ``from_dict``).
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Protocol, TypeVar, Union

from clawgym.core.messages import Message

# A JSON value as ``json.loads`` returns it, and a JSON object: a JSONL row, a request body, a tool schema.
# The one alias for JSON payloads in rl/, personal/ and serve/.
JSONValue = Union[str, int, float, bool, None, list["JSONValue"], dict[str, "JSONValue"]]
JSONObject = dict[str, JSONValue]
Action = Union[str, Message]  # what an env's ``step`` takes: the assistant's text or its message
T = TypeVar("T")


class Record(Protocol):
    """A record that serialises to one JSON line (``to_dict``) and reads back (``from_dict``)."""

    def to_dict(self) -> JSONObject: ...

    @classmethod
    def from_dict(cls, data: JSONObject) -> Record: ...


def new_id() -> str:
    return uuid.uuid4().hex[:16]


def from_dict_with_records(cls: type[T], data: JSONObject, key: str, record_cls: type[Record]) -> T:
    """``cls(**data)`` for a record that holds a list of records: ``data[key]`` (dicts, as JSON gives them)
    becomes ``record_cls`` objects first."""
    data = dict(data)
    data[key] = [record_cls.from_dict(item) for item in data.get(key, [])]
    return cls(**data)


@dataclass
class JudgeResult:
    """One judge's verdict on a turn: a score in {+1, -1, 0}, votes, and hindsight hints."""

    score: float = 0.0
    votes: list[float | None] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    source: str = ""  # "prm", "hint", "rule:<name>"
    raw: list[str] = field(default_factory=list)


@dataclass
class Turn:
    """One assistant action with its context and the next state it caused."""

    episode_id: str
    turn_index: int
    context: list[Message]
    action: Message
    next_state: list[Message] = field(default_factory=list)
    prompt_ids: list[int] = field(default_factory=list)
    response_ids: list[int] = field(default_factory=list)
    response_logprobs: list[float] = field(default_factory=list)
    policy_version: int = 0
    env_id: str = ""
    task_id: str = ""
    session_id: str = ""
    group_id: str = ""
    env_reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    info: dict[str, object] = field(default_factory=dict)
    judge: dict[str, JudgeResult] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    turn_id: str = field(default_factory=new_id)

    def to_dict(self) -> JSONObject:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: JSONObject) -> "Turn":
        data = dict(data)
        data["judge"] = {k: JudgeResult(**v) for k, v in (data.get("judge") or {}).items()}
        return cls(**data)


@dataclass
class Trajectory:
    """A whole episode: its turns in order, the final reward and whether it succeeded."""

    episode_id: str
    env_id: str
    task_id: str
    turns: list[Turn] = field(default_factory=list)
    reward: float = 0.0
    success: bool = False
    group_id: str = ""
    seed: int | None = None
    error: str | None = None  # a failed episode is recorded, not fatal
    info: dict[str, object] = field(default_factory=dict)
    wall_s: float = 0.0

    def to_dict(self) -> JSONObject:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: JSONObject) -> "Trajectory":
        return from_dict_with_records(cls, data, "turns", Turn)


@dataclass
class Sample:
    """One training example: prompt + response tokens, the old logprobs, and the learning signal.

    ``reward`` is the scalar the advantage is built from (outcome, PRM score, or their step-wise
    mix); ``teacher_logprobs`` (OPD) are filled in by the trainer from ``hint``. ``off_policy``: the
    response was sampled from another prompt (a hindsight sibling that read the user's wishes), so
    ``old_logprobs`` are that prompt's and the trainer takes its own logprobs before the update as the
    old policy of the PPO ratio.
    """

    prompt_ids: list[int]
    response_ids: list[int]
    old_logprobs: list[float]
    reward: float = 0.0
    loss_mask: list[int] = field(default_factory=list)
    advantage: float | None = None
    hint: str | None = None
    hint_messages: list[Message] | None = None
    teacher_logprobs: list[float] | None = None
    group_id: str = ""
    policy_version: int = 0
    turn_id: str = ""
    sample_id: str = field(default_factory=new_id)
    metadata: dict[str, object] = field(default_factory=dict)
    off_policy: bool = False

    def __post_init__(self) -> None:
        if len(self.old_logprobs) != len(self.response_ids):
            raise ValueError(
                f"old_logprobs ({len(self.old_logprobs)}) and response_ids ({len(self.response_ids)}) differ in length"
            )
        if not self.loss_mask:
            self.loss_mask = [1] * len(self.response_ids)

    def to_dict(self) -> JSONObject:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: JSONObject) -> "Sample":
        return cls(**data)


def write_jsonl(path: str | Path, records: Iterable[Record | JSONObject], mode: str = "a") -> None:
    """Append records (dataclasses with ``to_dict`` or plain dicts) as JSON lines, flushed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open(mode, encoding="utf-8") as handle:
        for record in records:
            data = record.to_dict() if hasattr(record, "to_dict") else record
            handle.write(json.dumps(data, ensure_ascii=False) + "\n")
        handle.flush()


def read_jsonl(path: str | Path, cls: type[T] | None = None) -> Iterator[T | JSONObject]:
    """Read JSON lines, optionally into ``cls.from_dict``; a torn last line (crash) is skipped."""
    with Path(path).open("r", encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                continue
            yield cls.from_dict(data) if cls is not None else data  # type: ignore[union-attr]
