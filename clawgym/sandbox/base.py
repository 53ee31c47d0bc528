"""Where untrusted actions run: one small protocol, several backends.

A :class:`Sandbox` is one episode's isolated machine: a persistent shell (cwd and environment
variables survive between ``run`` calls), a private work directory, and resource limits. Settings
only ever see this protocol, so swapping bubblewrap for Docker is a one-argument change
(``make_sandbox("docker", ...)``).

``spawn`` starts a long-lived helper process (e.g. a persistent Python interpreter for the
ToolCall ``python`` tool) under the same isolation and work directory, talking over pipes, so a
hot path never pays for a process start per call.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, runtime_checkable


@dataclass
class ExecResult:
    exit_code: int
    stdout: str
    stderr: str = ""
    timed_out: bool = False
    truncated: bool = False
    duration_s: float = 0.0

    @property
    def output(self) -> str:
        """stdout then stderr, as an agent would see them in a terminal."""
        if self.stderr and self.stdout:
            return self.stdout.rstrip("\n") + "\n" + self.stderr
        return self.stdout or self.stderr


@dataclass
class SandboxConfig:
    """Limits and options shared by every backend."""

    network: bool = False  # network namespace with loopback only unless True
    memory_mb: int = 1024  # cgroup memory.max for everything in the sandbox
    pids_max: int = 256  # cgroup pids.max (a fork bomb stops here)
    timeout_s: float = 30.0  # default per-command timeout
    output_limit: int = 64 * 1024  # bytes kept per stream; the rest is dropped with a marker
    env: dict[str, str] = field(default_factory=dict)
    workdir: str = "/work"  # the path of the private writable directory inside the sandbox
    image: str | None = None  # docker only: the image to run
    files: dict[str, str | bytes] = field(default_factory=dict)  # written into workdir at start
    # host paths covered by an empty tmpfs (bwrap): clawgym's own package is always hidden, so an agent
    # cannot read bundled task data (check scripts, oracle solutions, hidden tests) from inside
    hidden_paths: list[str] = field(default_factory=list)


@runtime_checkable
class Sandbox(Protocol):
    config: SandboxConfig

    def run(self, command: str, timeout: float | None = None) -> ExecResult:
        """Run a shell command in the persistent shell; a timeout kills the command, not the shell."""
        ...

    def write_file(self, path: str, content: str | bytes) -> None:
        """Write a file; relative paths are under the work dir."""
        ...

    def read_file(self, path: str) -> bytes:
        ...

    def spawn(self, argv: list[str]) -> subprocess.Popen:
        """Start a long-lived process under the same isolation, with stdin/stdout pipes (binary)."""
        ...

    def close(self) -> None:
        """Kill every process and remove every directory. Safe to call twice."""
        ...


SandboxFactory = Callable[..., Any]  # SandboxConfig -> a Sandbox (or, for ToolCall-v0, anything with spawn and close)


class SandboxUnavailable(RuntimeError):
    """The requested backend cannot run here; the message says how to install or start it."""
