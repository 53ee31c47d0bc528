"""The demo says, before it trains, when its time budget is too little for this CPU to show a gain."""

from __future__ import annotations

import pytest

from clawgym import demo
from clawgym.inference import catalog
from clawgym.rl.launch import load_config


def demo_config(*overrides: str):
    return load_config(str(demo.DEMO_CONFIG), list(overrides))


@pytest.mark.parametrize("emulated", [True, False])
def test_note_only_where_bfloat16_is_emulated(monkeypatch, emulated):
    monkeypatch.setattr(catalog, "emulates_bf16", lambda device: emulated)
    note = demo.budget_note(demo_config("policy.dtype=float32"), minutes_given=False)
    if emulated:
        assert "--minutes 35" in note and "15 minutes gave 8 train steps" in note
    else:
        assert note is None


def test_no_note_when_the_user_chose_the_budget_or_the_dtype(monkeypatch):
    monkeypatch.setattr(catalog, "emulates_bf16", lambda device: True)
    assert demo.budget_note(demo_config("policy.dtype=float32"), minutes_given=True) is None
    assert demo.budget_note(demo_config("policy.dtype=bfloat16"), minutes_given=False) is None  # asked for it
    assert demo.budget_note(demo_config("policy.dtype=float32", "policy.model=smollm2-135m"),
                            minutes_given=False) is None  # computes in float32 anyway
