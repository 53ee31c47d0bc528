"""The bundled launcher configs (YAML), shipped as package data so ``clawgym train chat`` works anywhere.

A launcher is named by its file stem (``chat``, ``demo``, ``toolcall``, ...); a path to any YAML file
works too, so users keep their own configs wherever they like.
"""

from __future__ import annotations

from pathlib import Path

from clawgym.errors import UsageError

DIRECTORY = Path(__file__).resolve().parent


def bundled() -> dict[str, Path]:
    """Name -> path of every bundled launcher."""
    return {path.stem: path for path in sorted(DIRECTORY.glob("*.yaml"))}


def resolve(name_or_path: str | Path) -> Path:
    """An existing file path as is; else a bundled launcher's name (with or without ``.yaml``)."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    launchers = bundled()
    name = path.stem if path.suffix in (".yaml", ".yml") else path.name
    if path.parent in (Path("."), Path("launchers")) and name in launchers:
        return launchers[name]  # "chat", "chat.yaml", or the pre-package path "launchers/chat.yaml"
    raise UsageError(f"no config {str(name_or_path)!r}: not a file, and not a bundled launcher "
                     f"({', '.join(launchers)})")


def describe(path: Path) -> str:
    """The first comment line of a launcher: what it trains."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            return line.lstrip("# ").strip()
    return ""
