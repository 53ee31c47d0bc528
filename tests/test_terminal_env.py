"""Terminal-v0 behaviour: the gym contract, seeding, isolation between episodes, bad input, limits,
hidden scoring, and the terminal-bench / SETA loader."""

from __future__ import annotations

import shlex
import sys
import threading
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import clawgym  # noqa: F401  (registers the ids)
from clawgym.core import EpisodeOver
from clawgym.envs.terminal import load_terminal_bench
from clawgym.envs.terminal.scoring import parse_check_output
from clawgym.envs.terminal.tbench import load_task_dir


def call(name: str, **arguments) -> dict:
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": "c0", "type": "function", "function": {"name": name, "arguments": arguments}}]}


def bash(command: str) -> dict:
    return call("bash", command=command)


def make(**kwargs):
    return gym.make("clawgym/Terminal-v0", sandbox="bwrap", **kwargs)


@pytest.fixture
def env():
    environment = make()
    yield environment
    environment.close()


# ------------------------------------------------------------------------------------ contract
def test_check_env_passes():
    with make() as environment:
        check_env(environment.unwrapped, skip_render_check=True)


def test_reset_observation_tools_and_render(env):
    observation, info = env.reset(seed=0, options={"task_id": "files-create-nested"})
    assert [m["role"] for m in observation] == ["system", "user"]
    assert "name.txt" in observation[1]["content"]
    assert info == {"task_id": "files-create-nested", "turn": 0, "tool_calls": 0, "tool_errors": 0,
                    "tool_call_reading": "lenient"}
    assert [t["function"]["name"] for t in env.unwrapped.tools] == ["bash", "submit"]
    observation, reward, terminated, truncated, info = env.step(bash("cat name.txt; false"))
    assert observation[0]["role"] == "tool" and observation[0]["content"].startswith("exit code: 1\n")
    assert (reward, terminated, truncated) == (0.0, False, False)
    with gym.make("clawgym/Terminal-v0", sandbox="bwrap", render_mode="ansi").unwrapped as text:
        text.reset(seed=0, options={"task_id": "files-create-nested"})
        text.step(bash("echo rendered-output"))
        assert "rendered-output" in text.render()


def test_shell_state_persists_between_calls(env):
    env.reset(seed=0, options={"task_id": "files-create-nested"})
    env.step(bash("mkdir -p sub && cd sub && export MARK=kept-123"))
    observation, *_ = env.step(bash('pwd; echo "$MARK"'))
    lines = observation[0]["content"].splitlines()
    assert lines[1].endswith("/sub") and lines[2] == "kept-123"


def test_seeding_is_deterministic(env):
    with make() as other:
        digest = "find . -type f | sort | xargs md5sum"
        env.reset(seed=11, options={"task_id": "text-grep-count"})
        other.reset(seed=11, options={"task_id": "text-grep-count"})
        a = env.step(bash(digest))[0][0]["content"]
        b = other.step(bash(digest))[0][0]["content"]
        assert a == b
        other.reset(seed=12, options={"task_id": "text-grep-count"})
        assert other.step(bash(digest))[0][0]["content"] != a
        # the same seed also picks the same task
        assert env.reset(seed=5)[1]["task_id"] == other.reset(seed=5)[1]["task_id"]


# ------------------------------------------------------------------------------------ scoring
def test_oracle_scores_one_and_info_reports_each_check(env):
    task = env.unwrapped.task_set.by_id("git-ignore")
    env.reset(seed=3, options={"task_id": task.id})
    env.step(bash(task.data["solution"]))
    _, reward, terminated, truncated, info = env.step(call("submit", answer="done"))
    assert (reward, terminated, truncated) == (1.0, True, False)
    tests = info["tests"]
    assert tests["total"] == 5 and tests["passed"] == 5 and tests["pass_fraction"] == 1.0
    assert {c["name"] for c in tests["checks"]} == {"ignores_tmp", "ignores_build",
                                                    "not_overbroad", "committed", "clean"}
    assert info["success"] is True


def test_an_oracle_that_looks_first_lists_the_work_dir_then_solves():
    for looks, calls in ((False, 1), (True, 2)):
        with make(oracle_looks_first=looks) as environment:
            environment.reset(seed=3, options={"task_id": "files-find-needle"})
            observations, reward, done = [], 0.0, False
            while not done:
                action = environment.unwrapped.oracle_action()
                observation, reward, terminated, truncated, info = environment.step(action)
                observations.append(observation)
                done = terminated or truncated
            assert reward == 1.0 and info["tool_calls"] == calls
            if looks:  # the look saw the haystack's files before the solution ran
                assert "haystack" in observations[0][0]["content"] and observations[0][0]["content"].startswith(
                    "exit code: 0")


def test_partial_work_gets_zero_reward_but_a_pass_fraction():
    for partial, expected in ((False, 0.0), (True, pytest.approx(1 / 3))):
        with make(partial_credit=partial) as environment:
            environment.reset(seed=0, options={"task_id": "perm-modes-exact"})
            environment.step(bash("touch private.txt && chmod 640 private.txt"))
            _, reward, _, _, info = environment.step("done")
            assert reward == expected
            assert info["tests"]["passed"] == 1 and info["tests"]["total"] == 3 and not info["success"]


def test_work_done_before_truncation_is_scored():
    with make(max_turns=1) as environment:
        task = environment.unwrapped.task_set.by_id("text-grep-count")
        environment.reset(seed=4, options={"task_id": task.id})
        _, reward, terminated, truncated, info = environment.step(bash(task.data["solution"]))
        assert (reward, terminated, truncated) == (1.0, False, True)
        assert info["truncated_by"] == "max_turns" and info["tests"]["pass_fraction"] == 1.0


def test_check_is_hidden_and_shell_tricks_do_not_fool_it(env):
    env.reset(seed=2, options={"task_id": "files-create-nested"})
    # the sandbox's own work dir and /tmp, less the host's read-only Python bound there when the venv lives
    # under /tmp (a checkout there): the check must be in neither, wherever the checkout and venv live
    prune = "".join(f"-path {shlex.quote(path)} -prune -o " for path in sorted({sys.prefix, sys.base_prefix})
                    if path.startswith("/tmp/"))
    search = f"find . /tmp {prune}-type f -print0 2>/dev/null | xargs -0 -r grep -l 'CLAWGYM\\|same readme' | head"
    observation, *_ = env.step(bash(f"ls -A; {search}"))
    assert observation[0]["content"] == "exit code: 0\nname.txt\n"
    # shadowing the tools a check uses, in the agent's shell, must not make it pass
    tricks = ("test() { return 0; }; export -f test; same() { echo PASS; }; export -f same; "
              "check() { echo PASS; }; export -f check; alias cat='echo'; export PATH=/nonexistent:$PATH")
    env.step(bash(tricks))
    _, reward, _, _, info = env.step("PASS readme\nPASS utils_dir")
    assert reward == 0.0 and info["tests"]["passed"] == 0


# ------------------------------------------------------------------------------------ bad input and limits
def test_bad_tool_calls_become_errors_and_the_episode_goes_on(env):
    env.reset(seed=0, options={"task_id": "files-create-nested"})
    observation, _, done, _, info = env.step(call("python", code="print(1)"))
    assert "unknown tool 'python'" in observation[0]["content"] and "bash" in observation[0]["content"]
    assert not done and info["tool_errors"] == 1
    observation, _, done, _, info = env.step(call("bash"))
    assert "missing required argument(s): command" in observation[0]["content"] and not done
    observation, *_ = env.step(call("bash", command="ls", cwd="/"))
    assert "unknown argument(s): cwd" in observation[0]["content"]
    observation, *_ = env.step(call("bash", command="   "))
    assert "empty" in observation[0]["content"]
    observation, *_ = env.step('<tool_call>{"name": "bash", "arguments": {"command": </tool_call>')
    assert "not valid JSON" in observation[0]["content"]
    observation, _, done, _, info = env.step(bash("echo still-alive"))
    assert observation[0]["content"] == "exit code: 0\nstill-alive\n" and not done
    assert info["tool_errors"] == 5 and info["tool_calls"] == 6
    with pytest.raises(Exception):
        env.step(12345)  # not an assistant message: the caller's bug, no state change
    assert env.unwrapped.turn == 6


def test_huge_output_is_clipped_keeping_head_and_tail():
    with make(max_output_chars=2000) as environment:
        environment.reset(seed=0, options={"task_id": "files-create-nested"})
        observation, *_ = environment.step(bash("echo HEAD-MARK; seq 1 2000000; echo TAIL-MARK"))
        content = observation[0]["content"]
        assert len(content) < 2600
        assert content.startswith("exit code: 0\nHEAD-MARK")
        assert "characters omitted" in content and "output clipped" in content
        observation, *_ = environment.step(bash("echo ok"))
        assert observation[0]["content"] == "exit code: 0\nok\n"


def test_command_timeout_kills_the_command_not_the_shell():
    with make(command_timeout_s=1.0) as environment:
        environment.reset(seed=0, options={"task_id": "files-create-nested"})
        environment.step(bash("export KEEP=yes"))
        observation, _, done, _, _ = environment.step(bash("echo started; sleep 20"))
        content = observation[0]["content"]
        assert content.startswith("exit code: 124\nstarted") and "timed out after 1" in content and not done
        observation, *_ = environment.step(bash('echo "alive $KEEP"'))
        assert observation[0]["content"] == "exit code: 0\nalive yes\n"


def test_episode_time_budget_truncates_and_still_scores():
    with make(time_limit_s=1.0) as environment:
        environment.reset(seed=0, options={"task_id": "files-create-nested"})
        observation, _, terminated, truncated, info = environment.step(bash("sleep 10"))
        assert truncated and not terminated and info["truncated_by"] == "time_limit"
        assert "timed out" in observation[0]["content"] and "tests" in info


def test_huge_final_answer_is_scored_without_error(env):
    env.reset(seed=0, options={"task_id": "text-answer-max"})
    observation, *_ = env.step(bash("sort -n temps.txt | tail -1"))
    best = observation[0]["content"].split()[-1]
    _, reward, terminated, _, info = env.step("x" * 300_000 + f" the answer is {best}")
    assert terminated and reward == 1.0, info["tests"]


def test_close_is_idempotent_and_step_after_close_fails():
    environment = make()
    environment.reset(seed=0)
    environment.close()
    environment.close()
    with pytest.raises(EpisodeOver):
        environment.unwrapped.step("done")


def test_bad_constructor_arguments_fail_clearly():
    with pytest.raises(ValueError, match="max_output_chars"):
        make(max_output_chars=10)
    with pytest.raises(ValueError, match="command_timeout_s"):
        make(command_timeout_s=0)
    with pytest.raises(ValueError, match="no check script"):
        make(tasks=[{"id": "x", "prompt": "p", "data": {}}])


# ------------------------------------------------------------------------------------ concurrency
def test_sixteen_concurrent_episodes_do_not_interfere():
    errors: list[str] = []

    def episode(index: int) -> None:
        token = f"tok-{index}-{'x' * index}"
        environment = make()
        try:
            environment.reset(seed=index, options={"task_id": "files-create-nested"})
            environment.step(bash(f"echo {token} > mine.txt; echo {token} > /tmp/mine.txt; sleep 0.2"))
            observation, *_ = environment.step(bash("cat mine.txt /tmp/mine.txt; ls -A"))
            expected = f"exit code: 0\n{token}\n{token}\nmine.txt\nname.txt\n"
            if observation[0]["content"] != expected:
                errors.append(f"{index}: {observation[0]['content']!r}")
            task = environment.unwrapped.task
            environment.step(bash(task.data["solution"]))
            _, reward, *_ = environment.step("done")
            if reward != 1.0:
                errors.append(f"{index}: reward {reward}")
        except Exception as exc:  # reported below, with the episode's index
            errors.append(f"{index}: {type(exc).__name__}: {exc}")
        finally:
            environment.close()

    threads = [threading.Thread(target=episode, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors


# ------------------------------------------------------------------------------------ check output parsing
def test_check_output_parsing():
    report = parse_check_output("PASS a\nFAIL b: wrong value\nnoise\nPASSED tests/t.py::test_x\n"
                                "FAILED tests/t.py::test_y - assert 1 == 2\n__CLAWGYM_CHECK_EXIT__ 0\n")
    assert [(c["name"], c["passed"]) for c in report.checks] == [
        ("a", True), ("b", False), ("tests/t.py::test_x", True), ("tests/t.py::test_y", False)]
    assert report.checks[1]["detail"] == "wrong value" and report.pass_fraction == 0.5
    crashed = parse_check_output("PASS a\n__CLAWGYM_CHECK_EXIT__ 2\n")
    assert not crashed.all_passed and crashed.checks[-1]["name"] == "exit_status"
    assert parse_check_output("__CLAWGYM_CHECK_EXIT__ 0\n").all_passed
    assert not parse_check_output("", exit_code=None).all_passed


# ------------------------------------------------------------------------------------ terminal-bench / SETA
def write_tbench_task(root: Path, name: str, runner: bool = True) -> Path:
    task = root / name
    (task / "tests").mkdir(parents=True)
    (task / "task.yaml").write_text(
        "# canary\ninstruction: |\n  Write the reversed contents of input.txt to output.txt.\n"
        "difficulty: easy\ncategory: text\nmax_test_timeout_sec: 30\n")
    (task / "input.txt").write_text("abc\n")
    (task / "Dockerfile").write_text("FROM debian:bookworm-slim\nWORKDIR /app\nCOPY input.txt /app/input.txt\n")
    (task / "solution.sh").write_text("#!/bin/bash\nrev input.txt > output.txt\n")
    (task / "tests" / "check_output.sh").write_text(
        '[ "$(cat output.txt)" = cba ] && echo "PASS reversed" || echo "FAIL reversed"\n'
        '[ -f input.txt ] && echo "PASS input_kept" || echo "FAIL input_kept"\n')
    if runner:
        (task / "run-tests.sh").write_text('#!/bin/bash\nbash "$TEST_DIR/check_output.sh"\n')
    return task


def test_terminal_bench_loader_parses_layouts(tmp_path):
    task = load_task_dir(write_tbench_task(tmp_path, "reverse"))
    assert task.id == "reverse" and task.prompt.startswith("Write the reversed")
    assert task.data["files"] == {} and task.data["workdir"] == "/app"  # the Dockerfile's COPY brings input.txt
    assert task.data["dockerfile"].endswith("reverse/Dockerfile")
    assert "rev input.txt" in task.data["solution"] and task.data["check_timeout_s"] == 30.0
    old = tmp_path / "old"
    (old / "tests").mkdir(parents=True)
    (old / "task.yaml").write_text("descriptions:\n  - key: base\n    description: Old style.\n")
    (old / "solution.yaml").write_text("- command: echo one\n- command: echo two\n")
    (old / "tests" / "test_outputs.py").write_text("def test_x():\n    assert True\n")
    old_task = load_task_dir(old)
    assert old_task.prompt == "Old style." and old_task.data["solution"] == "echo one\necho two"
    assert "pytest" in old_task.data["check"]
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "task.yaml").write_text("difficulty: easy\n")
    with pytest.raises(ValueError, match="no 'instruction'"):
        load_task_dir(tmp_path / "broken")
    with pytest.raises(FileNotFoundError):
        load_terminal_bench(tmp_path / "reverse" / "tests")


def test_terminal_bench_tasks_run_in_the_env(tmp_path):
    write_tbench_task(tmp_path, "reverse")
    with gym.make("clawgym/Terminal-v0", sandbox="bwrap", tasks=str(tmp_path)) as environment:
        assert len(environment.unwrapped.task_set) == 1
        environment.reset(seed=0, options={"task_id": "reverse"})
        observation, *_ = environment.step(bash("pwd; ls"))
        assert observation[0]["content"] == "exit code: 0\n/app\ninput.txt\n"  # tests are not there
        _, reward, _, _, info = environment.step("done")
        assert reward == 0.0 and {c["name"]: c["passed"] for c in info["tests"]["checks"]} == {
            "reversed": False, "input_kept": True}
        task = environment.unwrapped.task
        environment.reset(seed=0, options={"task_id": "reverse"})
        environment.step(bash(task.data["solution"]))
        _, reward, _, _, info = environment.step("done")
        assert reward == 1.0 and info["tests"]["passed"] == 2


# ------------------------------------------------------------------------------------ docker backend
@pytest.mark.docker
@pytest.mark.slow
def test_tasks_score_the_same_on_docker(docker_engine):
    """The same tasks, scripts and scoring on the Docker backend (tasks that need only bash + coreutils)."""
    with gym.make("clawgym/Terminal-v0", sandbox="docker", sandbox_config={"image": docker_engine.image},
                           sandbox_options={"base_url": docker_engine.base_url}) as environment:
        for task_id in ("files-create-nested", "text-grep-count", "text-answer-max"):
            task = environment.unwrapped.task_set.by_id(task_id)
            environment.reset(seed=3, options={"task_id": task_id})
            observation, *_ = environment.step(bash(task.data["solution"]))
            answer = observation[0]["content"].split("\n", 1)[1].strip() or "done"
            _, reward, _, _, info = environment.step(answer)
            assert reward == 1.0, (task_id, info["tests"])
            environment.reset(seed=3, options={"task_id": task_id})
            _, reward, _, _, info = environment.step("done")
            assert reward == 0.0, (task_id, info["tests"])
