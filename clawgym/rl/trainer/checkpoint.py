"""Atomic checkpoint directories: everything is written to a temp sibling, then renamed into place.

A crash mid-save leaves the previous checkpoint untouched (plus a stray ``.tmp-`` directory that the
next save ignores). Replacing an existing checkpoint renames the old one aside first, so at every
instant either the old or the new directory is complete; :func:`resolve` finds the old one if a crash
hit the short window between the two renames.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clawgym.rl.types import JSONObject

COMPLETE_MARKER = "COMPLETE"


@contextlib.contextmanager
def atomic_directory(path: str | Path) -> Iterator[Path]:
    """Yield a temp directory; on a clean exit it becomes ``path`` (replacing it), on error it is removed."""
    target = Path(path).absolute()
    target.parent.mkdir(parents=True, exist_ok=True)
    token = uuid.uuid4().hex[:8]
    tmp = target.parent / f".{target.name}.tmp-{token}"
    tmp.mkdir()
    try:
        yield tmp
        (tmp / COMPLETE_MARKER).write_text("ok\n")
        _fsync_tree(tmp)
        old = target.parent / f".{target.name}.old-{token}"
        if target.exists():
            os.rename(target, old)
        os.rename(tmp, target)
        _fsync_dir(target.parent)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def resolve(path: str | Path) -> Path:
    """The complete checkpoint at ``path``, or the renamed-aside one a crash left behind; else raise."""
    target = Path(path).absolute()
    if (target / COMPLETE_MARKER).exists():
        return target
    for old in sorted(target.parent.glob(f".{target.name}.old-*")):
        if (old / COMPLETE_MARKER).exists():
            return old
    raise FileNotFoundError(f"no complete checkpoint at {target}")


def write_json(path: Path, data: Mapping[str, object]) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")


def read_json(path: Path) -> JSONObject:
    return json.loads(path.read_text(encoding="utf-8"))


def _fsync_tree(root: Path) -> None:
    for file in root.rglob("*"):
        if file.is_file():
            with open(file, "rb") as handle:
                os.fsync(handle.fileno())
    _fsync_dir(root)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
