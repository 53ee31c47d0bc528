"""Argument helpers shared by the subcommands: env ids, ``key=value`` pairs, policies, judges."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

import gymnasium as gym

import clawgym  # noqa: F401  (registers the ids)
from clawgym.errors import UsageError

POLICIES = ("scripted", "openai", "hf")


def check_env_id(env_id: str) -> str:
    if env_id not in gym.registry:
        known = ", ".join(sorted(i for i in gym.registry if i.startswith("clawgym/")))
        raise UsageError(f"unknown environment {env_id!r}; registered: {known}")
    return env_id


def parse_env_args(pairs: Sequence[str]) -> dict[str, Any]:
    """``key=value`` pairs for gym.make; values are JSON when they parse, else strings."""
    kwargs: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--env-arg expects key=value, got {pair!r}")
        try:
            kwargs[key] = json.loads(value)
        except json.JSONDecodeError:
            kwargs[key] = value
    return kwargs


def build_policy(kind: str, model: str | None, base_url: str | None, api_key: str | None) -> Any:
    """``scripted`` (the do-nothing baseline), ``openai`` (any compatible server) or ``hf`` (a local model)."""
    if kind == "scripted":
        from clawgym.rl.policy.scripted import ScriptedPolicy

        return ScriptedPolicy()
    if kind == "openai":
        if not base_url or not model:
            raise UsageError("--policy openai needs --base-url and --model")
        from clawgym.rl.policy.openai import OpenAIPolicy

        return OpenAIPolicy(model=model, base_url=base_url, api_key=api_key)
    if kind == "hf":
        from clawgym.rl.policy.hf import HFPolicy
        from clawgym.rl.policy.models import SMOLLM2, TINY_RANDOM

        name = model or SMOLLM2
        if name not in (SMOLLM2, TINY_RANDOM) and not Path(name).is_dir():
            raise UsageError(f"unknown model {name!r}: use {SMOLLM2}, {TINY_RANDOM} or an HF checkpoint directory")
        return HFPolicy.from_pretrained(name)
    raise UsageError(f"unknown --policy {kind!r}: use {', '.join(POLICIES)}")


def check_judge_spec(spec: str) -> list[str]:
    """The parts of a ``--judge`` value; an unknown part is a usage error naming the valid ones."""
    from clawgym.rl.judge import JUDGE_TYPES

    parts = [p.strip() for p in spec.split(",") if p.strip()]
    bad = [p for p in parts if p not in JUDGE_TYPES]
    if bad or not parts:
        raise UsageError(f"unknown judge {', '.join(map(repr, bad)) if bad else repr(spec)}: use {', '.join(JUDGE_TYPES)} (comma-joined)")
    return parts
