"""Checks that every sandbox backend must pass the same way, called from each backend's test module."""

from __future__ import annotations


def assert_memory_bomb_is_killed(sb, timeout: float) -> None:
    """Allocating past the memory limit is OOM-killed (137) with a note, and the shell keeps its state."""
    sb.run("export KEEP=mem")
    r = sb.run("python3 -c 'x = bytearray(1 << 30); print(len(x))'", timeout=timeout)
    assert r.exit_code == 137 and r.stdout == ""
    assert "out of memory" in r.stderr
    assert sb.run("echo $KEEP").stdout == "mem\n"
