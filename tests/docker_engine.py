"""A private Docker Engine for the test suite, and a base image built without a registry.

No engine runs on the test machines by default, and no registry is reachable. So the suite starts its
own ``dockerd`` (private socket, data root and exec root; networks ``none`` and ``host`` only) and
builds ``clawgym/base:bookworm`` from a ``debootstrap --variant=minbase`` root filesystem fetched
through the apt mirror the machine already uses. The rootfs tarball is cached under
``~/.cache/clawgym`` so only the first run pays for debootstrap, and the engine's data root (with
the imported image) is kept in ``$TMPDIR/clawgym-dockerd-data`` by whichever session holds its lock.

Use it from tests through the session fixture ``docker_engine`` (registered in ``tests/conftest.py``);
it skips, saying exactly why, only where an engine cannot start. Run this file directly to warm the
cache: ``python -m tests.docker_engine``.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from clawgym.sandbox import images
from clawgym.sandbox.base import SandboxUnavailable

log = logging.getLogger(__name__)

BASE_IMAGE = images.ROOTFS_IMAGE
BASE_PACKAGES = images.ROOTFS_PACKAGES
CACHE_DIR = images.CACHE_DIR


class DockerEngineUnavailable(RuntimeError):
    """The engine or the image cannot be had here; the message says exactly why."""


@dataclass
class DockerEngine:
    """A running private dockerd: ``base_url`` for the SDK and the CLI, ``image`` built and ready."""

    base_url: str
    root: Path
    process: subprocess.Popen
    image: str = BASE_IMAGE
    log_path: Path = field(default_factory=Path)
    data_root: Path | None = None  # the cached data root (kept between runs) when this engine holds its lock
    lock: object = None

    def client(self):
        import docker

        return docker.DockerClient(base_url=self.base_url, version="auto", timeout=120)

    def close(self) -> None:
        """Stop dockerd (it removes its containers' mounts), then remove its directories."""
        t0 = time.monotonic()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                log.info("dockerd did not stop within 5s; killing it")
        try:
            os.killpg(self.process.pid, signal.SIGKILL)  # its managed containerd too
        except ProcessLookupError:
            pass
        self.process.wait(timeout=10)
        _unmount_below(self.root)
        shutil.rmtree(self.root, ignore_errors=True)
        if self.data_root is not None:
            _unmount_below(self.data_root)
        if self.lock is not None:
            self.lock.close()  # releases the flock
            self.lock = None
        log.info("dockerd stopped and cleaned up in %.1fs", time.monotonic() - t0)


def _run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, check=False, capture_output=True, text=True, **kwargs)


def ensure_packages() -> None:
    """Install docker.io and debootstrap through apt when missing (root only)."""
    missing = [p for p, exe in (("docker.io", "dockerd"), ("debootstrap", "debootstrap")) if shutil.which(exe) is None]
    if not missing:
        return
    if os.geteuid() != 0:
        raise DockerEngineUnavailable(f"{' and '.join(missing)} not installed and not root: run `apt-get install -y "
                                      f"{' '.join(missing)}`")
    log.info("installing %s", missing)
    done = _run(["apt-get", "install", "-y", *missing],
                env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}, timeout=600)
    if done.returncode != 0:
        raise DockerEngineUnavailable(f"`apt-get install -y {' '.join(missing)}` failed: {done.stderr.strip()[-500:]}")


def rootfs_tarball(packages: tuple[str, ...] = BASE_PACKAGES) -> Path:
    """The cached minbase rootfs tarball (see :func:`clawgym.sandbox.images.rootfs_tarball`)."""
    try:
        return images.rootfs_tarball(packages)
    except SandboxUnavailable as exc:
        raise DockerEngineUnavailable(str(exc)) from exc


def build_base_image(client, tag: str = BASE_IMAGE, packages: tuple[str, ...] = BASE_PACKAGES) -> str:
    """``docker import`` the cached rootfs as ``tag`` unless the engine already has it."""
    rootfs_tarball(packages)  # raises DockerEngineUnavailable when it cannot be built here
    return images.import_rootfs(client, tag, packages)


def start_engine(timeout_s: float = 60.0) -> DockerEngine:
    """Start a private dockerd and return it once it answers; raise DockerEngineUnavailable saying why not."""
    ensure_packages()
    if os.geteuid() != 0:
        raise DockerEngineUnavailable("dockerd needs root and the tests are not running as root")
    import docker

    root = Path(tempfile.mkdtemp(prefix="clawgym-dockerd-"))
    sock = root / "docker.sock"
    log_path = root / "dockerd.log"
    data_root, lock = _cached_data_root()
    argv = ["dockerd", "--iptables=false", "--ip-forward=false", "--bridge=none", "--host", f"unix://{sock}",
            "--data-root", str(data_root or root / "data"), "--exec-root", str(root / "exec"),
            "--pidfile", str(root / "docker.pid")]
    with open(log_path, "wb") as log_file:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    engine = DockerEngine(base_url=f"unix://{sock}", root=root, process=process, log_path=log_path,
                          data_root=data_root, lock=lock)
    deadline = time.monotonic() + timeout_s
    while True:
        if process.poll() is not None:
            tail = log_path.read_text(errors="replace")[-1500:]
            engine.close()
            raise DockerEngineUnavailable(f"dockerd exited with {process.returncode}: {tail}")
        if sock.exists():
            try:
                client = docker.DockerClient(base_url=engine.base_url, version="auto", timeout=30)
                client.ping()
                for leftover in client.containers.list(all=True, filters={"label": "clawgym.sandbox"}):
                    leftover.remove(force=True)  # from a run that was killed
                return engine
            except Exception:  # not ready yet
                pass
        if time.monotonic() > deadline:
            engine.close()
            raise DockerEngineUnavailable(f"dockerd did not answer within {timeout_s:.0f}s; log: {log_path}")
        time.sleep(0.1)


def start_engine_with_image(tag: str = BASE_IMAGE) -> DockerEngine:
    engine = start_engine()
    try:
        engine.image = build_base_image(engine.client(), tag)
    except Exception:
        engine.close()
        raise
    return engine


def _cached_data_root():
    """The data root kept under the cache dir (imported image survives between runs), if no other engine uses it.

    Concurrent test sessions each start their own dockerd; the first takes the flock, the others fall
    back to a throw-away data root.
    """
    try:
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        lock = open(Path(tempfile.gettempdir()) / "clawgym-dockerd-data.lock", "w")
    except OSError:
        return None, None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        return None, None
    # Under /tmp, not the cache dir: bwrap sandboxes see the host read-only except /tmp (private in
    # each), and this tree holds every docker sandbox's files.
    data_root = Path(tempfile.gettempdir()) / "clawgym-dockerd-data"
    _unmount_below(data_root)  # what a killed engine may have left
    return data_root, lock


def _unmount_below(root: Path) -> None:
    """Unmount anything a killed dockerd left mounted under ``root`` (deepest first)."""
    try:
        mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
    except OSError:
        return
    prefix = str(root) + "/"
    for point in sorted((m for m in mounts if m.startswith(prefix)), key=len, reverse=True):
        _run(["umount", "-l", point])


def docker_engine_fixture():
    """Body of the session fixture: yield a DockerEngine with the base image, or skip (fail in CI) saying why."""
    from tests.requirements import missing

    try:
        engine = start_engine_with_image()
    except DockerEngineUnavailable as exc:
        missing(f"no Docker engine: {exc}")
    except ImportError as exc:
        missing(f"the docker SDK is not installed ({exc}); pip install 'clawgym[docker]'")
    try:
        yield engine
    finally:
        engine.close()


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    t0 = time.monotonic()
    eng = start_engine_with_image()
    print(f"engine {eng.base_url} with {eng.image} ready in {time.monotonic() - t0:.1f}s")
    eng.close()
