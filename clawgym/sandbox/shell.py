"""The persistent-shell protocol every shell backend shares (bwrap, docker, local).

One bash per episode runs a small driver (:data:`DRIVER`). The host writes each command as
``<byte length>\\n<bytes>``; the driver runs it *in the shell itself* (so ``cd`` and ``export``
persist), with stdin from /dev/null, then frames the end of its output with markers carrying a
random per-shell token: on stderr ``RS tok E\\n``, on stdout ``RS tok S <exit code> <cwd>\\0<export -p>\\0``.
No process starts per command; a trivial command is a pipe round trip.

Timeouts are host-side (:class:`ShellSandbox`): the shell gets SIGUSR1, whose trap returns from the
function running the command (at once in a builtin loop such as ``while :; do :; done``, otherwise
as soon as the foreground child dies), and every process the command started is killed (the backend
walks its pid namespace for processes started since the command began). If the shell still does not
report, it is replaced by a new one, restored to the last known cwd and exported variables, and the
result says so.

Output is capped per stream: the first and last halves of ``output_limit`` bytes are kept, the middle
is replaced by a marker line saying how much was dropped.
"""

from __future__ import annotations

import logging
import os
import secrets
import select
import shlex
import signal
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from clawgym.sandbox import procs
from clawgym.sandbox.base import ExecResult, SandboxConfig

if TYPE_CHECKING:
    from typing_extensions import Self

log = logging.getLogger(__name__)

RS = b"\x1e"

# $1: the token. fds 18/19 keep the real stdout/stderr so a command's `exec >file` cannot hide the
# markers; commands see them closed.
DRIVER = r"""
unset __CG_DRIVER
__cg_tok=$1
exec 18>&1 19>&2
__cg_run() { eval "$1"; }
__cg_read() {
  local __cg_n __cg_s
  while :; do
    IFS= read -r __cg_n; __cg_s=$?
    (( __cg_s > 128 )) && continue
    (( __cg_s == 0 )) || return 1
    LC_ALL=C IFS= read -r -N "$__cg_n" __cg_c
    return 0
  done
}
trap : USR1
__cg_read || exit 0
eval "$__cg_c"
printf '\036%s R %d\n' "$__cg_tok" "$$" >&18
while __cg_read; do
  trap 'return 130' USR1
  __cg_run "$__cg_c" </dev/null 1>&18 2>&19 18>&- 19>&-
  __cg_rc=$?
  trap : USR1
  printf '\036%s E\n' "$__cg_tok" >&19
  { printf '\036%s S %d %s\0' "$__cg_tok" "$__cg_rc" "$PWD"; export -p; printf '\0'; } >&18
done
exit 0
"""


# The driver travels in an environment variable it unsets at once, so `ps` in the sandbox shows a
# one-line shell instead of the whole script, and commands never inherit it.
SHELL_ENV = {"__CG_DRIVER": DRIVER}


def shell_argv(token: str) -> list[str]:
    """The shell's argv; it must start with :data:`SHELL_ENV` in its environment."""
    return ["bash", "--noprofile", "--norc", "-c", 'eval "$__CG_DRIVER"', "bash", token]


class OutputBuffer:
    """Keeps the first and last ``limit // 2`` bytes of a stream and counts what it dropped."""

    def __init__(self, limit: int):
        self.head_limit = limit - limit // 2
        self.tail_limit = limit // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def feed(self, data: bytes) -> None:
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data:
            return
        self.tail += data
        excess = len(self.tail) - self.tail_limit
        if excess > 0:
            del self.tail[:excess]
            self.dropped += excess

    def text(self) -> str:
        head = self.head.decode("utf-8", errors="replace")
        if not self.dropped:
            return head + self.tail.decode("utf-8", errors="replace")
        marker = f"\n[... clawgym: {self.dropped} bytes of output truncated ...]\n"
        return head + marker + self.tail.decode("utf-8", errors="replace")


class PipeTransport:
    """The shell's stdin/stdout/stderr as OS pipes (bwrap and local backends)."""

    def __init__(self, stdin_fd: int, stdout_fd: int, stderr_fd: int):
        self.stdin_fd = stdin_fd
        self.fds = {stdout_fd: 1, stderr_fd: 2}
        self.poller = select.poll()
        for fd in self.fds:
            os.set_blocking(fd, False)
            self.poller.register(fd, select.POLLIN)

    def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                n = os.write(self.stdin_fd, view)
            except BlockingIOError:
                select.select([], [self.stdin_fd], [], 1.0)
                continue
            view = view[n:]

    def recv(self, timeout: float) -> list[tuple[int, bytes]] | None:
        """Chunks that arrived within ``timeout`` seconds; ``None`` once both streams are closed."""
        if not self.fds:
            return None
        chunks = []
        for fd, _ in self.poller.poll(max(0.0, timeout) * 1000):
            try:
                data = os.read(fd, 1 << 16)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if data:
                chunks.append((self.fds[fd], data))
            else:
                self.poller.unregister(fd)
                del self.fds[fd]
        if not chunks and not self.fds:
            return None
        return chunks


class ShellSession:
    """Host side of one driver: sends commands, splits the streams at the markers."""

    def __init__(self, transport, token: str):
        self.transport = transport
        self.token = token.encode()
        self.stdout_mark = RS + self.token + b" S "
        self.stderr_mark = RS + self.token + b" E\n"
        self.pending = {1: bytearray(), 2: bytearray()}
        self.shell_pid: int | None = None  # the shell's pid inside its own pid namespace

    def handshake(self, restore: str, timeout: float) -> None:
        """Send the restore script and wait for the driver's ready line (anything before it is noise)."""
        self._send(restore)
        mark = RS + self.token + b" R "
        deadline = time.monotonic() + timeout
        while True:
            buf = self.pending[1]
            at = buf.find(mark)
            if at >= 0:
                end = buf.find(b"\n", at)
                if end >= 0:
                    self.shell_pid = int(buf[at + len(mark):end])
                    del buf[:end + 1]
                    self.pending[2].clear()
                    return
            chunks = self.transport.recv(deadline - time.monotonic())
            if chunks is None:
                raise RuntimeError("the sandbox shell exited during start-up: "
                                   f"{self.pending[2].decode(errors='replace')[-500:]}")
            for stream, data in chunks:
                self.pending[stream] += data
            if time.monotonic() > deadline:
                raise TimeoutError(f"the sandbox shell did not start within {timeout:.1f}s")

    def _send(self, command: str) -> None:
        payload = command.encode("utf-8", errors="surrogateescape")
        self.transport.send(b"%d\n" % len(payload) + payload)

    def start(self, command: str, limit: int) -> None:
        self.out = {1: OutputBuffer(limit), 2: OutputBuffer(limit)}
        self.done = {1: False, 2: False}
        self.exit_code: int | None = None
        self.cwd: str | None = None
        self.exports: str | None = None
        self._send(command)
        for stream in (1, 2):
            self._scan(stream)

    def wait(self, deadline: float) -> str:
        """Collect output until both markers arrived (``"done"``), the deadline (``"timeout"``) or EOF (``"eof"``)."""
        while not (self.done[1] and self.done[2]):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return "timeout"
            chunks = self.transport.recv(remaining)
            if chunks is None:
                for stream in (1, 2):  # whatever the dead shell's command had written
                    if not self.done[stream]:
                        self.out[stream].feed(bytes(self.pending[stream]))
                        self.pending[stream].clear()
                return "eof"
            for stream, data in chunks:
                if self.done[stream]:
                    self.pending[stream] += data  # a background process writing after the marker: next command's
                else:
                    self.pending[stream] += data
                    self._scan(stream)
        return "done"

    def _scan(self, stream: int) -> None:
        buf = self.pending[stream]
        mark = self.stdout_mark if stream == 1 else self.stderr_mark
        at = buf.find(mark)
        if at < 0:
            keep = len(mark) - 1  # a marker may be split across reads
            if len(buf) > keep:
                self.out[stream].feed(bytes(buf[:len(buf) - keep]))
                del buf[:len(buf) - keep]
            return
        if stream == 2:
            self.out[2].feed(bytes(buf[:at]))
            del buf[:at + len(mark)]
            self.done[2] = True
            return
        first = buf.find(b"\0", at)
        second = buf.find(b"\0", first + 1) if first >= 0 else -1
        if second < 0:  # the trailer is still arriving
            if at > 0:
                self.out[1].feed(bytes(buf[:at]))
                del buf[:at]
            return
        self.out[1].feed(bytes(buf[:at]))
        status = bytes(buf[at + len(mark):first]).decode("utf-8", errors="surrogateescape")
        code, _, cwd = status.partition(" ")
        self.exit_code = int(code)
        self.cwd = cwd
        self.exports = bytes(buf[first + 1:second]).decode("utf-8", errors="surrogateescape")
        del buf[:second + 1]
        self.done[1] = True


@dataclass
class _Snapshot:
    cwd: str
    exports: str = ""


class ShellSandbox:
    """What every shell backend shares: ``run`` with timeouts, caps, limit notes and shell restarts.

    Subclasses provide the shell process (``_start_shell``/``_stop_shell``) and the levers a
    timeout needs (``_kill_started_since``, ``_signal_shell``), plus optional counters
    (``_pids_limit_hits``, ``_oom_kills``), and set ``_finalizer``: a ``weakref.finalize`` that
    releases what the backend holds, so ``close()`` and garbage collection free it the same way.
    """

    config: SandboxConfig
    _finalizer: Callable[[], Any]
    kill_grace_s = 2.0  # after SIGUSR1 + killing the command's processes, how long before the shell is replaced

    def _init_shell_state(self) -> None:
        self._lock = threading.RLock()
        self._session: ShellSession | None = None
        self._snapshot = _Snapshot(cwd=self.config.workdir)
        self.restarts = 0
        self.closed = False
        self._pids_hits = 0
        self._ooms = 0

    # -- hooks ---------------------------------------------------------------------------------
    def _start_shell(self, token: str) -> ShellSession:
        raise NotImplementedError

    def _stop_shell(self) -> int | None:
        """Kill the current shell; return its exit status when known."""
        raise NotImplementedError

    def _kill_started_since(self, tick: int | None) -> int:
        """Kill every process in the sandbox but the shell started at/after ``tick`` (all when None)."""
        raise NotImplementedError

    def _signal_shell(self, sig: int) -> None:
        raise NotImplementedError

    def _now_tick(self) -> int:
        """The clock ``_kill_started_since`` compares process start times with (host boot ticks)."""
        return procs.boot_ticks()

    def _pids_limit_hits(self) -> int:
        return 0

    def _oom_kills(self) -> int:
        return 0

    # -- shell lifecycle -------------------------------------------------------------------------
    def _restore_script(self) -> str:
        snap = self._snapshot
        workdir = shlex.quote(self.config.workdir)
        return f"cd -- {shlex.quote(snap.cwd)} 2>/dev/null || cd -- {workdir} 2>/dev/null\n{snap.exports}\n"

    def _open_shell(self) -> None:
        token = secrets.token_hex(16)
        self._session = self._start_shell(token)
        try:
            self._session.handshake(self._restore_script(), timeout=30.0)
        except BaseException:
            self._stop_shell()
            self._session = None
            raise

    def _restart(self) -> int | None:
        if self.closed:
            raise RuntimeError("the sandbox was closed while a command ran")
        self.restarts += 1
        status = self._stop_shell()
        self._session = None
        self._open_shell()
        return status

    # -- lifetime --------------------------------------------------------------------------------
    def close(self) -> None:
        """Kill every process and release what the backend holds (``_finalizer``). Idempotent."""
        self.closed = True
        self._session = None
        self._finalizer()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write_files_and_open_shell(self) -> None:
        """A backend's last start step: the config's files into the work dir, then the shell; a failure
        releases everything the backend started before it is raised."""
        try:
            for path, content in self.config.files.items():
                self.write_file(path, content)
            self._open_shell()
        except BaseException:
            self.close()
            raise

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("the sandbox is closed")

    # -- the protocol ----------------------------------------------------------------------------
    def run(self, command: str, timeout: float | None = None) -> ExecResult:
        """Run ``command`` in the persistent shell. See the module docstring for timeouts and caps."""
        if "\0" in command:
            raise ValueError("a shell command cannot contain NUL bytes")
        timeout = self.config.timeout_s if timeout is None else float(timeout)
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        with self._lock:
            if self.closed:
                raise RuntimeError("the sandbox is closed")
            notes: list[str] = []
            self._check_limits(notes)  # a bomb the previous command left in the background
            if self._session is None:
                self._open_shell()
            session = self._session
            started = time.monotonic()
            start_tick = self._now_tick()
            session.start(command, self.config.output_limit)
            state = session.wait(started + timeout)
            timed_out = state == "timeout"
            exit_code: int | None = None
            if timed_out:
                # USR1 first: its trap aborts the rest of the command line as soon as the shell is free
                # (at once in a builtin loop, after the foreground child dies otherwise), then the kill.
                self._signal_shell(signal.SIGUSR1)
                killed = self._kill_started_since(start_tick)
                state = session.wait(time.monotonic() + self.kill_grace_s)
                if state == "timeout":
                    self._restart()
                    notes.append("[clawgym: the shell did not come back after the timeout; a new shell was started "
                                 "with the previous working directory and exported variables]")
                else:
                    what = f"{killed} process(es) it started were" if killed >= 0 else "its processes were"
                    notes.append(f"[clawgym: command timed out after {timeout:g}s; {what} killed]")
                exit_code = 124
            if state == "eof":
                status = self._restart()
                if exit_code is None:
                    exit_code = status if status is not None else -1
                notes.append(f"[clawgym: the shell exited (status {status}); a new shell was started with the previous "
                             "working directory and exported variables]")
            elif state == "done":
                self._snapshot = _Snapshot(cwd=session.cwd or self._snapshot.cwd, exports=session.exports or "")
                if exit_code is None:
                    exit_code = session.exit_code
            self._check_limits(notes)
            stdout, stderr = session.out[1], session.out[2]
            err = stderr.text()
            if notes:
                err = (err + ("\n" if err and not err.endswith("\n") else "") + "\n".join(notes) + "\n")
            return ExecResult(exit_code=int(exit_code if exit_code is not None else -1), stdout=stdout.text(),
                              stderr=err, timed_out=timed_out, truncated=bool(stdout.dropped or stderr.dropped),
                              duration_s=time.monotonic() - started)

    def _check_limits(self, notes: list[str]) -> None:
        """After the pids limit was hit (a fork bomb): end every process but the shell's state, so the
        sandbox has pids to work with again; note OOM kills."""
        hits = self._pids_limit_hits()
        if hits > self._pids_hits:
            self._reset_processes()
            self._pids_hits = self._pids_limit_hits()
            notes.append(f"[clawgym: the sandbox reached its process limit ({self.config.pids_max}); every process in "
                         "it was killed and a new shell was started with the previous working directory and exported "
                         "variables]")
        ooms = self._oom_kills()
        if ooms > self._ooms:
            notes.append(f"[clawgym: out of memory: the kernel killed {ooms - self._ooms} process(es) "
                         f"(limit {self.config.memory_mb} MB)]")
            self._ooms = ooms

    def _reset_processes(self) -> None:
        """Kill every process in the sandbox and start a new shell (default: the whole pid namespace goes with its
        pid 1)."""
        self._restart()
