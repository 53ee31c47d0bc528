"""Task images without a registry: local base images, and Dockerfile builds cached by content.

No image registry is reachable on the machines clawgym targets, so ``FROM debian:bookworm-slim`` cannot
be pulled. Instead:

- ``clawgym/base:bookworm`` is a ``debootstrap --variant=minbase`` root filesystem (python3, procps)
  imported with ``docker import``; the tarball is cached under ``~/.cache/clawgym`` (≈1 min once).
- ``clawgym/debian:bookworm`` adds the host's CA bundle to it, so builds reach the package
  registries through the same TLS setup the host uses (an egress proxy's CA included).
- ``clawgym/python:bookworm`` adds pip and venv (Debian's Python 3.11, ``pip install`` allowed
  system-wide, ``python``/``pip`` on PATH): the stand-in for ``python:3.*``.

:func:`resolve_base` maps a Dockerfile's ``FROM`` to one of those (``debian:*``, ``ubuntu:*`` →
debian; ``python:3.*`` and terminal-bench's ``t-bench/python-*`` → python; an image the engine
already has is used as is). :func:`build_task_image` rewrites the ``FROM`` lines, sends the task's
context to the engine's builder with the host network (``RUN apt-get`` / ``pip install`` reach the
registries) and tags the result ``clawgym/task:<hash>`` of the rewritten Dockerfile, the base image
id and every context file, so a second reset finds the image and builds nothing.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from clawgym.sandbox.base import SandboxUnavailable
from clawgym.sandbox.dockerfile import DockerfileError, Instruction, env_pairs, expand, parse, static_facts

log = logging.getLogger(__name__)

SUITE = "bookworm"
ROOTFS_IMAGE = "clawgym/base:bookworm"
DEBIAN_IMAGE = "clawgym/debian:bookworm"
PYTHON_IMAGE = "clawgym/python:bookworm"
ROOTFS_PACKAGES = ("python3", "procps")
CACHE_DIR = Path(os.environ.get("CLAWGYM_CACHE", Path.home() / ".cache" / "clawgym"))
FALLBACK_MIRROR = "http://deb.debian.org/debian"
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
HOST_CA_DIR = Path("/usr/local/share/ca-certificates")
TASK_REPOSITORY = "clawgym/task"
BUILD_SCHEME = "2"  # part of every task image's hash: bump it when the way a context is built changes

PYTHON_LAYER = f"""FROM {DEBIAN_IMAGE}
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-pip python3-venv \\
 && rm -rf /var/lib/apt/lists/* && rm -f /usr/lib/python3*/EXTERNALLY-MANAGED \\
 && ln -sf /usr/bin/python3 /usr/local/bin/python && ln -sf /usr/bin/pip3 /usr/local/bin/pip
"""  # noqa: E501  (a Dockerfile: kept as written)

# FROM patterns → local image. Order matters: the first match wins.
BASE_RULES = [
    (re.compile(r"^(docker\.io/)?(library/)?python:3(\.\d+)?([-.].*)?$"), PYTHON_IMAGE),
    (re.compile(r"^ghcr\.io/laude-institute/t-bench/python-3-\d+(:.*)?$"), PYTHON_IMAGE),
    (re.compile(r"^(docker\.io/)?(library/)?(debian|ubuntu)(:.*)?$"), DEBIAN_IMAGE),
    (re.compile(r"^ghcr\.io/laude-institute/t-bench/ubuntu-[\d-]+(:.*)?$"), DEBIAN_IMAGE),
    (re.compile(r"^(docker\.io/)?(library/)?buildpack-deps(:.*)?$"), DEBIAN_IMAGE),
]


class ImageBuildError(RuntimeError):
    """A task image could not be built; the message carries the builder's last output lines."""


@dataclass(frozen=True)
class TaskImage:
    """A built task image: its tag, the environment and work dir its containers start with."""

    tag: str
    env: dict[str, str]
    workdir: str
    built: bool  # False when the cache already held it


# ----------------------------------------------------------------------------------------- base images
def apt_mirror() -> str:
    """The Debian mirror this machine's apt already uses (deb822 ``URIs:`` or one-line ``deb`` entries)."""
    files = sorted(Path("/etc/apt").glob("sources.list.d/*.sources")) + sorted(
        Path("/etc/apt").glob("sources.list.d/*.list"))
    files.insert(0, Path("/etc/apt/sources.list"))
    for path in files:
        try:
            text = path.read_text()
        except OSError:
            continue
        for match in re.finditer(r"^\s*URIs:\s*(\S+)|^\s*deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)", text, re.M):
            uri = match.group(1) or match.group(2)
            if "security" not in uri and (match.group(3) is None or match.group(3) == SUITE or match.group(1)):
                return uri.rstrip("/")
    return FALLBACK_MIRROR


def rootfs_tarball(packages: tuple[str, ...] = ROOTFS_PACKAGES) -> Path:
    """The cached minbase rootfs tarball for ``packages``, debootstrapped on first use (~1 min, root only)."""
    key = hashlib.sha256(f"{SUITE}:{','.join(sorted(packages))}".encode()).hexdigest()[:12]
    tarball = CACHE_DIR / f"rootfs-{SUITE}-{key}.tar"
    if tarball.exists():
        return tarball
    if os.geteuid() != 0 or shutil.which("debootstrap") is None:
        raise SandboxUnavailable(f"{tarball} is not cached and building it needs root and debootstrap "
                                 "(apt-get install debootstrap)")
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="clawgym-rootfs-") as tmp:
        target = Path(tmp) / "rootfs"
        mirror = apt_mirror()
        log.info("debootstrap %s from %s with %s", SUITE, mirror, packages)
        done = _run(["debootstrap", "--variant=minbase", f"--include={','.join(packages)}", SUITE,
                     str(target), mirror], 900)
        if done.returncode != 0:
            raise SandboxUnavailable(f"debootstrap from {mirror} failed: {(done.stdout + done.stderr).strip()[-800:]}")
        shutil.rmtree(target / "var/cache/apt/archives", ignore_errors=True)
        partial = tarball.with_suffix(f".{os.getpid()}.partial")
        done = _run(["tar", "-C", str(target), "-cf", str(partial), "."], 600)
        if done.returncode != 0:
            partial.unlink(missing_ok=True)
            raise SandboxUnavailable(f"tar of the rootfs failed: {done.stderr.strip()[-500:]}")
        os.replace(partial, tarball)  # atomic: concurrent runs never see half a tarball
    return tarball


def import_rootfs(client, tag: str = ROOTFS_IMAGE, packages: tuple[str, ...] = ROOTFS_PACKAGES) -> str:
    """``docker import`` the cached rootfs as ``tag`` unless the engine already has that very rootfs."""
    import docker

    tarball_name = rootfs_tarball(packages).name
    try:
        if (client.images.get(tag).labels or {}).get("clawgym.rootfs") == tarball_name:
            return tag
    except docker.errors.ImageNotFound:
        pass
    repository, _, version = tag.partition(":")
    client.api.import_image_from_file(str(CACHE_DIR / tarball_name), repository=repository, tag=version or "latest",
                                      changes=[f"LABEL clawgym.rootfs={tarball_name}"])
    client.images.get(tag)  # raises if the import did not produce it
    return tag


def ensure_base(client, tag: str) -> str:
    """Build the local base ``tag`` (and what it stands on) once per engine."""
    with _lock(tag):
        return _ensure_base(client, tag)


def _ensure_base(client, tag: str) -> str:
    import docker

    try:
        client.images.get(tag)
        return tag
    except docker.errors.ImageNotFound:
        pass
    if tag == ROOTFS_IMAGE:
        return import_rootfs(client, tag)
    if tag == DEBIAN_IMAGE:
        ensure_base(client, ROOTFS_IMAGE)
        files = {"Dockerfile": f"FROM {ROOTFS_IMAGE}\nCOPY ca/ /usr/local/share/ca-certificates/\n"
                               "COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt\n"
                               "ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt "
                               "PIP_CERT=/etc/ssl/certs/ca-certificates.crt\n"}
        files["ca-certificates.crt"] = HOST_CA_BUNDLE.read_bytes() if HOST_CA_BUNDLE.is_file() else b""
        files["ca/.keep"] = b""
        if HOST_CA_DIR.is_dir():
            for crt in sorted(HOST_CA_DIR.glob("*.crt")):
                files[f"ca/{crt.name}"] = crt.read_bytes()
        _build(client, _tar(files), tag, "Dockerfile")
        return tag
    if tag == PYTHON_IMAGE:
        ensure_base(client, DEBIAN_IMAGE)
        _build(client, _tar({"Dockerfile": PYTHON_LAYER}), tag, "Dockerfile")
        return tag
    raise ValueError(f"{tag!r} is not one of clawgym's local base images")


def resolve_base(client, image: str, where: str) -> str:
    """The local image a ``FROM image`` builds on (see the module docstring), built when missing."""
    import docker

    for pattern, local in BASE_RULES:
        if pattern.match(image):
            if not image.startswith(("debian:bookworm", "python:3.11")) and "bookworm" not in image:
                log.info("%s: FROM %s builds on %s (Debian %s) since no registry is reachable",
                         where, image, local, SUITE)
            return ensure_base(client, local)
    try:
        client.images.get(image)
        return image
    except docker.errors.ImageNotFound:
        pass
    raise DockerfileError(
        f"{where}: FROM {image}: no registry is reachable and clawgym has no local stand-in for it (it builds "
        "debian:*, ubuntu:*, python:3.* and terminal-bench's base images); load the image into the engine first")


# ----------------------------------------------------------------------------------------- task images
def build_task_image(client, dockerfile: str | Path, context: str | Path) -> TaskImage:
    """The image of a task's Dockerfile, built with ``context`` unless an identical build is cached."""
    import docker

    dockerfile, context = Path(dockerfile), Path(context)
    instructions = parse(dockerfile.read_text(encoding="utf-8"), source=str(dockerfile))
    facts = static_facts(instructions)
    text = _rewrite_from(client, instructions)
    files = _context_files(context)
    digest = hashlib.sha256(f"{BUILD_SCHEME}\0{text}".encode())
    for name, data in sorted(files.items()):
        digest.update(b"\0" + name.encode() + b"\0" + hashlib.sha256(data).digest())
    for line in text.splitlines():
        if line.startswith("FROM "):
            digest.update(client.images.get(line.split()[1]).id.encode())
    tag = f"{TASK_REPOSITORY}:{digest.hexdigest()[:20]}"
    built = False
    with _lock(tag):  # a GRPO group resetting one task at once builds it once
        try:
            image = client.images.get(tag)
        except docker.errors.ImageNotFound:
            image = None
        if image is None:
            # the rewritten Dockerfile takes the original's place, so `COPY . /app` copies the same file set
            inside = dockerfile.resolve().is_relative_to(context.resolve())
            name = dockerfile.resolve().relative_to(context.resolve()).as_posix() if inside else ".clawgym.Dockerfile"
            files[name] = text.encode()
            _build(client, _tar(files), tag, name, label=str(dockerfile))
            image = client.images.get(tag)
            built = True
    config = image.attrs.get("Config") or {}
    env = dict(item.partition("=")[::2] for item in config.get("Env") or [])
    return TaskImage(tag=tag, env=env, workdir=config.get("WorkingDir") or facts.workdir or "/", built=built)


def _rewrite_from(client, instructions: list[Instruction]) -> str:
    """The Dockerfile with every external ``FROM`` pointing at its local stand-in (stage names kept)."""
    stages: set[str] = set()
    global_args: dict[str, str] = {}  # ARGs before the first FROM may name the base: FROM ${BASE}
    seen_from = False
    lines = []
    for ins in instructions:
        if ins.keyword != "FROM":
            if ins.keyword == "ARG" and not seen_from:
                global_args.update(env_pairs(ins))
            lines.append(f"{ins.keyword} {ins.value}")
            continue
        seen_from = True
        args = ins.args()
        flags = [a for a in args if a.startswith("--") and not a.startswith("--platform")]
        rest = [expand(a, global_args) for a in args if not a.startswith("--")]
        image = rest[0]
        local = image if image in stages else resolve_base(client, image, ins.where())
        if len(rest) >= 3 and rest[1].upper() == "AS":
            stages.add(rest[2])
        lines.append(" ".join(["FROM", *flags, local, *rest[1:]]))
    return "\n".join(lines) + "\n"


def _context_files(context: Path) -> dict[str, bytes]:
    """The build context as the Docker CLI would send it: every file not excluded by ``.dockerignore``."""
    patterns = []
    if (context / ".dockerignore").is_file():
        for line in (context / ".dockerignore").read_text(encoding="utf-8").splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                patterns.append((line.startswith("!"), line.lstrip("!").strip("/")))
    files = {}
    for path in sorted(context.rglob("*")):
        relative = path.relative_to(context).as_posix()
        if path.is_file() and not _ignored(relative, patterns) and ".git" not in relative.split("/"):
            files[relative] = path.read_bytes()
    return files


def _ignored(relative: str, patterns: list[tuple[bool, str]]) -> bool:
    """``.dockerignore`` matching: ``*`` stays within one path segment, ``**`` spans any; the last matching
    pattern wins; a pattern matching a parent directory covers everything below it."""
    parts = relative.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    ignored = False
    for negated, pattern in patterns:
        regex = _glob_regex(pattern)
        if any(regex.fullmatch(prefix) for prefix in prefixes):
            ignored = not negated
    return ignored


def _glob_regex(pattern: str) -> re.Pattern:
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out)


def _tar(files: dict[str, bytes | str]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in sorted(files.items()):
            raw = data.encode() if isinstance(data, str) else data
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(raw), 0o755 if name.endswith(".sh") else 0o644, 0
            tar.addfile(info, io.BytesIO(raw))
    return buf.getvalue()


def _build(client, context: bytes, tag: str, dockerfile: str, label: str = "") -> None:
    """One build on the engine (host network, no pull); raise with the builder's output tail on failure."""
    log.info("building %s%s", tag, f" from {label}" if label else "")
    output: list[str] = []
    stream = client.api.build(fileobj=io.BytesIO(context), custom_context=True, dockerfile=dockerfile, tag=tag,
                              network_mode="host", rm=True, forcerm=True, pull=False, decode=True,
                              labels={"clawgym.dockerfile": label} if label else None)
    for chunk in stream:
        if "stream" in chunk:
            output.append(chunk["stream"])
            if chunk["stream"].startswith("Step "):  # progress of a build that may take minutes
                log.info("%s %s", tag, chunk["stream"].strip()[:160])
        if "error" in chunk:
            tail = "".join(output)[-1500:]
            raise ImageBuildError(f"building {label or tag} failed: {chunk['error'].strip()}\n{tail}")


_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _lock(tag: str) -> threading.Lock:
    """One lock per image tag in this process, so concurrent resets never build the same image twice."""
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(tag, threading.Lock())


def _run(argv: list[str], timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(argv, check=False, capture_output=True, text=True, timeout=timeout)
