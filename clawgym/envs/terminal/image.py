"""The start state of a task that ships a Dockerfile, on whichever sandbox runs it.

- Docker: the image is built from the Dockerfile (:func:`clawgym.sandbox.images.build_task_image`,
  cached by content, so only the first reset of a task pays for the build) and the episode's
  container runs it with the image's ENV; nothing else is copied in.
- bwrap (and local): there is no image, so the Dockerfile is *replayed* on the host's filesystem:
  ``WORKDIR`` is the work dir, ``ENV``/``ARG`` set the environment, ``COPY``/``ADD`` of context files
  into the work dir become the task's files, and ``RUN`` steps run in order as the setup script.
  Package installs (``apt-get install``, ``pip install`` …) cannot run there; one whose packages the
  host already has is skipped, any other raises :class:`DockerfileNotReplayable` naming the
  Dockerfile line and suggesting ``sandbox="docker"``.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from clawgym.sandbox.base import SandboxConfig, SandboxUnavailable
from clawgym.sandbox.dockerfile import DEFAULT_PATH, DockerfileError, Instruction, env_pairs, expand, parse_file

IGNORED = {"FROM", "CMD", "ENTRYPOINT", "EXPOSE", "LABEL", "MAINTAINER", "VOLUME", "STOPSIGNAL", "HEALTHCHECK",
           "SHELL", "ONBUILD", "USER"}
APT = re.compile(r"^(sudo\s+)?(DEBIAN_FRONTEND=\S+\s+)?(apt-get|apt)\s+(.*)$")
PIP = re.compile(r"^(sudo\s+)?(python3?\s+-m\s+pip|pip3?|uv\s+pip)\s+install\s+(.*)$")
OTHER_INSTALLERS = re.compile(r"^(sudo\s+)?(apk|yum|dnf|npm|conda|curl|wget)\b")
INSTALLER_WORDS = re.compile(r"\b(apt-get|apt|pip3?|uv|apk|yum|dnf|npm|conda|curl|wget)\b")
HARMLESS = re.compile(r"^(rm\s+-rf?\s+/var/lib/apt/lists\S*|apt-get\s+clean|apt\s+clean|true|:)$")


class DockerfileNotReplayable(DockerfileError):
    """A Dockerfile step the bwrap sandbox cannot reproduce; the message names the line and the fix."""


@dataclass
class Replay:
    """A Dockerfile turned into Terminal-v0's own setup: files for the work dir, a setup script, ENV."""

    files: dict[str, str]
    setup: str
    env: dict[str, str]


def prepare(task_data: dict[str, Any], sandbox_kind: str, config: SandboxConfig,
            sandbox_options: dict[str, Any]) -> tuple[SandboxConfig, dict[str, str], str]:
    """(sandbox config, files, setup script) for a task; tasks without a Dockerfile pass through."""
    files, setup = task_data.get("files", {}), task_data.get("setup", "")
    if not task_data.get("dockerfile"):
        return config, files, setup
    if task_data.get("layout") == "harbor" and sandbox_kind != "docker":
        raise DockerfileNotReplayable(f"{task_data['dockerfile']}: Harbor tasks are verified through /tests and "
                                      "/logs/verifier, which only a container has: use sandbox='docker'")
    if sandbox_kind == "docker":
        image = build_image(task_data, sandbox_options)
        env = {**config.env, **image.env}
        return dataclasses.replace(config, image=image.tag, env=env), files, setup
    replay = replay_dockerfile(Path(task_data["dockerfile"]), Path(task_data["context"]), config.workdir)
    env = {**config.env, **replay.env}
    return (dataclasses.replace(config, env=env), {**files, **replay.files},
            "\n".join(filter(None, [replay.setup, setup])))


_CLIENTS: dict[str, Any] = {}


def build_image(task_data: dict[str, Any], sandbox_options: dict[str, Any]):
    """The task's image on the engine the Docker sandbox will use (one client per engine address)."""
    from clawgym.sandbox.images import build_task_image

    client = sandbox_options.get("client")
    if client is None:
        base_url = sandbox_options.get("base_url") or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
        if base_url not in _CLIENTS:
            try:
                import docker

                client = docker.DockerClient(base_url=base_url, version="auto", timeout=600)
                client.ping()
            except Exception as exc:
                raise SandboxUnavailable(f"no Docker Engine answers at {base_url} to build {task_data['dockerfile']} "
                                         f"({exc}); start one or pass sandbox_options={{'base_url': ...}}") from exc
            _CLIENTS[base_url] = client
        client = _CLIENTS[base_url]
    return build_task_image(client, task_data["dockerfile"], task_data["context"])


def replay_dockerfile(dockerfile: Path, context: Path, workdir: str) -> Replay:
    """Replay ``dockerfile`` for a sandbox whose work dir is ``workdir`` (see the module docstring)."""
    instructions = parse_file(dockerfile)
    stages = [i for i, ins in enumerate(instructions) if ins.keyword == "FROM"]
    if len(stages) > 1:
        raise DockerfileNotReplayable(f"{instructions[stages[1]].where()}: multi-stage builds need the Docker sandbox "
                                      "(sandbox='docker')")
    files: dict[str, str] = {}
    steps: list[str] = []
    env: dict[str, str] = {}
    variables: dict[str, str] = {"PATH": DEFAULT_PATH}
    cwd = workdir
    for ins in instructions:
        if ins.keyword in IGNORED:
            continue
        if ins.keyword in ("ENV", "ARG"):
            for key, value in env_pairs(ins):
                variables[key] = expand(value, variables)
                if ins.keyword == "ENV":
                    env[key] = variables[key]
            steps.append(f"export {' '.join(f'{k}={shlex.quote(v)}' for k, v in env_pairs_expanded(ins, variables))}")
        elif ins.keyword == "WORKDIR":
            cwd = _inside(ins, str(PurePosixPath(cwd) / expand(ins.value.strip(), variables)), workdir)
            steps.append(f"mkdir -p {shlex.quote(cwd)} && cd {shlex.quote(cwd)}")
        elif ins.keyword in ("COPY", "ADD"):
            _copy(ins, context, cwd, workdir, variables, files)
        elif ins.keyword == "RUN":
            command = _run_command(ins)
            if command:
                steps.append(f"( {command} ) || {{ echo {shlex.quote(f'{ins.where()}: RUN failed') } >&2; exit 1; }}")
        else:
            raise DockerfileNotReplayable(f"{ins.where()}: {ins.keyword} cannot be replayed; use sandbox='docker'")
    setup = "\n".join(["set -e", f"cd {shlex.quote(workdir)}", *steps]) if steps else ""
    return Replay(files=files, setup=setup, env=env)


def env_pairs_expanded(ins: Instruction, variables: dict[str, str]) -> list[tuple[str, str]]:
    return [(key, variables[key]) for key, _ in env_pairs(ins)]


def _inside(ins: Instruction, path: str, workdir: str) -> str:
    normal = str(PurePosixPath(path))
    root = str(PurePosixPath(workdir))
    if normal != root and not normal.startswith(root.rstrip("/") + "/"):
        raise DockerfileNotReplayable(f"{ins.where()}: {ins.keyword} {ins.value} writes outside the work dir {root}, "
                                      "which bwrap keeps read-only; use sandbox='docker'")
    return normal


def _copy(ins: Instruction, context: Path, cwd: str, workdir: str, variables: dict[str, str],
          files: dict[str, str]) -> None:
    args = [expand(a, variables) for a in ins.args() if not a.startswith("--")]
    if any(a.startswith("--from") for a in ins.args()) or len(args) < 2:
        raise DockerfileNotReplayable(f"{ins.where()}: {ins.keyword} {ins.value} cannot be "
                                      "replayed; use sandbox='docker'")
    *sources, dest = args
    target = dest if dest.startswith("/") else str(PurePosixPath(cwd) / dest)
    into_dir = dest.endswith("/") or len(sources) > 1 or dest in (".", "./")
    root = PurePosixPath(_inside(ins, target, workdir))
    for source in sources:
        path = (context / source).resolve()
        if not str(path).startswith(str(context.resolve())) or not path.exists():
            raise DockerfileNotReplayable(f"{ins.where()}: {ins.keyword} source {source!r} is not in the build context")
        if path.is_dir():
            items = [(p, PurePosixPath(p.relative_to(path).as_posix())) for p in sorted(path.rglob("*")) if p.is_file()]
            base = root
        else:
            items = [(path, PurePosixPath(path.name))]
            base = root if into_dir else root.parent
            if not into_dir:
                items = [(path, PurePosixPath(root.name))]
        for file, relative in items:
            destination = (base / relative).relative_to(PurePosixPath(workdir)).as_posix()
            try:
                files[destination] = file.read_text(encoding="utf-8")
            except UnicodeDecodeError as exc:
                raise DockerfileNotReplayable(f"{ins.where()}: {file} is not text; use sandbox='docker'") from exc


def _run_command(ins: Instruction) -> str:
    """The RUN's shell command with host-satisfied package steps dropped; raise for the others."""
    text = ins.value.strip()
    if text.startswith("["):
        return " ".join(shlex.quote(a) for a in ins.args())
    if not INSTALLER_WORDS.search(text):
        return text  # nothing to check: run it verbatim (no naive splitting of quoted ; or &&)
    kept = []
    for segment in re.split(r"\s*(?:&&|;)\s*", text):
        segment = segment.strip()
        if not segment or HARMLESS.match(segment):
            continue
        apt, pip = APT.match(segment), PIP.match(segment)
        if apt:
            words = apt.group(4).split()
            if words and words[0] == "install":
                _need(ins, "apt", [w for w in words[1:] if not w.startswith("-")], _missing_debs)
            elif words and words[0] not in ("update", "clean", "autoremove", "autoclean"):
                raise DockerfileNotReplayable(f"{ins.where()}: `{segment}` changes system "
                                              "packages; use sandbox='docker'")
            continue
        if pip:
            _need(ins, "pip", [w for w in shlex.split(pip.group(3)) if not w.startswith("-")], _missing_dists)
            continue
        if OTHER_INSTALLERS.match(segment):
            raise DockerfileNotReplayable(f"{ins.where()}: `{segment}` installs software, which "
                                          "the bwrap sandbox cannot "
                                          "do; use sandbox='docker' (the image is built from this Dockerfile)")
        kept.append(segment)
    return " && ".join(kept)


def _need(ins: Instruction, manager: str, packages: list[str], missing_of) -> None:
    missing = missing_of(packages)
    if missing:
        raise DockerfileNotReplayable(
            f"{ins.where()}: `RUN {ins.value[:120]}` installs {manager} packages the host lacks "
            f"({', '.join(missing)}); "
            "the bwrap sandbox cannot install packages: use sandbox='docker' (the image is built from this Dockerfile) "
            "or install them on the host")


def _missing_debs(packages: list[str]) -> list[str]:
    names = [re.split(r"[=:]", p)[0] for p in packages]
    if not names:
        return []
    if shutil.which("dpkg-query") is None:
        return names
    done = subprocess.run(["dpkg-query", "-W", "-f=${Package} ${db:Status-Status}\n", *names],
                          capture_output=True, text=True, check=False)
    installed = {line.split()[0] for line in done.stdout.splitlines() if line.endswith(" installed")}
    return [name for name in names if name not in installed]


def _missing_dists(packages: list[str]) -> list[str]:
    """Requirements the host's ``python3`` (the one a bwrap sandbox runs) does not meet: by name, and the
    version too for ``name==version`` pins (other specifiers are taken as met by any version)."""
    wanted = [re.split(r"[<>!~\[; ]", p, maxsplit=1)[0] for p in packages]
    if not wanted:
        return []
    probe = ("import importlib.metadata as m, sys\nfor w in sys.argv[1:]:\n    n, _, v = w.partition('==')\n"
             "    try: ok = (m.version(n) == v) if v else bool(m.version(n))\n"
             "    except m.PackageNotFoundError: ok = False\n"
             "    print('' if ok else w)")
    python = shutil.which("python3", path=DEFAULT_PATH)  # the sandbox's PATH, not this process's
    if python is None:
        return wanted
    done = subprocess.run([python, "-c", probe, *wanted], capture_output=True, text=True, check=False)
    return done.stdout.split() if done.returncode == 0 else wanted
