"""What makes a run resumable: the checkpoint (trainer + loop state, written atomically together) and
the per-step log of trained sample ids (``trained_ids.jsonl``).

On resume the log's entries of steps after the checkpoint are rolled back (those steps are re-done),
so every logged id is in the checkpoint's consumed set exactly once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NotRequired, TypedDict, cast

from clawgym.rl.loop.config import CHECKPOINT_DIR, LOOP_STATE, TRAINED_FILE
from clawgym.rl.trainer import Trainer
from clawgym.rl.trainer import checkpoint as ckpt
from clawgym.rl.types import JSONObject


class LoopState(TypedDict):
    """The loop's half of a checkpoint (``loop_state.json``), beside the trainer's."""

    step: int
    version: int
    groups_started: int
    consumed: list[str]  # sample ids trained on or dropped as stale
    counters: dict[str, float]
    refused: dict[str, int]
    config: JSONObject  # the LoopConfig, as ``dataclasses.asdict`` gives it
    curriculum: NotRequired[dict[str, dict[str, int]]]  # PassRateCurriculum.state_dict, when one runs


class TrainedRecord(TypedDict):
    """One line of ``trained_ids.jsonl``: a step's sample ids, trained and dropped as stale."""

    step: int
    trained: list[str]
    dropped: list[str]


def save_checkpoint(out: Path, trainer: Trainer, state: LoopState) -> None:
    """The trainer's state and the loop's ``state`` in one atomically replaced directory."""
    with ckpt.atomic_directory(out / CHECKPOINT_DIR) as tmp:
        trainer.save_checkpoint(tmp / "trainer")
        ckpt.write_json(tmp / LOOP_STATE, state)


def load_checkpoint(out: Path, trainer: Trainer) -> tuple[Path, LoopState] | None:
    """Load the last checkpoint into ``trainer``; its directory and loop state, or None without one."""
    try:
        directory = ckpt.resolve(out / CHECKPOINT_DIR)
    except FileNotFoundError:
        return None
    trainer.load_checkpoint(directory / "trainer")
    return directory, cast(LoopState, ckpt.read_json(directory / LOOP_STATE))


def append_trained(out: Path, record: TrainedRecord) -> None:
    """One step's ``{"step", "trained", "dropped"}`` sample ids, appended to the trained-ids log."""
    with (out / TRAINED_FILE).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


def rollback_trained_log(out: Path, step: int) -> None:
    """Keep only the log entries of steps up to ``step`` (the checkpoint's); the rest will be re-done."""
    path = out / TRAINED_FILE
    if not path.exists():
        return
    keep = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if int(record["step"]) <= step:
            keep.append(line)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(k + "\n" for k in keep), encoding="utf-8")
    tmp.replace(path)
