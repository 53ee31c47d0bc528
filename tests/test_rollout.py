"""The async rollout pool: groups, timeouts, failures recorded, turns streamed early, local == asyncio == ray."""

from __future__ import annotations

import asyncio
import functools
import os
import re
import time

import gymnasium
import pytest

from clawgym.core.env import AgentEnv
from clawgym.core.messages import Message, text_of
from clawgym.core.policy import Policy
from clawgym.core.tasks import Task, TaskSet
from clawgym.core.tools import FunctionTool, Tool
from clawgym.inference.scripted import ScriptedPolicy
from clawgym.rl.rollout import EpisodeSpec, RolloutPool, make_groups, run_rollout_cli
from clawgym.rl.types import Trajectory, Turn, read_jsonl

ENV_ID = "clawgym-test/Adder-v0"

TASKS = [
    Task("add-1", "add 2 3", answer="5"),
    Task("add-2", "add 40 2", answer="42"),
    Task("boom", "boom", answer=""),
    Task("slow", "slow", answer=""),
    Task("crash", "crash", answer=""),
]


class AdderEnv(AgentEnv):
    """A tiny tool env: the start state carries a nonce drawn from the seed; `add` then answer."""

    default_max_turns = 4

    def load_tasks(self, source: object) -> TaskSet:
        return TaskSet.load(source) if source is not None else TaskSet(TASKS, name="adder")

    def make_tools(self) -> list[Tool]:
        def add(a: int, b: int) -> str:
            return str(a + b)

        def wait(seconds: float) -> str:
            time.sleep(seconds)  # a blocking env call, as a slow sandbox would make
            return "waited"

        number = {"type": "integer"}
        return [
            FunctionTool(add, "add", "Add two integers.",
                         {"type": "object", "properties": {"a": number, "b": number}, "required": ["a", "b"]}),
            FunctionTool(wait, "wait", "Block.",
                         {"type": "object", "properties": {"seconds": {"type": "number"}}, "required": ["seconds"]}),
        ]

    def setup(self, task: Task) -> list[Message]:
        return [{"role": "user", "content": f"nonce {int(self.np_random.integers(1_000_000))}"}]

    def step(self, action):  # noqa: ANN001
        if self.task is not None and self.task.id == "boom":
            raise RuntimeError("the env exploded")
        if self.task is not None and self.task.id == "crash":
            os._exit(3)  # a native crash that takes the whole worker process down (ray tests only)
        return super().step(action)

    def score(self, answer: str | None) -> tuple[float, dict]:
        assert self.task is not None
        return (1.0 if answer is not None and answer.strip() == self.task.answer else 0.0), {}


if ENV_ID not in gymnasium.registry:
    gymnasium.register(ENV_ID, entry_point=AdderEnv)


def adder_responder(messages: list[Message]) -> str:
    """Deterministic agent: call add with the task's numbers, then answer with the tool's result."""
    last = messages[-1]
    if last["role"] == "tool":
        return last["content"]
    task = next(text_of(m) for m in messages if m["role"] == "user")
    nonce = text_of(messages[-1])
    if task == "slow":
        return '<tool_call>{"name": "wait", "arguments": {"seconds": 1.0}}</tool_call>'
    match = re.fullmatch(r"add (\d+) (\d+)", task)
    if match is None:
        return "no idea"
    a, b = match.groups()
    return f'thinking about {nonce}<tool_call>{{"name": "add", "arguments": {{"a": {a}, "b": {b}}}}}</tool_call>'


def comparable(trajectory: Trajectory) -> tuple:
    """What must match across executors: everything but ids and timings."""
    return (
        trajectory.task_id,
        trajectory.seed,
        trajectory.reward,
        trajectory.success,
        trajectory.error,
        [(t.turn_index, t.context, t.action, t.next_state, t.env_reward, t.terminated, t.truncated, t.info)
         for t in trajectory.turns],
    )


async def test_groups_share_task_with_distinct_seeds_and_start_states() -> None:
    policy = ScriptedPolicy(adder_responder)
    assert isinstance(policy, Policy)
    specs = make_groups(["add-1", "add-2"], group_size=3, seed=10)
    async with RolloutPool(ENV_ID, policy, num_workers=4) as pool:
        trajectories = await pool.run(specs)
    assert [t.seed for t in trajectories] == list(range(10, 16))
    assert [t.task_id for t in trajectories] == ["add-1"] * 3 + ["add-2"] * 3
    groups = {t.group_id for t in trajectories}
    assert len(groups) == 2
    for trajectory in trajectories:
        assert trajectory.error is None
        assert trajectory.success and trajectory.reward == 1.0
        assert [t.turn_index for t in trajectory.turns] == [0, 1]
        assert trajectory.turns[0].next_state[0]["role"] == "tool"
        assert trajectory.turns[-1].terminated
    nonces = [text_of(t.turns[0].context[-1]) for t in trajectories]
    assert len(set(nonces)) == 6, "distinct seeds in a group must give distinct start states"
    # the context of turn 1 is turn 0's context + action + next state
    t0, t1 = trajectories[0].turns
    assert t1.context == t0.context + [t0.action] + t0.next_state


async def test_same_seeds_same_trajectories_and_groups_stream() -> None:
    policy = ScriptedPolicy(adder_responder)
    specs = make_groups(["add-1", "add-2"], group_size=2, seed=3)
    async with RolloutPool(ENV_ID, policy, num_workers=3) as pool:
        first = await pool.run(specs)
        second = await pool.run(specs)
        groups = [group async for group in pool.stream_groups(specs)]
    assert [comparable(t) for t in first] == [comparable(t) for t in second]
    assert sorted(len(g) for g in groups) == [2, 2]
    assert all(len({t.group_id for t in g}) == 1 for g in groups)


async def test_failing_env_is_recorded_not_fatal_and_the_slot_recovers() -> None:
    policy = ScriptedPolicy(adder_responder)
    specs = [EpisodeSpec(0, 1, "boom"), EpisodeSpec(1, 2, "add-1"), EpisodeSpec(2, 3, "boom"),
             EpisodeSpec(3, 4, "add-2")]
    async with RolloutPool(ENV_ID, policy, num_workers=1) as pool:  # one slot: it must survive the failures
        trajectories = await pool.run(specs)
    assert [t.error is None for t in trajectories] == [False, True, False, True]
    assert trajectories[0].error == "RuntimeError: the env exploded"
    assert not trajectories[0].success and trajectories[0].turns == []
    assert trajectories[1].success and trajectories[3].success
    assert pool.stats.errors == 2 and pool.stats.episodes == 4


async def test_policy_error_and_bad_env_id_are_recorded() -> None:
    def broken(messages: list[Message]) -> str:
        raise ValueError("model fell over")

    async with RolloutPool(ENV_ID, ScriptedPolicy(broken), num_workers=2) as pool:
        trajectories = await pool.run(make_groups(["add-1"], 2))
    assert [t.error for t in trajectories] == ["ValueError: model fell over"] * 2

    async with RolloutPool("clawgym-test/NoSuchEnv-v0", ScriptedPolicy(adder_responder), num_workers=1) as pool:
        (trajectory,) = await pool.run(make_groups([None], 1))
    assert trajectory.error is not None and "NoSuchEnv" in trajectory.error


async def test_episode_timeout_is_recorded_and_other_episodes_finish() -> None:
    policy = ScriptedPolicy(adder_responder)
    specs = [EpisodeSpec(0, 0, "slow"), EpisodeSpec(1, 1, "add-1"), EpisodeSpec(2, 2, "add-2")]
    started = time.perf_counter()
    async with RolloutPool(ENV_ID, policy, num_workers=1, episode_timeout_s=0.3) as pool:
        trajectories = await pool.run(specs)
    elapsed = time.perf_counter() - started
    assert trajectories[0].error is not None and trajectories[0].error.startswith("timeout")
    assert 0.25 < trajectories[0].wall_s < 0.9
    # the hung env thread was abandoned; the same slot got a fresh env and went on at once
    assert trajectories[1].success and trajectories[2].success
    assert elapsed < 0.9, elapsed
    assert pool.stats.timeouts == 1


async def test_turns_reach_the_sink_before_the_next_action_and_before_the_episode_ends() -> None:
    events: list[tuple[str, str, int]] = []

    def responder(messages: list[Message]) -> str:
        turn = sum(1 for m in messages if m["role"] == "assistant")
        events.append(("generate", text_of(messages[2]), turn))
        return adder_responder(messages)

    received: list[Turn] = []

    async def on_turn(turn: Turn) -> None:
        events.append(("turn", text_of(turn.context[2]), turn.turn_index))
        received.append(turn)

    policy = ScriptedPolicy(responder, latency_s=0.02)
    specs = make_groups(["add-1"], group_size=3, seed=0)
    async with RolloutPool(ENV_ID, policy, num_workers=3, on_turn=on_turn) as pool:
        async for trajectory in pool.stream(specs):
            nonce = text_of(trajectory.turns[0].context[2])
            events.append(("end", nonce, len(trajectory.turns)))
    assert len(received) == 6
    for nonce in {e[1] for e in events}:
        mine = [(kind, index) for kind, n, index in events if n == nonce]
        # generate 0 -> turn 0 -> generate 1 -> turn 1 -> end: a turn is out before the next call
        assert mine == [("generate", 0), ("turn", 0), ("generate", 1), ("turn", 1), ("end", 2)], mine
    assert all(t.timings["ready_at"] > 0 and t.timings["generate_s"] >= 0.02 for t in received)


async def test_stream_yields_in_completion_order_and_early_exit_cancels() -> None:
    def responder(messages: list[Message]) -> str:
        return adder_responder(messages)

    policy = ScriptedPolicy(responder)
    specs = [EpisodeSpec(0, 0, "slow"), EpisodeSpec(1, 1, "add-1")]
    started = time.perf_counter()
    async with RolloutPool(ENV_ID, policy, num_workers=2, episode_timeout_s=5) as pool:
        async for trajectory in pool.stream(specs):
            first = trajectory
            break
    # neither the stream nor closing the pool waited for the slow episode (its env call blocks 1 s)
    assert time.perf_counter() - started < 0.8
    assert first.task_id == "add-1"
    assert pool.stats.episodes == 1


async def test_turns_record_the_action_as_the_env_read_it() -> None:
    """A bare JSON call (no <tool_call> tags) is a call to a lenient env: the turn records it as one, the same
    message the env's transcript holds, and the next context repeats it. A strict env keeps it prose."""
    def bare_json(messages: list[Message]) -> str:
        last = messages[-1]
        return last["content"] if last["role"] == "tool" else '{"name": "add", "arguments": {"a": 2, "b": 3}}'

    specs = make_groups(["add-1"], group_size=1, seed=0)
    async with RolloutPool(ENV_ID, ScriptedPolicy(bare_json), num_workers=1) as pool:
        (trajectory,) = await pool.run(specs)
    first, second = trajectory.turns
    assert first.action["tool_calls"][0]["function"]["name"] == "add"
    assert first.next_state[0]["role"] == "tool" and first.next_state[0]["content"] == "5"
    assert second.context == first.context + [first.action] + first.next_state
    assert trajectory.success

    strict = functools.partial(AdderEnv, tool_call_reading="strict")
    async with RolloutPool(strict, ScriptedPolicy(bare_json), num_workers=1) as pool:
        (trajectory,) = await pool.run(specs)
    (only,) = trajectory.turns
    assert "tool_calls" not in only.action and only.action["content"].startswith('{"name": "add"')
    assert only.terminated and not trajectory.success


async def test_sample_groups_and_bad_arguments() -> None:
    async with RolloutPool(ENV_ID, ScriptedPolicy(adder_responder), num_workers=2) as pool:
        assert await pool.task_ids() == ["add-1", "add-2", "boom", "slow", "crash"]
        specs = await pool.sample_groups(2, group_size=2, seed=7)
        again = await pool.sample_groups(2, group_size=2, seed=7)
    assert [s.task_id for s in specs] == [s.task_id for s in again]
    assert specs[0].task_id == specs[1].task_id != specs[2].task_id == specs[3].task_id
    with pytest.raises(ValueError, match="group_size"):
        make_groups(["a"], 0)
    with pytest.raises(ValueError, match="unknown executor"):
        RolloutPool(ENV_ID, ScriptedPolicy(), executor="mpi")
    with pytest.raises(ValueError, match="num_workers"):
        RolloutPool(ENV_ID, ScriptedPolicy(), num_workers=0)


class AsyncAdderEnv(AdderEnv):
    """The adder with coroutine ``areset``/``astep``: the asyncio executor awaits them on its loop."""

    calls: list[str] = []

    async def areset(self, *, seed=None, options=None):  # noqa: ANN001, ANN201
        await asyncio.sleep(0)
        AsyncAdderEnv.calls.append("areset")
        return self.reset(seed=seed, options=options)

    async def astep(self, action):  # noqa: ANN001, ANN201
        await asyncio.sleep(0)
        AsyncAdderEnv.calls.append("astep")
        return self.step(action)


async def test_asyncio_executor_matches_local_and_awaits_async_envs() -> None:
    policy = ScriptedPolicy(adder_responder)
    specs = make_groups(["add-1", "add-2", "boom"], group_size=2, seed=5)
    async with RolloutPool(AdderEnv, policy, num_workers=3, env_name=ENV_ID) as pool:
        local = await pool.run(specs)
    async with RolloutPool(AdderEnv, policy, num_workers=3, env_name=ENV_ID, executor="asyncio") as pool:
        inline = await pool.run(specs)
        assert await pool.task_ids() == ["add-1", "add-2", "boom", "slow", "crash"]
    assert [comparable(t) for t in inline] == [comparable(t) for t in local]
    assert [t.error for t in inline][-2:] == ["RuntimeError: the env exploded"] * 2  # recorded, the pool goes on
    AsyncAdderEnv.calls = []
    async with RolloutPool(AsyncAdderEnv, policy, num_workers=2, env_name=ENV_ID, executor="asyncio") as pool:
        awaited = await pool.run(specs[:4])
    assert [comparable(t) for t in awaited] == [comparable(t) for t in local[:4]]
    assert AsyncAdderEnv.calls.count("areset") == 4 and AsyncAdderEnv.calls.count("astep") == 8
    with pytest.raises(TypeError, match="asyncio executor takes no options"):
        RolloutPool(ENV_ID, policy, executor="asyncio", executor_options={"num_cpus": 2})


async def test_asyncio_executor_at_1024_concurrent_episodes_uses_no_threads() -> None:
    """1,024 episodes at once with a 0.2 s policy: about 0.2 s per step, one thread in all."""
    import threading

    policy = ScriptedPolicy(adder_responder, latency_s=0.2)
    specs = make_groups(["add-1"] * 1024, group_size=1, seed=0)
    threads = threading.active_count()
    started = time.perf_counter()
    async with RolloutPool(AdderEnv, policy, num_workers=1024, env_name=ENV_ID, executor="asyncio") as pool:
        trajectories = await pool.run(specs)
        assert threading.active_count() <= threads  # no thread per env
    assert all(t.success for t in trajectories) and len(trajectories) == 1024
    assert time.perf_counter() - started < 30  # two 0.2 s steps; generous for a loaded CI machine


async def test_env_thread_results_wake_the_loop_once_per_batch() -> None:
    """Results that land while the loop is busy are delivered by one wake-up; errors reach their caller."""
    import threading

    from clawgym.rl.rollout.local import _Inbox

    loop = asyncio.get_running_loop()
    inbox = _Inbox(loop)
    wakeups = 0
    schedule = loop.call_soon_threadsafe

    def counting(callback, *args):
        nonlocal wakeups
        wakeups += 1
        return schedule(callback, *args)

    loop.call_soon_threadsafe = counting  # type: ignore[method-assign]
    try:
        futures = [loop.create_future() for _ in range(50)]
        cancelled = futures[7]
        cancelled.cancel()  # its episode gave up: the late result is dropped, the others still arrive
        threads = [threading.Thread(target=inbox.put, args=(f, i != 3, i if i != 3 else ValueError("env 3 broke")))
                   for i, f in enumerate(futures)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()  # the loop is blocked meanwhile: every result lands before it drains
        results = await asyncio.gather(*futures, return_exceptions=True)
        assert wakeups == 1
        assert isinstance(results[3], ValueError) and isinstance(results[7], asyncio.CancelledError)
        assert [r for i, r in enumerate(results) if i not in (3, 7)] == [i for i in range(50) if i not in (3, 7)]
        later = loop.create_future()
        inbox.put(later, True, "next")  # the next batch wakes the loop again
        assert await later == "next" and wakeups == 2
    finally:
        del loop.call_soon_threadsafe


async def test_local_executor_runs_each_env_on_its_own_thread_and_raises_env_errors() -> None:
    import threading

    from clawgym.rl.rollout.local import EnvHost

    host = EnvHost(AdderEnv)
    seen: dict[int, set[int]] = {0: set(), 1: set()}

    def where(slot: int) -> int:
        seen[slot].add(threading.get_ident())
        return threading.get_ident()

    try:
        for _ in range(3):
            for slot in (0, 1):
                await host._slot(slot).call(where, slot)
        with pytest.raises(RuntimeError, match="step\\(\\) before reset\\(\\)"):
            await host.step(0, "hello")
        observation, info, tools = await host.reset(0, 1, {"task_id": "add-1"})
        assert info["task_id"] == "add-1" and tools
    finally:
        await host.close()
    assert len(seen[0]) == 1 and len(seen[1]) == 1 and seen[0] != seen[1]
    assert threading.get_ident() not in seen[0] | seen[1]  # never on the event loop's thread


def test_run_rollout_cli_writes_every_turn(tmp_path) -> None:
    out = tmp_path / "turns.jsonl"
    out.write_text("stale line from an earlier run\n")
    summary = run_rollout_cli(ENV_ID, ScriptedPolicy(adder_responder), 4, out_path=out, group_size=2,
                              task_ids=["add-1", "add-2"])
    turns = list(read_jsonl(out, Turn))
    assert summary["episodes"] == 4 and summary["errors"] == 0 and summary["turns_written"] == 8
    assert len(turns) == 8 and summary["success_rate"] == 1.0
    assert {t.task_id for t in turns} == {"add-1", "add-2"}
    with pytest.raises(ValueError, match="multiple of group_size"):
        run_rollout_cli(ENV_ID, ScriptedPolicy(adder_responder), 3, out_path=out, group_size=2)


@pytest.mark.slow  # starting Ray takes 9-13 s on an idle 2-core box and 37 s on a loaded one
def test_local_and_ray_give_the_same_trajectories() -> None:
    pytest.importorskip("ray")
    import ray

    specs = make_groups(["add-1", "add-2"], group_size=2, seed=100) + [EpisodeSpec(4, 5, "boom", "g-boom", "boom-0")]

    crash = [EpisodeSpec(0, 0, "crash"), EpisodeSpec(1, 1, "add-1")]
    after = make_groups(["add-2"], group_size=3, seed=50)

    async def play(
        executor: str) -> tuple[list[Trajectory], float, list[Trajectory], list[Trajectory], list[Trajectory]]:
        policy = ScriptedPolicy(adder_responder)
        options = {"num_cpus": 2} if executor == "ray" else None
        started = time.perf_counter()
        pool = RolloutPool(AdderEnv, policy, num_workers=3, executor=executor, env_name=ENV_ID,
                           executor_options=options)
        await pool.start()
        boot = time.perf_counter() - started
        try:
            same = await pool.run(specs)
            if executor != "ray":
                return same, boot, [], [], []
            pool.executor.batch_calls = True  # many env calls per Ray call: same results
            batched = await pool.run(specs)
            pool.executor.batch_calls = False
            # an env that kills its actor: recorded, the actor is replaced, later episodes run
            return same, boot, batched, await pool.run(crash), await pool.run(after)
        finally:
            await pool.close()

    local, _, _, _, _ = asyncio.run(play("local"))
    remote, boot, batched, crashed, recovered = asyncio.run(play("ray"))
    assert not ray.is_initialized(), "the executor shuts down the Ray instance it started"
    assert [comparable(t) for t in local] == [comparable(t) for t in remote] == [comparable(t) for t in batched]
    assert remote[-1].error == "RuntimeError: the env exploded"
    assert sum(t.success for t in remote) == 4
    assert crashed[0].error is not None and "Actor" in crashed[0].error
    assert [t.error for t in recovered] == [None] * 3 and all(t.success for t in recovered)
    print(f"ray start: {boot:.1f} s")


async def test_scripted_policy() -> None:
    from clawgym.inference.scripted import DEFAULT_REPLY, replay

    policy = ScriptedPolicy(["first",
                             '<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>'], byte_tokens=True)
    start = [{"role": "user", "content": "hi"}]
    one = await policy.generate(start)
    assert one.text == "first" and one.message == {"role": "assistant",
                                                   "content": "first"} and one.finish_reason == "stop"
    assert bytes(one.response_ids).decode() == "first" and one.response_logprobs == [0.0] * 5
    two = await policy.generate(start + [one.message, {"role": "user", "content": "again"}])
    assert two.tool_calls[0].name == "add" and two.tool_calls[0].arguments == {"a": 1, "b": 2}
    assert two.message["tool_calls"][0]["function"]["name"] == "add" and two.finish_reason == "tool_calls"
    policy.set_version(3)
    assert (await policy.generate(start)).policy_version == 3 and policy.version == 3 and policy.calls == 3
    assert (await ScriptedPolicy().generate(start)).text == DEFAULT_REPLY
    assert (await ScriptedPolicy().generate(start)).response_ids == []  # no tokenizer: no fake tokens

    async def slow_echo(messages: list[Message]) -> str:
        return text_of(messages[-1]).upper()

    started = time.perf_counter()
    echoes = await asyncio.gather(*(ScriptedPolicy(slow_echo, latency_s=0.05).generate(start) for _ in range(20)))
    assert [e.text for e in echoes] == ["HI"] * 20
    assert time.perf_counter() - started < 0.5  # latency is a sleep, not CPU: concurrent calls overlap
    with pytest.raises(TypeError, match="must return str"):
        await ScriptedPolicy(lambda messages: 42).generate(start)
    with pytest.raises(ValueError):
        replay([])
    with pytest.raises(ValueError, match="latency_s"):
        ScriptedPolicy(latency_s=-1)
