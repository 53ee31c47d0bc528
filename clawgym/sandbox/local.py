"""UNSANDBOXED local backend, for debugging only: the persistent-shell protocol on a plain host bash.

Nothing is isolated: commands run as this user, see and may change the whole host and network.
It exists so a setting can be debugged where bubblewrap and Docker are unavailable; it is never
chosen by ``make_sandbox("auto")`` and logs a warning every time one starts. The work dir is a host
temp dir (``config.workdir`` cannot be honoured without a mount namespace); ``self.workdir`` says where.
Memory/pid limits are not enforced; timeouts kill what the command started in the shell's session.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import tempfile
import weakref
from pathlib import Path

from clawgym.sandbox import procs
from clawgym.sandbox.base import SandboxConfig
from clawgym.sandbox.shell import SHELL_ENV, PipeTransport, ShellSandbox, ShellSession, shell_argv

log = logging.getLogger(__name__)

WARNING = "LocalSandbox is NOT a sandbox: commands run unisolated on the host (debugging only)"


def _release(processes: list[subprocess.Popen], host_dir: str) -> None:
    for proc in processes:
        if proc.poll() is None:
            procs.signal_pids(procs.session_members(proc.pid), signal.SIGKILL)
            proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    processes.clear()
    shutil.rmtree(host_dir, ignore_errors=True)


class LocalSandbox(ShellSandbox):
    """Same API as the real backends, no isolation at all. See the module docstring."""

    kind = "local"
    limits_enforced = False
    sandboxed = False

    def __init__(self, config: SandboxConfig | None = None):
        log.warning(WARNING)
        self.config = config or SandboxConfig()
        self.host_dir = tempfile.mkdtemp(prefix="clawgym-local-")
        self.workdir = self.host_dir
        self.config = SandboxConfig(**{**self.config.__dict__, "workdir": self.workdir})
        self._init_shell_state()
        self._processes: list[subprocess.Popen] = []
        self._finalizer = weakref.finalize(self, _release, self._processes, self.host_dir)
        self._shell: subprocess.Popen | None = None
        self._write_files_and_open_shell()

    def _env(self) -> dict[str, str]:
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": self.workdir, "LANG": "C.UTF-8",
                "TERM": "dumb", **self.config.env}

    def _start_shell(self, token: str) -> ShellSession:
        self._shell = subprocess.Popen(shell_argv(token), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, cwd=self.workdir, env={**self._env(), **SHELL_ENV},
                                       start_new_session=True)
        self._processes.append(self._shell)
        return ShellSession(PipeTransport(self._shell.stdin.fileno(), self._shell.stdout.fileno(),
                                          self._shell.stderr.fileno()), token)

    def _stop_shell(self) -> int | None:
        shell, self._shell = self._shell, None
        if shell is None:
            return None
        self._kill_started_since(None, shell)
        _release([shell], "")
        self._processes.remove(shell)
        return shell.returncode

    def _kill_started_since(self, tick: int | None, shell: subprocess.Popen | None = None) -> int:
        shell = shell or self._shell
        if shell is None:
            return 0
        return procs.kill_namespace("", keep={shell.pid}, since_tick=tick,
                                    members=lambda: procs.session_members(shell.pid))

    def _signal_shell(self, sig: int) -> None:
        if self._shell is not None and self._shell.poll() is None:
            os.kill(self._shell.pid, sig)

    def _path(self, path: str) -> Path:
        return Path(path if os.path.isabs(path) else os.path.join(self.workdir, path))

    def write_file(self, path: str, content: str | bytes) -> None:
        target = self._path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode() if isinstance(content, str) else bytes(content))

    def read_file(self, path: str) -> bytes:
        return self._path(path).read_bytes()

    def spawn(self, argv: list[str], *, stderr: int | None = subprocess.PIPE) -> subprocess.Popen:
        self._check_open()
        proc = subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                cwd=self.workdir, env=self._env(), start_new_session=True)
        self._processes.append(proc)
        return proc

