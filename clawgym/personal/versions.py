"""Published versions, kept for rollback: one trainer checkpoint per version the people were served.

The personal trainer's ``<out>/checkpoint`` always holds the weights that serve (a restart loads it); each
time it changes (the initial weights, a published step, a rollback) a copy goes to ``<out>/versions/v<N>``
and a line to ``<out>/versions/index.json``. The oldest copies beyond ``keep`` are removed, never the one
that serves. A rollback to version N serves N's weights again under a new version number (versions only
grow, so the turn log's ``policy_version`` always names one set of weights).
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clawgym.rl.types import JSONObject


class VersionStore:
    def __init__(self, root: Path, keep: int) -> None:
        if keep < 1:
            raise ValueError("keep must be at least 1")
        self.root = root
        self.keep = keep
        self.root.mkdir(parents=True, exist_ok=True)
        self._index = self.root / "index.json"
        self.entries: list[JSONObject] = (json.loads(self._index.read_text(encoding="utf-8"))
                                          if self._index.exists() else [])

    def path(self, version: int) -> Path:
        return self.root / f"v{version}"

    def has(self, version: int) -> bool:
        return any(e["version"] == version for e in self.entries) and self.path(version).is_dir()

    def latest(self) -> int:
        """The highest version ever kept (-1 with none): a rollback's new number is one more."""
        return max((int(e["version"]) for e in self.entries), default=-1)

    def add(self, checkpoint: Path, version: int, source: str, **facts: float | str | None) -> None:
        """Keep a copy of ``checkpoint`` (the trainer's, as it serves ``version``) and prune the oldest."""
        target = self.path(version)
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(checkpoint, target)
        self.entries = [e for e in self.entries if e["version"] != version]
        self.entries.append({"version": version, "source": source, "saved_at": round(time.time(), 3), **facts})
        while len(self.entries) > self.keep:
            dropped = self.entries.pop(0)
            shutil.rmtree(self.path(int(dropped["version"])), ignore_errors=True)
        self._write()

    def listing(self, serving: int) -> list[JSONObject]:
        """Every kept version, newest first, marked when it is the one serving."""
        return [{**e, "serving": e["version"] == serving} for e in reversed(self.entries)]

    def _write(self) -> None:
        tmp = self._index.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.entries, indent=1), encoding="utf-8")
        tmp.replace(self._index)
