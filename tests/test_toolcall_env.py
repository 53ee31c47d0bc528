"""ToolCall-v0 end to end: the gym contract, determinism, an oracle policy, a random policy, bad input.

Every episode runs a real interpreter inside the real (bubblewrap) sandbox; nothing here is mocked.
"""

from __future__ import annotations

import json
import time

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import clawgym  # noqa: F401  (registers the ids)
from clawgym.core import EpisodeOver, InvalidAction
from clawgym.envs.toolcall import ToolCallEnv

ENV_ID = "clawgym/ToolCall-v0"
FAST = {"python_timeout_s": 1.0, "python_grace_s": 1.0}


def make(**kwargs) -> ToolCallEnv:
    return gym.make(ENV_ID, **kwargs).unwrapped


def call(name: str, **arguments) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]}


@pytest.fixture
def env():
    environment = make(**FAST)
    environment.reset(seed=0)
    yield environment
    environment.close()


# ---------------------------------------------------------------------------------------------- contract
def test_check_env_passes():
    environment = make()
    try:
        check_env(environment)
    finally:
        environment.close()


def test_tools_and_prompt():
    environment = make()
    try:
        names = [tool["function"]["name"] for tool in environment.tools]
        assert names == ["python", "calculator", "submit"]
        observation, info = environment.reset(seed=3)
        assert [m["role"] for m in observation] == ["system", "user"]
        assert "\\boxed" in observation[0]["content"] and observation[1]["content"] == environment.task.prompt
        assert info["python_calls"] == 0 and info["task_id"] == environment.task.id
        assert {t.split for t in environment.task_set} == {"train"}  # bundled default: the train split
        assert environment.sandbox_kind == "auto" and type(environment._sandbox).__name__ == "BwrapSandbox"
    finally:
        environment.close()


def test_same_seed_same_task_different_seeds_different_tasks():
    environment = make()
    try:
        first, info_a = environment.reset(seed=123)
        again, info_b = environment.reset(seed=123)
        assert first == again and info_a == info_b
        tasks = {environment.reset(seed=seed)[1]["task_id"] for seed in range(12)}
        assert len(tasks) >= 9
        observations = []
        for _ in range(2):  # the same seed and the same actions give the same episode
            environment.reset(seed=7)
            observations.append(environment.step(call("python", code="import math\nmath.factorial(20)"))[0])
        assert observations[0] == observations[1] and observations[0][0]["content"] == str(2432902008176640000)
    finally:
        environment.close()


def test_variables_persist_within_an_episode_but_not_across_resets(env):
    env.step(call("python", code="secret = 1234"))
    observation, *_ = env.step(call("python", code="secret * 2"))
    assert observation[0]["content"] == "2468"
    env.reset(seed=1)
    observation, _, _, _, info = env.step(call("python", code="secret"))
    assert "NameError" in observation[0]["content"] and info["tool_errors"] == 1


def test_calculator_tool(env):
    observation, _, terminated, _, info = env.step(call("calculator", expression="comb(52, 5) / 4"))
    assert observation[0]["content"] == "649740" and not terminated and info["tool_errors"] == 0
    observation, _, _, _, info = env.step(call("calculator", expression="__import__('os')"))
    assert observation[0]["content"].startswith("Error: calculator:") and info["tool_errors"] == 1


# ---------------------------------------------------------------------------------------------- policies
def test_oracle_policy_solves_the_test_split_through_the_python_tool():
    environment = make(split="test")
    solved, failures = 0, []
    try:
        assert len(environment.task_set) >= 60
        for task in environment.task_set:
            environment.reset(options={"task_id": task.id})
            first = environment.oracle_action()  # the scripted oracle: run solution_code with the python tool ...
            assert first["tool_calls"][0]["function"]["arguments"] == {"code": task.data["solution_code"]}
            observation, *_ = environment.step(first)
            printed = observation[0]["content"].strip()
            submit = environment.oracle_action()  # ... then submit what it printed
            assert submit["tool_calls"][0]["function"] == {"name": "submit", "arguments": {"answer": printed}}
            _, reward, terminated, _, info = environment.step(submit)
            assert terminated and info["python_calls"] == 1
            if reward == 1.0:
                solved += 1
            else:
                failures.append((task.id, printed, task.answer))
    finally:
        environment.close()
    assert solved / len(environment.task_set) >= 0.95, failures[:5]


def test_boxed_final_message_ends_the_episode(env):
    answer = env.task.answer
    _, reward, terminated, truncated, info = env.step(f"I computed it. The answer is \\boxed{{{answer}}}.")
    assert terminated and not truncated and reward == 1.0 and info["success"] and info["answer"] == answer


def test_random_answers_without_tools_score_about_zero():
    environment = make()
    rng = np.random.default_rng(0)
    environment.action_space.seed(0)
    rewards = []
    try:
        for episode in range(50):
            environment.reset(seed=episode)
            if episode % 2:
                action = f"\\boxed{{{int(rng.integers(0, 1000))}}}"
            else:
                action = environment.action_space.sample()
                while not isinstance(action, str):
                    action = environment.action_space.sample()
            _, reward, terminated, truncated, _ = environment.step(action)
            assert terminated or truncated
            rewards.append(reward)
    finally:
        environment.close()
    assert np.mean(rewards) <= 0.05


# ---------------------------------------------------------------------------------------------- bad input
def test_malformed_tool_json_is_a_tool_error(env):
    observation, reward, terminated, truncated, info = env.step(
        '<tool_call>{"name": "python", "arguments": {"code": "print(1)"</tool_call>')
    assert observation[0]["role"] == "tool" and "not valid JSON" in observation[0]["content"]
    assert not terminated and not truncated and reward == 0.0 and info["tool_errors"] == 1
    bad_arguments = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "python", "arguments": "{code: 1"}}]}
    observation, *_ = env.step(bad_arguments)
    assert "not valid JSON" in observation[0]["content"]
    assert env.step(call("python", code="print(6 * 7)"))[0][0]["content"] == "42"


def test_unknown_tool_and_missing_or_wrong_arguments(env):
    observation, _, terminated, _, info = env.step(call("bash", command="ls"))
    assert "unknown tool 'bash'" in observation[0]["content"] and "python" in observation[0]["content"]
    observation, *_ = env.step(call("python"))
    assert "missing required argument(s): code" in observation[0]["content"]
    observation, _, terminated, _, _ = env.step(call("submit"))
    assert "missing required argument(s): answer" in observation[0]["content"] and not terminated
    observation, *_ = env.step(call("python", code=123))
    assert "must be of type string" in observation[0]["content"]
    observation, *_ = env.step(call("python", code="1", timeout=99))
    assert "unknown argument(s): timeout" in observation[0]["content"]
    _, _, terminated, _, info = env.step(call("calculator", expression="1 +"))
    assert not terminated and info["tool_errors"] == 6 and info["tool_calls"] == 6


def test_huge_output_is_truncated_with_a_marker(env):
    start = time.monotonic()
    observation, *_ = env.step(call("python", code="print('x' * 10 ** 7)"))
    content = observation[0]["content"]
    assert len(content) < env.output_limit + 200 and "[stdout truncated:" in content
    assert time.monotonic() - start < 5
    assert env.step(call("python", code="print('ok')"))[0][0]["content"] == "ok"


def test_infinite_loop_is_stopped_and_the_episode_goes_on(env):
    env.step(call("python", code="n = 0"))
    start = time.monotonic()
    observation, _, terminated, truncated, info = env.step(call("python", code="while True:\n    n += 1"))
    assert time.monotonic() - start < FAST["python_timeout_s"] + FAST["python_grace_s"] + 1
    assert "TimeoutError" in observation[0]["content"] and not (terminated or truncated)
    assert info["python_timeouts"] == 1 and info["python_restarts"] == 0
    assert int(env.step(call("python", code="n"))[0][0]["content"]) > 0
    observation, _, _, _, info = env.step(call("python", code=(
        "import signal\nsignal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])\nwhile True:\n    pass")))
    assert "restarted" in observation[0]["content"] and info["python_timeouts"] == 2 and info["python_restarts"] == 1
    assert env.step(call("python", code="print(1 + 1)"))[0][0]["content"] == "2"


def test_memory_bomb_does_not_take_the_env_down():
    environment = make(memory_mb=256, python_timeout_s=8)  # a small cap keeps the bomb quick on a slow machine
    try:
        environment.reset(seed=0)
        observation, _, terminated, _, info = environment.step(call("python", code="x = bytearray(64 * 1024 ** 3)"))
        assert "MemoryError" in observation[0]["content"] and not terminated and info["tool_errors"] == 1
        observation, *_ = environment.step(
            call("python", code="chunks = []\nwhile True:\n    chunks.append(b'a' * 10 ** 7)"))
        assert "MemoryError" in observation[0]["content"] or "restarted" in observation[0]["content"]
        assert environment.step(call("python", code="chunks = None\nprint(3 * 3)"))[0][0]["content"] == "9"
    finally:
        environment.close()


def test_network_access_from_python_is_blocked(env, tcp_server):
    code = ("import urllib.request\ntry:\n    "
            f"urllib.request.urlopen('http://127.0.0.1:{tcp_server.port}/', timeout=2)\n"
            "    print('REACHED')\nexcept OSError as exc:\n    print('BLOCKED', type(exc).__name__)")
    observation, *_ = env.step(call("python", code=code))
    assert "BLOCKED" in observation[0]["content"] and "REACHED" not in observation[0]["content"]
    assert tcp_server.wait_received(timeout_s=3.0) == []  # no connection reached the host


def test_step_after_termination_and_before_reset_raise_episode_over():
    environment = make()
    try:
        with pytest.raises(EpisodeOver, match="before reset"):
            environment.step("hello")
        environment.reset(seed=0)
        _, _, terminated, _, _ = environment.step(call("submit", answer="0"))
        assert terminated
        with pytest.raises(EpisodeOver, match="after the episode ended"):
            environment.step(call("python", code="1"))
        environment.reset(seed=0)  # a new episode works
        assert environment.step(call("python", code="1 + 1"))[0][0]["content"] == "2"
    finally:
        environment.close()


@pytest.mark.parametrize("action", [123, None, 4.5, ["print(1)"], {"role": "user", "content": "hi"},
                                    {"role": "assistant", "content": 5},
                                    {"role": "assistant", "tool_calls": "python"}])
def test_actions_of_the_wrong_type_raise_invalid_action_and_change_nothing(env, action):
    with pytest.raises(InvalidAction):
        env.step(action)
    assert env.turn == 0 and len(env.messages) == 2
    assert env.step(call("python", code="2 + 3"))[0][0]["content"] == "5"


def test_max_turns_truncates_with_zero_reward():
    environment = make(max_turns=2)
    try:
        environment.reset(seed=0)
        assert environment.step(call("python", code="1"))[3] is False
        _, reward, terminated, truncated, info = environment.step(call("python", code="2"))
        assert truncated and not terminated and reward == 0.0 and info["truncated_by"] == "max_turns"
    finally:
        environment.close()


def test_close_stops_the_interpreter_and_is_idempotent():
    environment = make()
    environment.reset(seed=0)
    environment.step(call("python", code="1"))
    proc = environment._python_tool.interpreter.proc
    assert proc.poll() is None
    environment.close()
    assert proc.poll() is not None
    environment.close()
    with pytest.raises(EpisodeOver):
        environment.reset()


def test_render_ansi_shows_the_transcript():
    environment = make(render_mode="ansi")
    try:
        environment.reset(seed=0)
        environment.step(call("python", code="print('hello from python')"))
        text = environment.render()
        assert "TOOL[python]" in text and "hello from python" in text
    finally:
        environment.close()


# ---------------------------------------------------------------------------------------------- datasets
def test_gsm8k_and_dapo_style_files_load_and_score(tmp_path):
    path = tmp_path / "mixed.jsonl"
    records = [
        {"question": "Natalia sold 48 clips in April and half as many in May. How many in total?",
         "answer": "In May she sold 48/2 = 24.\nIn total 48 + 24 = 72.\n#### 72"},
        {"question": "A factory makes 1,250 widgets a day. How many in 30 days?", "answer": "1250 * 30\n#### 37,500"},
        {"data_source": "math_dapo", "prompt": [{"role": "user", "content": "Compute 2^10 - 1."}],
         "reward_model": {"ground_truth": "1023", "style": "rule"}},
        {"problem": "What is 1/2 + 1/4?", "solution": "We add: $\\boxed{\\frac{3}{4}}$"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    environment = make(tasks=str(path))
    try:
        assert len(environment.task_set) == 4
        answers = [task.answer for task in environment.task_set]
        assert answers == ["72", "37500", "1023", "\\frac{3}{4}"]
        assert environment.task_set[2].prompt == "Compute 2^10 - 1."
        right = ["\\boxed{72}", "The total is \\boxed{37,500}.", "\\boxed{1023}", "\\boxed{0.75}"]
        wrong = ["\\boxed{71}", "\\boxed{37,499}", "\\boxed{1024}", "\\boxed{0.7}"]
        for task, good, bad in zip(environment.task_set, right, wrong):
            environment.reset(options={"task_id": task.id})
            assert environment.step(good)[1] == 1.0
            environment.reset(options={"task_id": task.id})
            assert environment.step(bad)[1] == 0.0
        environment.reset(options={"task_id": environment.task_set[2].id})  # no program: the oracle submits the answer
        assert environment.step(environment.oracle_action())[1] == 1.0
        environment.reset(options={"task_id": environment.task_set[1].id})
        observation, *_ = environment.step(call("python", code="1250 * 30"))
        assert environment.step(call("submit", answer=observation[0]["content"]))[1] == 1.0
    finally:
        environment.close()


def test_records_without_an_answer_are_rejected(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"question": "no answer here"}) + "\n")
    with pytest.raises(ValueError, match="no reference answer"):
        make(tasks=str(path))
