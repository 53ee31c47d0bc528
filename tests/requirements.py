"""What a test needs from the machine (npm for OpenClaw, a Docker engine, Chromium).

Away from CI a missing requirement skips the test and says what to install. In CI (``CI=true``, set
by ``.ci/run``) ``make test`` installs everything, so a missing requirement is a failure: a skipped
integration test must never pass for a green run.
"""

from __future__ import annotations

import os
import shutil

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def missing(reason: str) -> None:
    """Skip (locally) or fail (in CI) the calling test because ``reason``."""
    if in_ci():
        pytest.fail(f"CI=true, but a requirement is missing: {reason}", pytrace=False)
    pytest.skip(reason)


def require_command(command: str, install_hint: str) -> str:
    path = shutil.which(command)
    if path is None:
        missing(f"{command} is not installed ({install_hint})")
    return path  # type: ignore[return-value]
