"""The AgentEnv contract on a small setting defined here: dispatch, errors, limits, seeding, close."""

import copy

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

from clawgym.core import AgentEnv, EpisodeOver, InvalidAction, SubmitTool, Task, TaskSet, Tool, ToolError

TASKS = [{"id": f"t{i}", "prompt": f"What is {i} + {i}?", "answer": str(2 * i)} for i in range(8)]


class Add(Tool):
    name = "add"
    description = "Add two integers."
    parameters = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                  "required": ["a", "b"], "additionalProperties": False}

    def run(self, a: int, b: int) -> str:
        if a < 0:
            raise ToolError("a must be non-negative")
        if a == 13:
            raise ZeroDivisionError("unlucky")
        return str(a + b)


class Sum(AgentEnv):
    default_max_turns = 4

    def __init__(self, tasks=None, **kwargs):
        self.teardowns = 0
        super().__init__(tasks if tasks is not None else TASKS, **kwargs)

    def make_tools(self):
        return [Add(), SubmitTool()]

    def score(self, answer):
        assert self.task is not None
        ok = answer is not None and answer.strip() == self.task.answer
        return (1.0 if ok else 0.0), {"answer": answer}

    def teardown(self):
        self.teardowns += 1

    def oracle_action(self):
        return f'<tool_call>{{"name": "submit", "arguments": {{"answer": "{self.task.answer}"}}}}</tool_call>'


gym.register("clawgym-test/Sum-v0", entry_point=Sum)


def call(name, **arguments):
    import json
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": "c1", "type": "function",
                            "function": {"name": name, "arguments": json.dumps(arguments)}}]}


def test_check_env_passes():
    env = gym.make("clawgym-test/Sum-v0")
    check_env(env.unwrapped)
    env.close()


def test_reset_observation_and_info():
    env = Sum()
    obs, info = env.reset(seed=3)
    assert [m["role"] for m in obs] == ["system", "user"]
    assert info == {"task_id": env.task.id, "turn": 0, "tool_calls": 0, "tool_errors": 0,
                    "tool_call_reading": "lenient"}
    assert env.messages == obs and env.messages is not obs


def test_tool_result_then_final_answer():
    env = Sum()
    env.reset(options={"task_id": "t3"})
    obs, reward, terminated, truncated, info = env.step(call("add", a=3, b=3))
    assert obs == [{"role": "tool", "tool_call_id": "c1", "name": "add", "content": "6"}]
    assert (reward, terminated, truncated) == (0.0, False, False)
    obs, reward, terminated, truncated, info = env.step("6")
    assert (reward, terminated, info["success"], info["answer"]) == (1.0, True, True, "6")
    assert [m["role"] for m in env.messages] == ["system", "user", "assistant", "tool", "assistant"]


def test_submit_tool_ends_and_skips_later_calls():
    env = Sum()
    env.reset(options={"task_id": "t1"})
    action = {"role": "assistant", "tool_calls": [
        {"id": "a", "function": {"name": "submit", "arguments": '{"answer": "2"}'}},
        {"id": "b", "function": {"name": "add", "arguments": '{"a": 1, "b": 1}'}},
    ]}
    obs, reward, terminated, _, info = env.step(action)
    assert terminated and reward == 1.0
    assert obs[1]["content"].startswith("Skipped")
    assert info["tool_calls"] == 1


@pytest.mark.parametrize("action, fragment", [
    (call("add", a=1), "missing required argument(s): b"),
    (call("add", a="1", b=2), "must be of type integer"),
    (call("add", a=True, b=2), "must be of type integer"),
    (call("add", a=1, b=2, c=3), "unknown argument(s): c"),
    (call("nope"), "unknown tool 'nope'; available tools: add, submit"),
    (call("add", a=-1, b=2), "a must be non-negative"),
    (call("add", a=13, b=2), "add failed: ZeroDivisionError: unlucky"),
    ('<tool_call>{"name": "add", "arguments": {"a": 1</tool_call>', "not valid JSON"),
])
def test_bad_tool_calls_become_error_messages_and_the_episode_goes_on(action, fragment):
    env = Sum()
    env.reset(options={"task_id": "t2"})
    obs, reward, terminated, truncated, info = env.step(action)
    assert fragment in obs[0]["content"] and obs[0]["content"].startswith("Error:")
    assert not terminated and not truncated and info["tool_errors"] == 1
    _, reward, terminated, _, _ = env.step(call("submit", answer="4"))
    assert terminated and reward == 1.0


def test_wrong_action_type_raises_and_changes_nothing():
    env = Sum()
    env.reset(options={"task_id": "t2"})
    before = copy.deepcopy(env.messages)
    with pytest.raises(InvalidAction):
        env.step(42)
    assert env.messages == before and env.turn == 0
    assert env.step(call("submit", answer="4"))[2] is True


def test_step_before_reset_and_after_the_end_raise():
    env = Sum()
    with pytest.raises(EpisodeOver, match="before reset"):
        env.step("hi")
    env.reset(seed=0)
    env.step("wrong")
    with pytest.raises(EpisodeOver, match="after the episode ended"):
        env.step("again")


def test_max_turns_truncates_and_scores_with_no_answer():
    env = Sum(max_turns=2)
    env.reset(options={"task_id": "t1"})
    assert env.step(call("add", a=1, b=1))[3] is False
    _, reward, terminated, truncated, info = env.step(call("add", a=1, b=1))
    assert (terminated, truncated, reward, info["success"],
            info["truncated_by"]) == (False, True, 0.0, False, "max_turns")
    assert info["answer"] is None


def test_time_limit_truncates():
    env = Sum(time_limit_s=0.0)
    env.reset(seed=0)
    _, _, _, truncated, info = env.step(call("add", a=1, b=1))
    assert truncated and info["truncated_by"] == "time_limit"


def test_seeding_picks_tasks_deterministically():
    env = Sum()
    first = [env.reset(seed=s)[1]["task_id"] for s in range(10)]
    again = [env.reset(seed=s)[1]["task_id"] for s in range(10)]
    assert first == again and len(set(first)) > 2
    env.reset(seed=5)
    follow = [env.reset()[1]["task_id"] for _ in range(5)]
    env.reset(seed=5)
    assert follow == [env.reset()[1]["task_id"] for _ in range(5)]


def test_unknown_task_id_and_split():
    env = Sum()
    with pytest.raises(KeyError, match="no task 'zzz'"):
        env.reset(options={"task_id": "zzz"})
    with pytest.raises(ValueError, match="no split 'test'"):
        Sum(split="test")


def test_render_ansi_and_invalid_render_mode():
    env = Sum(render_mode="ansi")
    env.reset(options={"task_id": "t1"})
    env.step(call("add", a=1, b=1))
    text = env.render()
    assert "--- USER\nWhat is 1 + 1?" in text and "-> add(" in text and "--- TOOL[add]\n2" in text
    with pytest.raises(ValueError, match="render_mode"):
        Sum(render_mode="human")


def test_close_is_idempotent_and_tears_down():
    env = Sum()
    env.reset(seed=0)
    env.close()
    env.close()
    assert env.teardowns >= 2  # once at reset, once at close
    with pytest.raises(EpisodeOver):
        env.step("x")


def test_oracle_hook():
    env = Sum()
    env.reset(seed=1)
    _, reward, terminated, _, _ = env.step(env.oracle_action())
    assert terminated and reward == 1.0


def test_tools_are_openai_schemas_and_action_space_samples_calls():
    env = Sum()
    names = [t["function"]["name"] for t in env.tools]
    assert names == ["add", "submit"] and all(t["type"] == "function" for t in env.tools)
    env.action_space.seed(0)
    samples = [env.action_space.sample() for _ in range(30)]
    assert any(isinstance(s, dict) for s in samples) and any(isinstance(s, str) for s in samples)
    assert all(env.action_space.contains(s) for s in samples)
    env.reset(seed=0)
    for sample in samples:  # a random agent never crashes the env
        if env.step(sample)[2] or env.turn >= env.max_turns:
            env.reset()


def test_taskset_loaders(tmp_path):
    path = tmp_path / "gsm.jsonl"
    path.write_text('{"question": "2+2?", "answer": "4"}\n\n{"question": "3+3?", "answer": "6", "split": "test"}\n')
    tasks = TaskSet.load(path)
    assert [t.prompt for t in tasks] == ["2+2?", "3+3?"] and tasks[0].id == "gsm-0"
    assert len(tasks.split("test")) == 1 and tasks.splits == ["test", "train"]
    directory = tmp_path / "dir"
    directory.mkdir()
    (directory / "a.jsonl").write_text('{"id": "x", "prompt": "p"}\n')
    assert TaskSet.load(directory).by_id("x").prompt == "p"
    (tmp_path / "bad.jsonl").write_text('{"question": "ok"}\n{nope\n')
    with pytest.raises(ValueError, match="bad.jsonl:2"):
        TaskSet.load(tmp_path / "bad.jsonl")
    with pytest.raises(ValueError, match="needs 'prompt' or 'question'"):
        TaskSet.load([{"text": "x"}])
    with pytest.raises(ValueError, match="duplicate"):
        TaskSet([Task("a", "p"), Task("a", "q")])
    with pytest.raises(FileNotFoundError):
        TaskSet.load(tmp_path / "missing.jsonl")


def test_taskset_from_datasets(tmp_path):
    datasets = pytest.importorskip("datasets")
    dataset = datasets.Dataset.from_list([{"question": "1+1?", "answer": "2"}, {"question": "2+5?", "answer": "7"}])
    assert [t.answer for t in TaskSet.load(dataset)] == ["2", "7"]
    dataset.save_to_disk(str(tmp_path / "saved"))
    assert len(TaskSet.load(tmp_path / "saved")) == 2
