"""The allocator limits a training run applies on the host (clawgym.rl.launch.host_memory)."""

import platform

import pytest

from clawgym.rl.launch.host_memory import ARENAS, MMAP_THRESHOLD, bound_heap_growth

glibc = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")


@glibc
def test_both_limits_apply_on_glibc(monkeypatch):
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    assert bound_heap_growth() == {"MALLOC_ARENA_MAX": ARENAS, "MALLOC_MMAP_THRESHOLD_": MMAP_THRESHOLD}


@glibc
def test_the_environment_wins(monkeypatch):
    """A user who sets glibc's own variables keeps them: glibc read them at start, nothing overrides them."""
    monkeypatch.setenv("MALLOC_ARENA_MAX", "8")
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    assert bound_heap_growth() == {"MALLOC_MMAP_THRESHOLD_": MMAP_THRESHOLD}


def test_a_training_run_applies_them_before_building(monkeypatch):
    from clawgym.rl.launch import main
    from clawgym.rl.launch.loading import load_config

    calls = []
    monkeypatch.setattr("clawgym.rl.launch.host_memory.bound_heap_growth", lambda: calls.append("bounded") or {})
    main.prepare_host(load_config(None, ["loop.torch_threads=0"]))
    assert calls == ["bounded"]
