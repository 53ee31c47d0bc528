"""Integration tests are never skipped in CI: a missing requirement fails there."""

from __future__ import annotations

import pytest

from tests.requirements import in_ci, missing, require_command


def test_a_missing_requirement_skips_locally(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no-such-tool"):
        require_command("no-such-tool", "apt-get install no-such-tool")


def test_a_missing_requirement_fails_in_ci(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true, but a requirement is missing: npm"):
        missing("npm is not installed")


def test_ci_machines_have_what_the_openclaw_and_docker_tests_need():
    """Under CI=true (.ci/run), `make test` must have installed npm (the OpenClaw test) and docker."""
    if not in_ci():
        pytest.skip("only meaningful under CI=true")
    require_command("npm", "scripts/system_deps.sh installs it")
    require_command("dockerd", "scripts/system_deps.sh installs it")
