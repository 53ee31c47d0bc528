"""Client for the persistent Python interpreter (``python_driver.py``) running inside a sandbox.

The interpreter is one long-lived process per episode, started through a launcher's
``spawn(argv) -> subprocess.Popen`` (a :class:`clawgym.sandbox.base.Sandbox`), so a ``python`` tool
call costs a pipe round trip instead of a process start. Timeouts are two-stage: the driver
interrupts pure-Python code itself (variables survive); if no answer arrives ``grace_s`` later the
client kills the process and starts a fresh one, and says that the state was lost.
"""

from __future__ import annotations

import json
import logging
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from clawgym.sandbox.procs import kill_and_reap

log = logging.getLogger(__name__)

DRIVER_SOURCE = (Path(__file__).with_name("python_driver.py")).read_text(encoding="utf-8")


class Launcher(Protocol):
    def spawn(self, argv: list[str]) -> subprocess.Popen: ...


class InterpreterError(RuntimeError):
    """The interpreter could not be started (missing python in the sandbox, sandbox failure)."""


@dataclass
class ExecOutcome:
    """What one ``execute`` produced. ``state_lost`` means the interpreter was restarted afterwards."""

    stdout: str = ""
    stderr: str = ""
    value: str | None = None
    error: str | None = None
    stdout_dropped: int = 0
    stderr_dropped: int = 0
    interrupted: bool = False  # soft timeout: stopped by the driver, namespace kept
    killed: bool = False  # hard timeout: killed by the client
    crashed: str | None = None  # the process died by itself (OOM kill, os._exit, segfault)
    state_lost: bool = False

    @property
    def timed_out(self) -> bool:
        return self.interrupted or self.killed

    @property
    def failed(self) -> bool:
        return bool(self.error) or self.timed_out or self.crashed is not None


class PythonInterpreter:
    """One persistent interpreter; ``execute`` never raises for anything the executed code does."""

    def __init__(
        self,
        launcher: Launcher,
        *,
        python: str | None = None,
        timeout_s: float = 10.0,
        grace_s: float = 2.0,
        memory_mb: int | None = 1024,
        file_size_mb: int | None = 64,
        output_limit: int = 4000,
        startup_timeout_s: float = 60.0,
    ) -> None:
        self.launcher = launcher
        self.python = python or sys.executable
        self.timeout_s = timeout_s
        self.grace_s = grace_s
        self.output_limit = output_limit
        self.startup_timeout_s = startup_timeout_s
        self.limits = {"memory_mb": memory_mb, "file_size_mb": file_size_mb, "output_limit": output_limit}
        self.max_reply_bytes = 8 * output_limit + 65536  # 2 streams + repr + traceback, JSON-escaped
        self.proc: subprocess.Popen | None = None
        self._ready = False
        self._buffer = bytearray()
        self.restarts = 0

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Spawn the process without waiting for it: it boots while the agent thinks."""
        if self.proc is not None:
            return
        argv = [self.python, "-I", "-u", "-c", DRIVER_SOURCE, json.dumps(self.limits)]
        try:
            self.proc = self.launcher.spawn(argv)
        except OSError as exc:
            raise InterpreterError(f"the python interpreter did not start: {exc}") from exc
        if self.proc.stdin is None or self.proc.stdout is None:
            self._kill()
            raise InterpreterError("the launcher must give the process stdin and stdout pipes")
        self._ready = False
        self._buffer.clear()

    def _ensure_ready(self) -> None:
        self.start()
        if self._ready:
            return
        try:
            line = self._read_line(time.monotonic() + self.startup_timeout_s)
        except EOFError:
            line = ""
        try:
            hello = json.loads(line) if line else None
        except ValueError:
            hello = None
        if not isinstance(hello, dict) or not hello.get("ready"):
            complaint = self._stderr_tail()
            code = self._kill()
            raise InterpreterError(
                f"the python interpreter did not start (exit code {code}): {(complaint or line or '')[-500:]!r}")
        self._ready = True

    def restart(self) -> None:
        self._kill()
        self.restarts += 1
        self.start()

    def close(self) -> None:
        self._kill()

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # ------------------------------------------------------------------ execution
    def execute(self, code: str, timeout: float | None = None) -> ExecOutcome:
        timeout = self.timeout_s if timeout is None else timeout
        self._ensure_ready()
        assert self.proc is not None and self.proc.stdin is not None
        request = {"op": "exec", "code": code, "timeout": timeout, "output_limit": self.output_limit}
        try:
            self.proc.stdin.write(json.dumps(request).encode("utf-8") + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return self._crashed()
        try:
            line = self._read_line(time.monotonic() + timeout + self.grace_s)
        except _ReplyTooLarge:
            self.restart()
            return ExecOutcome(crashed="the interpreter sent an oversized reply", state_lost=True)
        except EOFError:
            return self._crashed()
        if line is None:  # still running past the soft interrupt: stuck in C code or ignoring signals
            log.info("python code ignored the soft interrupt; killing the interpreter")
            self.restart()
            return ExecOutcome(killed=True, state_lost=True)
        try:
            reply = json.loads(line)
        except ValueError:
            reply = None
        if not isinstance(reply, dict):  # something wrote into the protocol channel
            self.restart()
            return ExecOutcome(crashed="the interpreter sent an unreadable reply", state_lost=True)
        if not reply.get("ok"):
            return ExecOutcome(error=str(reply.get("error")))
        return ExecOutcome(
            stdout=reply.get("stdout", ""),
            stderr=reply.get("stderr", ""),
            value=reply.get("value"),
            error=reply.get("error"),
            stdout_dropped=int(reply.get("stdout_dropped", 0)),
            stderr_dropped=int(reply.get("stderr_dropped", 0)),
            interrupted=bool(reply.get("interrupted")),
        )

    def _crashed(self) -> ExecOutcome:
        if self.proc is not None:
            try:  # its output closed; let it finish exiting so the exit code is its own, not our kill
                self.proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                pass
        code = self._kill()
        reason = f"exit code {code}"
        # a negative code is a signal; a sandbox wrapper (bwrap as pid 1) reports one as 128 + signal
        signum = (-code if code is not None and code < 0 else code - 128
                  if code is not None and 128 < code < 160 else None)
        if signum is not None:
            try:
                reason = f"killed by {signal.Signals(signum).name}"
            except ValueError:
                pass
            if signum == signal.SIGKILL:
                reason += ", most likely out of memory"
        self.restarts += 1
        self.start()
        return ExecOutcome(crashed=reason, state_lost=True)

    # ------------------------------------------------------------------ pipes
    def _read_line(self, deadline: float) -> str | None:
        """One reply line, or None at the deadline; EOFError if the process closed its output."""
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[:end + 1]
                return line.decode("utf-8", "replace")
            if len(self._buffer) > self.max_reply_bytes:
                raise _ReplyTooLarge()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise EOFError("the interpreter closed its output")
            self._buffer += chunk

    def _stderr_tail(self) -> str:
        """What a process that failed to start said on stderr (when the launcher piped it), without blocking."""
        if self.proc is None or self.proc.stderr is None:
            return ""
        try:
            self.proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return ""
        fd = self.proc.stderr.fileno()
        if not select.select([fd], [], [], 0)[0]:
            return ""
        return os.read(fd, 4096).decode("utf-8", "replace").strip()

    def _kill(self) -> int | None:
        proc, self.proc = self.proc, None
        self._ready = False
        self._buffer.clear()
        if proc is None:
            return None
        return kill_and_reap(proc)


class _ReplyTooLarge(Exception):
    pass


def describe(outcome: ExecOutcome, timeout: float) -> str:
    """The tool message an agent reads: output, value, traceback, and what happened to its state."""
    parts: list[str] = []
    for text, dropped, name in ((outcome.stdout, outcome.stdout_dropped, "stdout"),
                                (outcome.stderr, outcome.stderr_dropped, "stderr")):
        if text.strip() or dropped:
            if dropped:
                text = text + f"\n... [{name} truncated: {dropped} more bytes]"
            parts.append(text.rstrip("\n"))
    if outcome.value is not None:
        parts.append(outcome.value)
    if outcome.error:
        parts.append(outcome.error.rstrip("\n"))
    if outcome.interrupted:
        parts.append(f"TimeoutError: the code ran longer than {timeout:g} s and was interrupted; "
                     "variables assigned before the interruption are kept.")
    if outcome.killed:
        parts.append(f"TimeoutError: the code ran longer than {timeout:g} s and did not stop when interrupted; "
                     "the interpreter was restarted and all variables and imports were lost.")
    if outcome.crashed:
        parts.append(f"Error: the interpreter died ({outcome.crashed}); it was restarted and all variables "
                     "and imports were lost.")
    return "\n".join(parts) if parts else "(no output)"
