"""Sandboxes: where untrusted actions run. ``make_sandbox(kind, config)`` picks a backend.

- ``bwrap`` (the default on Linux): bubblewrap namespaces + cgroup limits + one persistent bash.
- ``docker``: the same semantics on a Docker Engine (``config.image``), through the docker SDK.
- ``local``: an UNSANDBOXED process on the host, for debugging only; never chosen by ``auto``.
"""

from __future__ import annotations

import sys
from typing import Any

from clawgym.sandbox.base import ExecResult, Sandbox, SandboxConfig, SandboxFactory, SandboxUnavailable

KINDS = ("auto", "bwrap", "docker", "local")


def make_sandbox(kind: str | SandboxFactory = "auto", config: SandboxConfig | None = None,
                 **backend_options: Any) -> Sandbox:
    """Start a sandbox of ``kind``; ``backend_options`` go to the backend (e.g. docker's ``client=``).

    ``auto`` is bubblewrap on Linux; it never falls back to the unsandboxed ``local`` backend. A callable
    ``kind`` is a factory a setting was given (``sandbox=`` of ToolCall-v0, SWE-v0): it gets the config.
    Raises :class:`SandboxUnavailable` with install/start instructions when the backend cannot run.
    """
    config = config or SandboxConfig()
    if callable(kind):
        return kind(config, **backend_options)
    if kind not in KINDS:
        raise ValueError(f"unknown sandbox kind {kind!r}; choose one of {', '.join(KINDS)}")
    if kind == "auto":
        if not sys.platform.startswith("linux"):
            raise SandboxUnavailable("no default sandbox off Linux: use make_sandbox('docker', "
                                     "...) with a Docker Engine")
        kind = "bwrap"
    if kind == "bwrap":
        from clawgym.sandbox.bwrap import BwrapSandbox

        return BwrapSandbox(config, **backend_options)
    if kind == "docker":
        from clawgym.sandbox.docker import DockerSandbox

        return DockerSandbox(config, **backend_options)
    from clawgym.sandbox.local import LocalSandbox

    return LocalSandbox(config, **backend_options)


__all__ = ["ExecResult", "KINDS", "Sandbox", "SandboxConfig", "SandboxFactory", "SandboxUnavailable", "make_sandbox"]
