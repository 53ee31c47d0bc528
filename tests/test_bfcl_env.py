"""BFCL-v0: bfcl-eval's data and checkers behind the env contract (oracle -> 1, wrong answers -> 0)."""

import json

import gymnasium as gym
import pytest

import clawgym  # noqa: F401  (registers the ids)
from clawgym.envs.toolcall import bfcl_checker, bfcl_data
from clawgym.envs.toolcall.bfcl_oracle import KNOWN_UNSOLVABLE


@pytest.fixture(scope="module")
def env():
    env = gym.make("clawgym/BFCL-v0").unwrapped
    yield env
    env.close()


def play(env, task_id, actions):
    env.reset(options={"task_id": task_id})
    for action in actions:
        _, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return reward, info
    raise AssertionError("the episode did not end")


def play_oracle(env, task_id):
    env.reset(options={"task_id": task_id})
    while True:
        _, reward, terminated, truncated, info = env.step(env.oracle_action())
        if terminated or truncated:
            return reward, info


def call(name, **arguments):
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c0", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]}


def test_loads_every_category_with_bfcl_counts(env):
    counts = {}
    for task in env.task_set:
        counts[task.data["category"]] = counts.get(task.data["category"], 0) + 1
    assert set(counts) == set(bfcl_data.CATEGORIES)
    assert counts["simple_python"] == 400 and counts["live_multiple"] == 1053 and counts["multi_turn_base"] == 200
    assert len(env.task_set) >= 1000


def test_category_argument_groups_and_errors():
    env = gym.make("clawgym/BFCL-v0", category="multi_turn").unwrapped
    assert {t.data["category"] for t in env.task_set} == set(bfcl_data.MULTI_TURN)
    env.close()
    env = gym.make("clawgym/BFCL-v0", category=["parallel", "irrelevance"], per_category=3).unwrapped
    assert [t.id for t in env.task_set][:3] == ["parallel_0", "parallel_66", "parallel_133"]
    assert len(env.task_set) == 6
    env.close()
    with pytest.raises(ValueError, match="unknown BFCL category 'simplest'.*simple_python.*multi_turn_base"):
        gym.make("clawgym/BFCL-v0", category="simplest")
    with pytest.raises(ValueError, match="per_category"):
        gym.make("clawgym/BFCL-v0", per_category=0)


def test_unknown_task_id_lists_valid_ids(env):
    with pytest.raises(KeyError, match=r"no BFCL task 'simple_python_9999'.*simple_python: 400 ids simple_python_0"):
        env.reset(options={"task_id": "simple_python_9999"})


def test_tool_names_use_underscores_and_openai_types(env):
    env.reset(options={"task_id": "simple_python_1"})  # math.factorial
    (tool,) = env.tools
    assert tool["function"]["name"] == "math_factorial"
    assert tool["function"]["parameters"]["type"] == "object"
    assert "Python 3 syntax" in tool["function"]["description"]  # BFCL's generation-time hint
    assert play(env, "simple_python_1", [call("math_factorial", number=5)])[0] == 1.0


def test_a_dotted_name_is_its_tool_and_an_unknown_name_is_told(env):
    env.reset(options={"task_id": "simple_python_1"})  # BFCL's own name for the function is math.factorial
    observation, reward, terminated, _, _ = env.step(call("math.factorial", number=5))
    assert terminated and reward == 1.0
    assert "'math.factorial' is the function 'math_factorial'" in observation[0]["content"]
    assert play(env, "simple_python_1", [call("math.factorial", number=6)])[0] == 0.0  # still checked as math_factorial
    env.reset(options={"task_id": "simple_python_1"})
    observation, reward, *_ = env.step(call("factorial", number=5))
    assert reward == 0.0
    assert "no function 'factorial' is offered; the functions are: math_factorial" in observation[0]["content"]
    env.reset(options={"task_id": "multi_turn_base_0"})  # multi-turn: the back ends run it, the message says so
    observation, *_ = env.step(call("pwd"))
    assert "current_working_directory" in observation[0]["content"] and "Note" not in observation[0]["content"]


def test_the_multi_turn_oracle_says_when_it_cannot_take_over(env):
    env.reset(options={"task_id": "multi_turn_base_0"})
    env.step(call("pwd"))  # someone else's call in the first user turn
    with pytest.raises(NotImplementedError, match="plays a user turn from its start"):
        env.oracle_action()
    env.step("Done.")  # ends that turn; the oracle takes the next one from its start
    action = env.oracle_action()
    assert action["tool_calls"]
    env.step(action)
    assert env.oracle_action() == "Done."


def test_oracle_solves_every_task_but_bfcl_data_errors(env):
    """All ~4,400 tasks (3 s): the oracle scores 1, except BFCL's own inconsistent entries, which score 0."""
    failed = {task.id for task in env.task_set if play_oracle(env, task.id)[0] != 1.0}
    assert failed == set(KNOWN_UNSOLVABLE)


def test_wrong_single_turn_answers_score_zero(env):
    assert play(env, "simple_python_0", [call("calculate_triangle_area", base=10, height=5)])[0] == 1.0
    reward, info = play(env, "simple_python_0", [call("calculate_triangle_area", base=11, height=5)])
    assert reward == 0.0 and info["success"] is False and info["bfcl_error_type"].startswith("value_error")
    assert play(env, "simple_python_0", ["The area is 25."])[0] == 0.0  # no call at all
    broken = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c0", "type": "function", "function": {"name": "calculate_triangle_area", "arguments": "{base: 10"}}]}
    assert play(env, "simple_python_0", [broken])[1]["bfcl_error_type"] == "ast_decoder:decoder_failed"


def test_irrelevance_and_relevance(env):
    task = next(t for t in env.task_set if t.data["category"] == "irrelevance")
    assert play(env, task.id, ["No function fits."])[0] == 1.0
    name = env.tools[0]["function"]["name"]
    assert play(env, task.id, [call(name)])[0] == 0.0
    task = next(t for t in env.task_set if t.data["category"] == "live_relevance")
    assert play(env, task.id, ["I will not call anything."])[0] == 0.0


def test_multi_turn_state_is_checked_and_fresh_per_episode(env):
    task_id = "multi_turn_base_0"  # the file system starts in workspace/; the first turn moves a report
    env.reset(options={"task_id": task_id})
    start = env.step(call("pwd"))[0][0]["content"]
    env.step(call("cd", folder="document"))
    assert env.step(call("pwd"))[0][0]["content"] != start  # state persists across steps
    done = False
    while not done:  # a wrong episode: end every turn without doing what was asked
        _, reward, terminated, truncated, info = env.step("Done.")
        done = terminated or truncated
    assert reward == 0.0 and info["bfcl_error_type"].startswith("multi_turn:")
    env.reset(options={"task_id": task_id})
    assert env.step(call("pwd"))[0][0]["content"] == start  # a fresh back end, not the one changed above
    model_name = env._backends.model_name
    env.reset(options={"task_id": "simple_python_0"})
    assert not [k for k in vars(bfcl_checker.multi_turn_utils) if k.startswith(model_name)]  # nothing leaks


def test_multi_turn_rejects_unsafe_calls_without_running_them(env):
    env.reset(options={"task_id": "multi_turn_base_0"})
    observation, *_ = env.step({"role": "assistant", "content": None, "tool_calls": [
        {"id": "a", "type": "function",
         "function": {"name": "open", "arguments": {"file": "/tmp/clawgym-bfcl-x", "mode": "w"}}},
        {"id": "b", "type": "function", "function": {"name": "ls", "arguments": {"a=__import__('os').getcwd(),b": 1}}},
        {"id": "c", "type": "function", "function": {"name": "ls", "arguments": {}}},
    ]})
    assert "name 'open' is not defined" in observation[0]["content"]
    assert "not a valid call" in observation[1]["content"]
    assert "current_directory_content" in observation[2]["content"]


def test_step_limit_per_turn_fails_the_task(env):
    env.reset(options={"task_id": "multi_turn_base_0"})
    for step in range(1, 100):
        _, reward, terminated, truncated, info = env.step(call("ls"))
        if terminated:
            break
    assert step == 21 and reward == 0.0 and info["bfcl_error_type"] == "multi_turn:force_terminated"


def test_miss_func_adds_the_held_out_function_at_its_turn(env):
    task = env.task_set.by_id("multi_turn_miss_func_0")
    held_out = {f["name"] for fs in task.data["entry"]["missed_function"].values() for f in fs}
    env.reset(options={"task_id": task.id})
    assert not held_out & {t["function"]["name"] for t in env.tools}
    (turn,) = [int(k) for k in task.data["entry"]["missed_function"]]
    for _ in range(turn):
        observation, *_ = env.step("Done.")
    assert "updated some more functions" in observation[0]["content"]
    assert held_out <= {t["function"]["name"] for t in env.tools}
