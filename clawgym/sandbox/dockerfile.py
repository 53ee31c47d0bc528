"""A small Dockerfile reader: instructions with their line numbers, and the static facts tasks need.

clawgym builds task images without a registry (:mod:`clawgym.sandbox.images`) and replays simple
Dockerfiles on bwrap (:mod:`clawgym.envs.terminal.replay`); both need the instructions in order,
with the line each one starts on so an error can point at it. Continuation lines (``\\``), comments,
parser directives and the JSON (exec) form are handled; heredocs are not (an error says so).
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class DockerfileError(ValueError):
    """A Dockerfile clawgym cannot read or build; the message names the file and line."""


@dataclass(frozen=True)
class Instruction:
    """One instruction: ``keyword`` upper-cased, ``value`` the rest (continuations joined), ``line`` 1-based."""

    keyword: str
    value: str
    line: int
    source: str = "Dockerfile"

    def where(self) -> str:
        return f"{self.source}:{self.line}"

    def args(self) -> list[str]:
        """The arguments: a JSON array as is, else shell-split (flags such as ``--chown=`` included)."""
        text = self.value.strip()
        if text.startswith("["):
            try:
                items = json.loads(text)
            except json.JSONDecodeError:
                items = None
            if isinstance(items, list) and all(isinstance(item, str) for item in items):
                return items
        try:
            return shlex.split(text)
        except ValueError as exc:
            raise DockerfileError(f"{self.where()}: cannot split {self.keyword} arguments: {exc}") from exc


def parse(text: str, source: str = "Dockerfile") -> list[Instruction]:
    """Every instruction of a Dockerfile, in order."""
    instructions: list[Instruction] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        raw = lines[index]
        start = index + 1
        index += 1
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        parts = [stripped]
        while parts[-1].endswith("\\") and index < len(lines):
            parts[-1] = parts[-1][:-1].rstrip()
            following = lines[index].strip()
            index += 1
            if following.startswith("#"):  # comment lines inside a continuation are dropped
                parts.append("\\")
                continue
            parts.append(following)
        joined = " ".join(part for part in parts if part and part != "\\").strip()
        keyword, _, value = joined.partition(" ")
        keyword = keyword.upper()
        if "<<" in value and keyword in ("RUN", "COPY") and re.search(r"<<-?\s*['\"]?[A-Za-z_]+", value):
            raise DockerfileError(f"{source}:{start}: heredocs in {keyword} are not supported")
        instructions.append(Instruction(keyword, value.strip(), start, source))
    if not instructions:
        raise DockerfileError(f"{source} has no instructions")
    return instructions


def parse_file(path: str | Path) -> list[Instruction]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DockerfileError(f"cannot read {path}: {exc}") from exc
    return parse(text, source=str(path))


def env_pairs(instruction: Instruction) -> list[tuple[str, str]]:
    """``ENV k=v k2="v 2"`` or the old ``ENV k v`` form as (key, raw value) pairs; ARG likewise."""
    text = instruction.value.strip()
    if instruction.keyword == "ENV" and "=" not in text.split(" ", 1)[0]:
        key, _, value = text.partition(" ")
        return [(key, _unquote(value))]
    pairs = []
    for item in instruction.args():
        key, sep, value = item.partition("=")
        if instruction.keyword == "ENV" and not sep:
            raise DockerfileError(f"{instruction.where()}: ENV {item!r} has no value")
        pairs.append((key, value))
    return pairs


def expand(value: str, variables: dict[str, str]) -> str:
    """``$VAR`` / ``${VAR}`` / ``${VAR:-default}`` substitution as Docker does it for ENV, WORKDIR, COPY."""
    def replace(match: re.Match) -> str:
        name = match.group(1) or match.group(2)
        default = match.group(3)
        found = variables.get(name, "")
        return found if found or default is None else default

    return re.sub(r"\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\})", replace, value)


@dataclass
class StaticFacts:
    """What a Dockerfile says without building it: the final work dir and environment, and the base."""

    base: str
    base_line: int
    workdir: str
    env: dict[str, str]


def static_facts(instructions: list[Instruction]) -> StaticFacts:
    """The last stage's base, WORKDIR (``/`` when none) and ENV (with ``$VAR`` expanded)."""
    froms = [ins for ins in instructions if ins.keyword == "FROM"]
    if not froms:
        raise DockerfileError(f"{instructions[0].source} has no FROM")
    last = froms[-1]
    global_args = {k: v for ins in instructions[:instructions.index(froms[0])] if ins.keyword == "ARG"
                   for k, v in env_pairs(ins)}
    workdir = "/"
    env: dict[str, str] = {}
    args: dict[str, str] = {}
    for ins in instructions[instructions.index(last):]:
        if ins.keyword == "ARG":
            args.update(env_pairs(ins))
        elif ins.keyword == "ENV":
            for key, value in env_pairs(ins):
                env[key] = expand(value, {"PATH": DEFAULT_PATH, **args, **env})
        elif ins.keyword == "WORKDIR":
            path = expand(_unquote(ins.value.strip()), {**args, **env})
            workdir = path if path.startswith("/") else f"{workdir.rstrip('/')}/{path}"
    base = last.args()
    image = [expand(item, global_args) for item in base if not item.startswith("--")]
    if not image:
        raise DockerfileError(f"{last.where()}: FROM names no image")
    return StaticFacts(base=image[0], base_line=last.line, workdir=workdir, env=env)


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value
