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


# what an env's constructor raises for a keyword or a value it refuses: the user's input, not a bug
ENV_ARG_ERRORS = (ValueError, TypeError, LookupError, FileNotFoundError)


def make_env(env_id: str, env_kwargs: dict[str, Any]) -> gym.Env:
    """``gym.make``, where a keyword or value the env refuses is a UsageError (one line, exit 2) that
    says what was passed and, for a comma-joined value, how to pass a list."""
    check_env_id(env_id)
    try:
        return gym.make(env_id, **env_kwargs)
    except ENV_ARG_ERRORS as exc:
        passed = " ".join(f"{key}={value!r}" for key, value in env_kwargs.items()) or "no arguments"
        raise UsageError(f"{env_id} refused {passed}: {exc}{list_hint(env_kwargs)}") from exc


def check_env_args(env_id: str, env_kwargs: dict[str, Any]) -> None:
    """Build the env once and close it, so a bad ``--env-arg`` fails before a model loads or a worker starts."""
    make_env(env_id, env_kwargs).close()


def list_hint(env_kwargs: dict[str, Any]) -> str:
    """How to pass a list, for the first value that looks like one written with commas."""
    for key, value in env_kwargs.items():
        if isinstance(value, str) and "," in value:
            items = json.dumps([item.strip() for item in value.split(",")], separators=(",", ":"))
            return f" (a list is written as JSON: --env-arg '{key}={items}')"
    return ""


def build_policy(kind: str, model: str | None, base_url: str | None, api_key: str | None) -> Any:
    """``scripted`` (the do-nothing baseline), ``openai`` (any compatible server) or ``hf`` (a local model)."""
    if kind == "scripted":
        from clawgym.inference.scripted import ScriptedPolicy

        return ScriptedPolicy()
    if kind == "openai":
        if not base_url or not model:
            raise UsageError("--policy openai needs --base-url and --model")
        from clawgym.inference.openai import OpenAIPolicy

        return OpenAIPolicy(model=model, base_url=base_url, api_key=api_key)
    if kind == "hf":
        from clawgym.inference.catalog import DEFAULT_MODEL, MODELS, known_names
        from clawgym.inference.hf import HFPolicy

        name = model or DEFAULT_MODEL
        if name not in MODELS and not Path(name).is_dir():
            raise UsageError(f"unknown model {name!r}: use one of {known_names()} or an HF checkpoint directory")
        try:
            return HFPolicy.from_pretrained(name)
        except FileNotFoundError as exc:  # a packaged model that was never fetched
            raise UsageError(str(exc)) from None
    raise UsageError(f"unknown --policy {kind!r}: use {', '.join(POLICIES)}")


def check_judge_spec(spec: str) -> list[str]:
    """The parts of a ``--judge`` value; an unknown part is a usage error naming the valid ones."""
    from clawgym.rl.judge import JUDGE_TYPES

    parts = [p.strip() for p in spec.split(",") if p.strip()]
    bad = [p for p in parts if p not in JUDGE_TYPES]
    if bad or not parts:
        raise UsageError(f"unknown judge {', '.join(map(repr, bad)) if bad else repr(spec)}: use "
                         f"{', '.join(JUDGE_TYPES)} (comma-joined)")
    return parts
