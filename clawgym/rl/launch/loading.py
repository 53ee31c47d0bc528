"""A launcher config from YAML and ``--set a.b=c`` overrides, with pydantic's errors as one-line messages.

The model and its checks are :mod:`~clawgym.rl.launch.schema`'s; this module reads a file (a path or a
bundled launcher name), applies the overrides (an unknown key names the valid ones), validates, and says where
and what when something is wrong.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import yaml
from pydantic import BaseModel, ValidationError

from clawgym.rl.launch.schema import ConfigError, RunConfig

# ---- errors ------------------------------------------------------------------------------------

_EXPECTED = {"int": "an integer", "float": "a number", "bool": "true/false", "string": "a string",
             "dict": "a mapping", "list": "a list", "model": "a mapping"}


def _section(loc: Sequence[Any]) -> type[BaseModel] | None:
    cls: Any = RunConfig
    for key in loc:
        field = cls.model_fields.get(key) if isinstance(key, str) else None
        tp = field.annotation if field is not None else None
        if not (isinstance(tp, type) and issubclass(tp, BaseModel)):
            return None
        cls = tp
    return cls


def _message(error: Any) -> str:
    loc = [k for k in error["loc"] if isinstance(k, str)]
    where = ".".join(str(k) for k in error["loc"])
    kind = error["type"]
    if isinstance(error.get("ctx", {}).get("error"), ConfigError):  # a validator's own message, as it is
        return str(error["ctx"]["error"])
    if kind == "extra_forbidden":
        parent = _section(loc[:-1]) or RunConfig
        under = f" under {'.'.join(loc[:-1])}" if loc[:-1] else ""
        return f"unknown config key(s) {where}; valid keys{under}: {', '.join(sorted(parent.model_fields))}"
    for prefix, expected in _EXPECTED.items():
        if kind.startswith(prefix):
            return f"{where}: expected {expected}, got {error.get('input')!r}"
    return f"{where}: {error['msg']}"


def _build(data: dict[str, Any], serving: bool = False) -> RunConfig:
    try:
        return RunConfig.model_validate(data, context={"serving": serving})
    except ValidationError as exc:
        raise ConfigError("; ".join(_message(e) for e in exc.errors())) from None


# ---- loading -----------------------------------------------------------------------------------


def _set_path(data: dict[str, Any], dotted: str, raw: str) -> None:
    """Set ``a.b.c`` (value parsed as YAML), naming the valid keys when a section has no such key."""
    keys = dotted.split(".")
    if not all(keys):
        raise ConfigError(f"--set {dotted}={raw}: empty key")
    node = data
    for depth, key in enumerate(keys):
        section = _section(keys[:depth])
        if section is not None and key not in section.model_fields:
            parent = ".".join(keys[:depth]) or "the top level"
            where = ".".join(keys[: depth + 1])
            raise ConfigError(f"--set {dotted}: unknown key {where!r}; valid keys under {parent}: "
                              f"{', '.join(sorted(section.model_fields))}")
        if depth == len(keys) - 1:
            try:
                node[key] = yaml.safe_load(raw) if raw != "" else ""
            except yaml.YAMLError:
                node[key] = raw
            return
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]


def load_config(path: str | Path | None, overrides: Sequence[str] = (), serving: bool = False) -> RunConfig:
    """Read a YAML config (a path or a bundled launcher name), apply ``key=value`` overrides, validate.

    ``serving``: for ``clawgym serve``, which also checks the serve section against the other sections
    (train uses none of it, so a launcher trains whatever its serve section says).
    """
    data: dict[str, Any] = {}
    if path is not None:
        path = Path(path)
        if not path.exists():
            raise ConfigError(f"config file {path} does not exist")
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
            raise ConfigError(f"{path}: not valid YAML{where}: {getattr(exc, 'problem', None) or exc}") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path}: the top level must be a mapping of sections")
        data = loaded
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"--set expects key=value, got {item!r}")
        key, raw = item.split("=", 1)
        _set_path(data, key.strip(), raw.strip())
    return _build(data, serving)
