"""Judge-only training offline: simulated people talk to the deployed gateway, and only the judge teaches.

A rehearsal of ``clawgym serve``. :func:`build_serving` makes exactly what the server runs (served
policy, gateway, session tracker, turn log, judge stage, personal trainer); simulated persona users
(OpenClawChat's personas and scripted user) then chat with it through the OpenAI API, in process
(``httpx`` ASGI transport, no port). The trainer sees what the deployed product sees: the judge's
verdicts and hints on the users' next messages. The persona checks never reach it: they only score
the first reply on *held-out* tasks (the ``test`` split, disjoint from the ``train`` tasks the users
bring), before and after, with the served weights (greedy, straight from the policy, not logged).

    result = asyncio.run(rehearse(load_config("chat", ["method=hybrid", "judge.type=prob,probhint"]),
                                  persona="teacher", steps=16))
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from clawgym.core.policy import SamplingParams
from clawgym.core.tasks import Task
from clawgym.envs.openclaw_chat.env import SYSTEM_PROMPT
from clawgym.envs.openclaw_chat.people import EVERYONE, PEOPLE, people_tasks
from clawgym.envs.openclaw_chat.personas import Persona, bundled_tasks
from clawgym.envs.openclaw_chat.simulator import ScriptedUser
from clawgym.rl.launch import RunConfig

logger = logging.getLogger(__name__)


@dataclass
class RehearsalResult:
    persona: str
    method: str
    steps: int
    before: float
    after: float
    conversations: int = 0
    turns: int = 0
    judged: int = 0
    refused: dict[str, int] = field(default_factory=dict)  # turns the trainer did not use, and why
    judge_lag_s: float = 0.0  # mean time from a turn's next state to its verdict
    trainer_wait_judge_frac: float = 0.0  # share of the run the trainer idled with turns still being judged
    judge_unavailable: int = 0
    wall_s: float = 0.0
    checks_before: dict[str, float] = field(default_factory=dict)  # each hidden check's held-out pass rate
    checks_after: dict[str, float] = field(default_factory=dict)
    # the held-out score after every ``curve_every`` steps short of the last ({"step", "score", "checks"}):
    # whether a gain builds, holds or fades with more conversation, from the one run
    curve: list[dict[str, Any]] = field(default_factory=list)


def persona_tasks(persona: str, split: str) -> list[Task]:
    """A persona's tasks of one split: the homework personas' or one of the six people's."""
    if persona not in EVERYONE:
        raise ValueError(f"unknown persona {persona!r}; known: {sorted(EVERYONE)}")
    tasks = people_tasks() if persona in PEOPLE else bundled_tasks()
    return [t for t in tasks if t.data["persona"] == persona and t.split == split]


def opening(persona: Persona, task: Task, system_prompt: str = SYSTEM_PROMPT) -> list[dict[str, Any]]:
    return [{"role": "system", "content": system_prompt}, {"role": "user", "content": persona.opener(task)}]


async def score_checks(policy: Any, tasks: list[Task], *, max_tokens: int = 96,
                       system_prompt: str = SYSTEM_PROMPT) -> tuple[float, dict[str, float]]:
    """The mean persona score and each hidden check's pass rate: which wish a run learned or lost,
    not only how much the mean moved."""
    sampling = SamplingParams(temperature=0.0, max_tokens=max_tokens)

    async def one(task: Task) -> tuple[float, dict[str, bool]]:
        persona = EVERYONE[task.data["persona"]]
        generation = await policy.generate(opening(persona, task, system_prompt), None, sampling)
        return persona.score(generation.text, task)

    results = await asyncio.gather(*(one(t) for t in tasks))
    count = max(len(results), 1)
    names = results[0][1] if results else {}  # every task of a persona has the same checks
    return (sum(score for score, _ in results) / count,
            {name: sum(checks[name] for _, checks in results) / count for name in names})


async def chat(client: Any, model: str, persona: Persona, task: Task, *, max_turns: int, max_tokens: int,
               simulator: Any = None) -> int:
    """One simulated conversation through the gateway; returns the number of answered turns.
    ``simulator``: who plays the person (default :class:`ScriptedUser`; one with ``areply`` is awaited)."""
    session = f"rehearsal-{uuid.uuid4().hex[:12]}"
    messages = opening(persona, task)
    simulator = simulator or ScriptedUser()
    for turn in range(1, max_turns + 1):
        response = await client.post("/v1/chat/completions", headers={"X-Session-Id": session}, json={
            "model": model, "messages": messages, "max_tokens": max_tokens})  # no temperature, as OpenClaw
        response.raise_for_status()
        reply = response.json()["choices"][0]["message"]["content"] or ""
        if hasattr(simulator, "areply"):
            answer, satisfied = await simulator.areply(persona, task, messages, reply)
        else:
            answer, satisfied = simulator.reply(persona, task, messages, reply)
        messages = messages + [{"role": "assistant", "content": reply}, {"role": "user", "content": answer}]
        if satisfied or turn == max_turns:
            break
    # the person's last message is the next state of the last turn: deliver it (a 1-token closing turn)
    await client.post("/v1/chat/completions", headers={"X-Session-Id": session, "X-Session-Done": "true"},
                      json={"model": model, "messages": messages, "max_tokens": 1})
    return turn


async def rehearse(config: RunConfig, *, persona: str, steps: int, users: int = 4, max_turns: int = 3,
                   max_tokens: int = 96, max_minutes: float | None = None, eval_tasks: int | None = None,
                   simulator: Any = None, curve_every: int = 0) -> RehearsalResult:
    """Train the served policy for ``steps`` personal-trainer steps on simulated ``persona`` users
    (``simulator``: the scripted user by default, or e.g. a :class:`RolePlayedUser`). ``max_minutes`` caps the
    whole run's training: past it no conversation and no step starts (those in flight finish).
    ``curve_every``: also score the weights of every that many steps (kept in memory as the run goes,
    scored after it, so the conversations never wait on them)."""
    import httpx

    from clawgym.serve.main import build_serving

    if not config.serve.train:
        raise ValueError("a rehearsal trains: set serve.train: true")
    if curve_every < 0:
        raise ValueError(f"curve_every must be >= 0 (0: no curve), got {curve_every}")
    serving = build_serving(config)
    trainer = serving.trainer
    snapshots = keep_snapshots(trainer, curve_every) if curve_every else {}
    trainer.max_steps = steps  # the budget, exactly: no step starts past it
    held_out = persona_tasks(persona, "test")[: eval_tasks or None]
    training = itertools.cycle(persona_tasks(persona, "train"))
    started = time.perf_counter()
    capped = False

    def stop_at_cap() -> None:  # no conversation and no step starts from now; those in flight finish
        nonlocal capped
        capped = True
        trainer.max_steps = min(steps, trainer.steps + int(trainer.busy))

    cap = (asyncio.get_running_loop().call_later(60 * max_minutes, stop_at_cap)
           if max_minutes is not None else None)
    before, checks_before = await score_checks(serving.policy, held_out, max_tokens=max_tokens)
    counts = {"conversations": 0, "turns": 0}
    wait_judge = 0.0
    stage = serving.gateway.judge_stage
    transport = httpx.ASGITransport(app=serving.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://rehearsal", timeout=None) as client:
        async def user_loop() -> None:
            while trainer.steps < steps and not capped and not trainer.publisher.paused:  # an alarm ends it
                # awaited first: `counts["turns"] += await ...` reads the count before the wait, and the
                # users' conversations overlap, so one user's increment overwrote another's
                answered = await chat(client, serving.gateway.model_name, EVERYONE[persona], next(training),
                                      max_turns=max_turns, max_tokens=max_tokens, simulator=simulator)
                counts["turns"] += answered
                counts["conversations"] += 1

        workers = [asyncio.create_task(user_loop()) for _ in range(users)]
        while not all(w.done() for w in workers):
            await asyncio.sleep(0.25)
            # the trainer is idle, short of a batch, while turns sit in the judge's queue: time lost to the judge
            if (not trainer.busy and len(trainer.pending) < trainer.batch_size and stage is not None
                    and stage.stats.submitted - stage.stats.judged - stage.stats.errors > 0):
                wait_judge += 0.25
        await asyncio.gather(*workers)
        # let the steps already due finish, within the budget and the cap (a step is never cut off)
        while trainer.busy or (trainer._task is not None and not trainer._task.done() and not trainer.budget_spent()
                               and not trainer.publisher.paused and len(trainer.pending) >= trainer.batch_size):
            await asyncio.sleep(0.1)
    if cap is not None:
        cap.cancel()
    await trainer.stop()  # turns judged from now on train nothing: "after" scores fixed weights
    after, checks_after = await score_checks(serving.policy, held_out, max_tokens=max_tokens)
    curve = await score_snapshots(trainer, serving.policy, snapshots, held_out, max_tokens=max_tokens)
    turns = serving.gateway.log.turns()
    lags = [t.timings["judged_at"] - t.timings["queued_at"] for t in turns
            if "judged_at" in t.timings and "queued_at" in t.timings]
    wall = time.perf_counter() - started
    await trainer.close()
    if stage is not None:
        await stage.close(timeout_s=30)  # a judge that is down must not hang the end of the run
    await serving.gateway.close()
    await serving.policy.close()
    return RehearsalResult(
        persona=persona, method=str(config.method), steps=trainer.steps, before=before, after=after,
        conversations=counts["conversations"], turns=counts["turns"], judged=sum(bool(t.judge) for t in turns),
        refused=dict(trainer.refused), judge_lag_s=sum(lags) / max(len(lags), 1),
        trainer_wait_judge_frac=wait_judge / max(wall, 1e-9),
        judge_unavailable=stage.stats.unavailable if stage is not None else 0, wall_s=wall,
        checks_before=checks_before, checks_after=checks_after, curve=curve)


def keep_snapshots(trainer: Any, every: int) -> dict[int, dict[str, Any]]:
    """Keep the trained parameters after every ``every``-th step of the personal ``trainer`` (a copy
    in memory, taken when the step is recorded: LoRA adapters or the full weights, what a checkpoint
    holds); the dict fills as the run goes."""
    inner = trainer.trainer
    if not isinstance(trainer.steps, int):  # per-user adapters count steps per user: whose curve would it be?
        raise ValueError("a learning curve follows one model: per-user adapters (serve.adapters: per_user) have one "
                         "per user")
    if not hasattr(inner, "trainable_state_dict"):
        raise ValueError(f"a learning curve needs a trainer whose weights can be copied; {type(inner).__name__} "
                         "has no trainable_state_dict")
    snapshots: dict[int, dict[str, Any]] = {}
    observe = trainer.on_step

    def on_step(record: dict[str, Any]) -> None:
        if trainer.steps % every == 0:
            snapshots[trainer.steps] = inner.trainable_state_dict()
        if observe is not None:
            observe(record)

    trainer.on_step = on_step
    return snapshots


async def score_snapshots(trainer: Any, policy: Any, snapshots: dict[int, dict[str, Any]], tasks: list[Task], *,
                          max_tokens: int) -> list[dict[str, Any]]:
    """Score each snapshot short of the last step on the held-out ``tasks`` (served as the trainer
    publishes them), then serve the last weights again: a curve of the run's earlier steps."""
    from clawgym.rl.trainer.transport import served_weights

    earlier = sorted(step for step in snapshots if step < trainer.steps)
    if not earlier:
        return []
    inner = trainer.trainer
    last = inner.trainable_state_dict()
    curve = []
    for step in earlier:
        inner.load_trainable_state_dict(snapshots[step])
        await policy.update_weights(await asyncio.to_thread(served_weights(inner, policy)), version=step)
        score, checks = await score_checks(policy, tasks, max_tokens=max_tokens)
        curve.append({"step": step, "score": score, "checks": checks})
    inner.load_trainable_state_dict(last)
    await policy.update_weights(await asyncio.to_thread(served_weights(inner, policy)), version=int(inner.version))
    return curve
