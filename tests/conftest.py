"""Shared pytest fixtures. Keep it small: each fixture's body lives in its own helper module."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def docker_engine():
    """A private dockerd with clawgym/base:bookworm (see tests/docker_engine.py); skips saying why if none can start."""
    from tests.docker_engine import docker_engine_fixture

    yield from docker_engine_fixture()


@pytest.fixture
def tcp_server():
    """A TCP server on 127.0.0.1 that records what each connection sent (see tests/tcp_server.py)."""
    from tests.tcp_server import TcpServer

    server = TcpServer()
    yield server
    server.close()
