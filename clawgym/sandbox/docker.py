"""Docker sandbox: the persistent-shell semantics of bwrap on a Docker Engine (docker SDK).

One container per episode from ``config.image`` (``mem_limit``/``memswap_limit``, ``pids_limit``,
``network_mode="none"`` unless ``config.network``, then ``"host"``), removed on close. Its pid 1 is a
tiny bash loop that reaps orphans and ignores signals from inside (``kill -9 -1`` cannot end the
container). The agent's shell is ONE ``exec`` whose stdin/stdout/stderr stay attached over the
exec socket for the whole episode, speaking the driver protocol of :mod:`clawgym.sandbox.shell`,
so a command costs a socket round trip instead of a ``docker exec`` (~60 ms).

Timeouts and the fork-bomb guard work as on bwrap when the engine is local (its container processes
are visible in this host's /proc). With a remote engine a timeout kills every process in the
container except the shell (background jobs included), through a one-off exec.
"""

from __future__ import annotations

import io
import logging
import os
import posixpath
import select
import shutil
import signal
import socket
import subprocess
import tarfile
import time
import weakref

from clawgym.sandbox import procs
from clawgym.sandbox.base import SandboxConfig, SandboxUnavailable
from clawgym.sandbox.shell import SHELL_ENV, ShellSandbox, ShellSession, shell_argv

log = logging.getLogger(__name__)

DEFAULT_IMAGE = "clawgym/base:bookworm"
KEEPER = "trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done"
DEFAULT_ENV = {"HOME": "/tmp", "LANG": "C.UTF-8", "TERM": "dumb",
               "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
REMOTE_KILLER = ('for d in /proc/[0-9]*; do p=${d#/proc/}; '
                 '[ "$p" = 1 ] || [ "$p" = "$1" ] || [ "$p" = "$$" ] || kill -9 "$p" 2>/dev/null; done; true')


class SocketTransport:
    """The attached exec socket: stdin goes in raw, stdout/stderr come back in Docker's 8-byte frames."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.sock.setblocking(True)
        self.sock.settimeout(None)
        self.buf = bytearray()
        self.eof = False

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv(self, timeout: float) -> list[tuple[int, bytes]] | None:
        if self.eof:
            return None
        readable, _, _ = select.select([self.sock], [], [], max(0.0, timeout))
        if not readable:
            return []
        try:
            data = self.sock.recv(1 << 16)
        except OSError:
            data = b""
        if not data:
            self.eof = True
        self.buf += data
        chunks = []
        while len(self.buf) >= 8:
            size = int.from_bytes(self.buf[4:8], "big")
            if len(self.buf) < 8 + size:
                break
            chunks.append((2 if self.buf[0] == 2 else 1, bytes(self.buf[8:8 + size])))
            del self.buf[:8 + size]
        if self.eof and not chunks:
            return None
        return chunks

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


class _Resources:
    """Released by close(), the garbage collector or interpreter exit; holds no reference to the sandbox."""

    def __init__(self) -> None:
        self.container = None
        self.transport: SocketTransport | None = None
        self.processes: list[subprocess.Popen] = []

    def release(self) -> None:
        for proc in self.processes:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    proc.kill()
            proc.wait()
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
        self.processes = []
        if self.transport is not None:
            self.transport.close()
            self.transport = None
        if self.container is not None:
            try:
                self.container.remove(force=True)
            except Exception as exc:  # already gone, engine down: nothing else to free here
                log.warning("removing container %s failed: %s", self.container.id[:12], exc)
            self.container = None


class DockerSandbox(ShellSandbox):
    """A :class:`clawgym.sandbox.base.Sandbox` on a Docker Engine. See the module docstring."""

    kind = "docker"

    def __init__(self, config: SandboxConfig | None = None, *, base_url: str | None = None, client=None,
                 network_mode: str | None = None):
        try:
            import docker
        except ImportError as exc:
            raise SandboxUnavailable("the docker SDK is missing: pip install 'clawgym[docker]' (or `pip "
                                     "install docker`)") from exc
        self.config = config or SandboxConfig()
        self._init_shell_state()
        self.base_url = base_url or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
        try:
            self.client = client or docker.DockerClient(base_url=self.base_url, version="auto", timeout=120)
            self.client.ping()
        except Exception as exc:
            raise SandboxUnavailable(
                f"no Docker Engine answers at {self.base_url} ({exc}); start one (e.g. `dockerd --host "
                f"unix:///var/run/docker.sock`) or pass base_url=/set DOCKER_HOST") from exc
        self.image = self.config.image or DEFAULT_IMAGE
        try:
            self.client.images.get(self.image)
        except docker.errors.ImageNotFound as exc:
            raise SandboxUnavailable(f"image {self.image!r} is not on the engine at {self.base_url}: pull or build it "
                                     "(clawgym.sandbox.images.ensure_base(client, 'clawgym/base:bookworm') builds it "
                                     "without a registry)") from exc
        self.network_mode = network_mode or ("host" if self.config.network else "none")
        self._res = _Resources()
        self._finalizer = weakref.finalize(self, self._res.release)
        self.workdir = posixpath.normpath(self.config.workdir)
        self._exec_id: str | None = None
        self._shell_host_pid: int | None = None
        try:
            mem = f"{self.config.memory_mb}m"
            self.container = self.client.containers.run(
                self.image, ["bash", "-c", KEEPER], detach=True, network_mode=self.network_mode,
                mem_limit=mem, memswap_limit=mem, pids_limit=self.config.pids_max, working_dir=self.workdir,
                environment={**DEFAULT_ENV, **self.config.env}, hostname="sandbox",
                labels={"clawgym.sandbox": "1", "clawgym.owner_pid": str(os.getpid())})
            self._res.container = self.container
            self._locate()
            self._pids_hits = self._pids_limit_hits()
            self._ooms = self._oom_kills()
        except BaseException:
            self.close()
            raise
        self._write_files_and_open_shell()

    # -- ShellSandbox hooks ----------------------------------------------------------------------
    def _start_shell(self, token: str) -> ShellSession:
        api = self.client.api
        self._exec_id = api.exec_create(self.container.id, shell_argv(token), stdin=True, stdout=True, stderr=True,
                                        tty=False, workdir=self.workdir, environment=SHELL_ENV)["Id"]
        sock = api.exec_start(self._exec_id, socket=True)
        raw = getattr(sock, "_sock", sock)
        self._res.transport = SocketTransport(raw)
        self._shell_host_pid = None
        session = ShellSession(self._res.transport, token)
        return session

    def _open_shell(self) -> None:
        super()._open_shell()
        if self.local:
            # the engine may report the exec's Pid a moment after the exec has started: ask for up to 1 s
            pid = 0
            for _ in range(20):
                pid = int(self.client.api.exec_inspect(self._exec_id).get("Pid") or 0)
                if pid:
                    break
                time.sleep(0.05)
            self._shell_host_pid = pid if pid and procs.pid_namespace(pid) == self._namespace else None

    def _stop_shell(self) -> int | None:
        if self._shell_host_pid is not None:
            try:
                os.kill(self._shell_host_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        elif self._session is not None and self._session.shell_pid:
            self._exec(["kill", "-9", str(self._session.shell_pid)])
        if self._res.transport is not None:
            self._res.transport.close()
            self._res.transport = None
        status = None
        if self._exec_id is not None:
            for _ in range(50):
                info = self.client.api.exec_inspect(self._exec_id)
                if not info.get("Running"):
                    status = info.get("ExitCode")
                    break
                time.sleep(0.02)
        return status

    def _kill_started_since(self, tick: int | None) -> int:
        if self.local and self._shell_host_pid is not None:
            return procs.kill_namespace(self._namespace, keep={self.init_pid, self._shell_host_pid}, since_tick=tick,
                                        owner=self._shell_host_pid)
        keep = str(self._session.shell_pid if self._session is not None else 0)
        self._exec(["bash", "-c", REMOTE_KILLER, "killer", keep])
        return -1

    def _signal_shell(self, sig: int) -> None:
        if self._shell_host_pid is not None:
            procs.signal_pids([self._shell_host_pid], sig)
        elif self._session is not None and self._session.shell_pid:
            self._exec(["kill", f"-{signal.Signals(sig).name[3:]}", str(self._session.shell_pid)])

    def _pids_limit_hits(self) -> int:
        return procs.read_counter(self._pids_events, "max")

    def _oom_kills(self) -> int:
        return procs.read_counter(self._oom_file, "oom_kill")

    def _reset_processes(self) -> None:
        """Restart the container: every process in it dies at once (a fork bomb cannot outrun that); files stay."""
        self.restarts += 1
        if self._res.transport is not None:
            self._res.transport.close()
            self._res.transport = None
        self.container.restart(timeout=0)
        self._locate()
        self._session = None
        self._open_shell()

    def _locate(self) -> None:
        """Find the container's init on this host, if the engine is local, and its cgroup counters."""
        self.container.reload()
        self.init_pid = int(self.container.attrs["State"]["Pid"])
        self._namespace = procs.pid_namespace(self.init_pid)
        self.local = self._namespace is not None and self.container.id in _read(f"/proc/{self.init_pid}/cgroup")
        self._pids_events = procs.cgroup_file_of(self.init_pid, "pids", "pids.events") if self.local else None
        self._oom_file = None
        if self.local:
            self._oom_file = (procs.cgroup_file_of(self.init_pid, "memory", "memory.events")
                              or procs.cgroup_file_of(self.init_pid, "memory", "memory.oom_control"))

    def _exec(self, argv: list[str]) -> tuple[int, bytes]:
        result = self.container.exec_run(argv, workdir=self.workdir)
        return result.exit_code, result.output

    # -- files -----------------------------------------------------------------------------------
    def _abspath(self, path: str) -> str:
        return posixpath.normpath(path if path.startswith("/") else posixpath.join(self.workdir, path))

    def write_file(self, path: str, content: str | bytes) -> None:
        """Write a file (parents created) through the engine's archive API (resolved inside the container)."""
        data = content.encode() if isinstance(content, str) else bytes(content)
        target = self._abspath(path)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            parts = target.strip("/").split("/")
            for i in range(1, len(parts)):  # parent directories, so any missing one is created
                info = tarfile.TarInfo("/".join(parts[:i]))
                info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, int(time.time())
                tar.addfile(info)
            info = tarfile.TarInfo(target.strip("/"))
            info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
            tar.addfile(info, io.BytesIO(data))
        if not self.container.put_archive("/", buf.getvalue()):
            raise OSError(f"writing {target} into the container failed")

    def read_file(self, path: str) -> bytes:
        import docker

        target = self._abspath(path)
        try:
            stream, stat = self.container.get_archive(target)
        except docker.errors.NotFound as exc:
            raise FileNotFoundError(f"{target}: no such file in the sandbox") from exc
        raw = b"".join(stream)
        with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
            for member in tar:
                if member.isfile():
                    return tar.extractfile(member).read()
                if member.isdir():
                    raise IsADirectoryError(f"{target} is a directory")
        raise OSError(f"{target} is not a regular file")

    # -- helpers ---------------------------------------------------------------------------------
    def spawn(self, argv: list[str], *, stderr: int | None = subprocess.PIPE) -> subprocess.Popen:
        """Start ``argv`` in the container (``docker exec -i``) with binary stdin/stdout pipes.

        Needs the ``docker`` CLI; the process runs in the same container (limits, files, network).
        Closing its stdin ends most programs; ``close()`` removes the container and everything in it.
        """
        self._check_open()
        if not argv:
            raise ValueError("spawn needs a non-empty argv")
        cli = shutil.which("docker")
        if cli is None:
            raise NotImplementedError("DockerSandbox.spawn needs the docker CLI (apt-get install docker.io)")
        proc = subprocess.Popen([cli, "-H", self.base_url, "exec", "-i", "-w", self.workdir, self.container.id, *argv],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, start_new_session=True)
        self._res.processes = [p for p in self._res.processes if p.poll() is None]
        self._res.processes.append(proc)
        return proc



def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""
