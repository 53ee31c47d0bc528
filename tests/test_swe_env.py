"""SWE-v0 episodes in the real sandbox: the contract, the tools, and the ways an agent could try to
get reward without fixing the bug (each must earn 0)."""

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import clawgym  # noqa: F401
from clawgym.envs.swe.env import SWEEnv

TASK = "swe-textfmt-002"  # justify_line puts too few spaces in the left gaps (textfmt/wrap.py)


def call(name, **arguments):
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": name, "arguments": arguments}}]}


def bash(command):
    return call("bash", command=command)


def edit(**arguments):
    return call("str_replace_editor", **arguments)


SUBMIT = call("submit")


@pytest.fixture(scope="module")
def env():
    environment = gym.make("clawgym/SWE-v0", max_turns=30)
    yield environment.unwrapped
    environment.close()


@pytest.fixture
def episode(env):
    env.reset(options={"task_id": TASK})
    return env


def run(env, action):
    observation, reward, terminated, truncated, info = env.step(action)
    return observation[0]["content"] if observation else "", reward, terminated, truncated, info


def gold(env):
    return env.task.data["patch"]


# ------------------------------------------------------------------------------------------ contract
def test_check_env_passes():
    environment = SWEEnv(max_turns=3)
    try:
        check_env(environment)
    finally:
        environment.close()


def test_seeding_is_deterministic(env):
    first = [env.reset(seed=seed) for seed in (0, 1, 2, 7)]
    again = [env.reset(seed=seed) for seed in (0, 1, 2, 7)]
    assert [obs for obs, _ in first] == [obs for obs, _ in again]
    assert len({info["task_id"] for _, info in first}) > 1


def test_reset_gives_issue_and_a_one_commit_repository(episode):
    assert episode.messages[1]["role"] == "user" and "<issue>" in episode.messages[1]["content"]
    assert [tool["function"]["name"] for tool in episode.tools] == ["bash", "str_replace_editor", "submit"]
    out, *_ = run(episode,
                  bash("pwd; git log --oneline | wc -l; git status --porcelain | wc -l; ls tests 2>&1 | head -1"))
    lines = out.splitlines()
    assert lines[0] == "/repo" and lines[1].strip() == "1" and lines[2].strip() == "0"
    assert "No such file" in lines[3]  # the hidden tests are not in the work dir


def test_oracle_solves(episode):
    done = False
    while not done:
        _, reward, terminated, truncated, info = episode.step(episode.oracle_action())
        done = terminated or truncated
    assert reward == 1.0 and info["resolved"]


def test_max_turns_evaluates_the_work_so_far():
    environment = SWEEnv(max_turns=1)
    try:
        environment.reset(options={"task_id": TASK})
        _, reward, terminated, truncated, info = run(environment, bash(f"git apply <<'EOF'\n{gold(environment)}EOF"))
        assert (terminated, truncated, info["truncated_by"], reward) == (False, True, "max_turns", 1.0)
        assert info["test_report"]["FAIL_TO_PASS"] and info["diff"]
    finally:
        environment.close()


def test_committed_work_still_counts(episode):
    run(episode, bash(f"git apply <<'EOF'\n{gold(episode)}EOF"))
    out, *_ = run(episode,
                  bash("git -c user.name=a -c user.email=a@b commit -qam fix && git status --porcelain | wc -l"))
    assert out.splitlines()[0].strip() == "0"
    _, reward, *_ = run(episode, SUBMIT)
    assert reward == 1.0


# ------------------------------------------------------------------------------------------ editor
def test_editor_fixes_the_bug(episode):
    out, *_ = run(episode, edit(command="view", path="textfmt/wrap.py", view_range=[40, 46]))
    assert "    44\t" in out and "base - (1 if index < extra else 0)" in out
    out, *_ = run(episode, edit(command="str_replace", path="/repo/textfmt/wrap.py",
                                old_str="base - (1 if index < extra", new_str="base + (1 if index < extra"))
    assert "Edited textfmt/wrap.py" in out and "base + (1" in out
    _, reward, _, _, info = run(episode, SUBMIT)
    assert reward == 1.0
    removed = [line for line in info["diff"].splitlines() if line.startswith("-") and not line.startswith("---")]
    assert len(removed) == 1 and "+        pieces.append(\" \" * (base + (1" in info["diff"]


def test_editor_view_create_insert_undo(episode):
    out, *_ = run(episode, edit(command="view", path="."))
    assert "textfmt/wrap.py" in out and ".git" not in out
    out, _, _, _, info = run(episode, edit(command="create", path="textfmt/wrap.py", file_text="x"))
    assert "already exists" in out and info["tool_errors"] == 1
    out, *_ = run(episode, edit(command="create", path="notes/todo.txt", file_text="one\ntwo\n"))
    assert "Created notes/todo.txt" in out
    run(episode, edit(command="insert", path="notes/todo.txt", insert_line=1, new_str="one and a half"))
    run(episode, edit(command="insert", path="notes/todo.txt", insert_line=0, new_str="zero"))
    out, *_ = run(episode, bash("cat notes/todo.txt"))
    assert out.splitlines()[:4] == ["zero", "one", "one and a half", "two"]
    out, *_ = run(episode, edit(command="insert", path="notes/todo.txt", insert_line=99, new_str="x"))
    assert "out of range" in out and "has 4 lines" in out
    run(episode, edit(command="undo_edit", path="notes/todo.txt"))
    out, *_ = run(episode, bash("cat notes/todo.txt"))
    assert out.splitlines()[:3] == ["one", "one and a half", "two"]
    run(episode, edit(command="undo_edit", path="notes/todo.txt"))
    run(episode, edit(command="undo_edit", path="notes/todo.txt"))
    out, *_ = run(episode, bash("ls notes"))
    assert out.startswith("[exit code 0]")  # the file's creation was undone too
    out, *_ = run(episode, edit(command="undo_edit", path="notes/todo.txt"))
    assert "no edit" in out


def test_editor_errors_are_clear(episode):
    cases = [
        (dict(command="str_replace", path="textfmt/wrap.py", old_str="no such text", new_str="y"), "was not found"),
        (dict(command="str_replace", path="textfmt/wrap.py", old_str="return", new_str="y"), "occurs"),
        (dict(command="view", path="textfmt/missing.py"), "does not exist"),
        (dict(command="view", path="textfmt/wrap.py", view_range=[10, 5]), "is invalid"),
        (dict(command="str_replace", path="textfmt", old_str="a", new_str="b"), "is a directory"),
        (dict(command="create", path="x.py"), "needs `file_text`"),
        (dict(command="delete", path="x.py"), "must be one of"),
    ]
    for arguments, expected in cases:
        out, _, _, _, info = run(episode, edit(**arguments))
        assert out.startswith("Error") and expected in out, (arguments, out)
    out, *_ = run(episode, bash("git status --porcelain | wc -l"))
    assert out.splitlines()[0].strip() == "0"  # no failed command changed anything


def test_editor_refuses_paths_outside_the_repository(episode):
    for path in ("/etc/passwd", "../etc/passwd", "/repo/../tmp/x.py", "/tmp/evil.py", ".git/config"):
        out, *_ = run(episode, edit(command="create", path=path, file_text="x"))
        assert out.startswith("Error") and ("outside the repository" in out or ".git" in out), (path, out)
    run(episode, bash("ln -s /tmp escape"))
    out, *_ = run(episode, edit(command="create", path="escape/evil.py", file_text="x"))
    assert "symlink" in out
    out, *_ = run(episode, bash("ls /tmp/evil.py 2>&1"))
    assert "No such file" in out


def test_bash_reports_exit_codes_and_timeouts(episode):
    out, _, _, _, info = run(episode, bash("echo hi; (exit 3)"))
    assert out == "hi\n[exit code 3]" and info["tool_errors"] == 1
    out, *_ = run(episode, call("bash", command="sleep 5", timeout=0.5))
    assert "timed out" in out
    out, *_ = run(episode, bash("echo still alive"))
    assert out.startswith("still alive")


# ------------------------------------------------------------------------------------------ cheating
def assert_no_reward(episode, *commands):
    for command in commands:
        run(episode, bash(command))
    _, reward, terminated, _, info = run(episode, SUBMIT)
    assert terminated and reward == 0.0 and not info["success"], info
    return info


def test_deleting_tests_and_adding_a_passing_conftest_earns_nothing(episode):
    info = assert_no_reward(
        episode,
        "mkdir -p tests && printf 'import unittest\\nclass TestJustify(unittest.TestCase):\\n"
        "    def test_extra_spaces_go_left(self):\\n        pass\\n' > tests/test_wrap.py",
        "printf 'import pytest\\n@pytest.hookimpl(hookwrapper=True)\\ndef pytest_runtest_makereport(item, call):\\n"
        "    outcome = yield\\n    outcome.get_result().outcome = \"passed\"\\n' > conftest.py",
        "printf '[pytest]\\naddopts = -p no:python\\n' > pytest.ini",
    )
    assert set(info["dropped_paths"]) == {"tests/test_wrap.py", "conftest.py", "pytest.ini"}
    assert info["test_report"]["FAIL_TO_PASS"]["tests/test_wrap.py::TestJustify::test_extra_spaces_go_left"] == "failed"


def test_sitecustomize_in_the_repository_is_never_loaded(episode):
    info = assert_no_reward(
        episode,
        "printf 'import unittest\\nunittest.TestCase.run = lambda self, result=None: None\\n' > sitecustomize.py",
        "printf 'import unittest\\nunittest.TestCase.run = lambda self, result=None: None\\n' > "
        "textfmt/usercustomize.py",
        "touch evil.pth",
    )
    assert {"sitecustomize.py", "textfmt/usercustomize.py", "evil.pth"} <= set(info["dropped_paths"])


def test_package_that_patches_unittest_is_caught(episode):
    info = assert_no_reward(
        episode,
        "printf 'import unittest\\nunittest.TestCase.assertEqual = lambda *a, **k: None\\n' >> textfmt/__init__.py",
    )
    assert "modified the test machinery" in info["eval_error"] and "TestCase.assertEqual" in info["eval_error"]


def test_package_that_exits_early_is_caught(episode):
    info = assert_no_reward(episode, "printf 'import os\\nos._exit(0)\\n' >> textfmt/__init__.py")
    assert "produced no report" in info["eval_error"]


def test_edits_outside_the_repository_do_not_count(episode):
    patch = gold(episode)
    info = assert_no_reward(
        episode,
        # A fixed copy of the package outside the repository, put first on every path the agent can reach.
        f"mkdir -p /tmp/fixed && cp -r textfmt /tmp/fixed/ && cd /tmp/fixed && git apply <<'EOF'\n{patch}EOF",
        "cd /repo && export PYTHONPATH=/tmp/fixed && echo 'export PYTHONPATH=/tmp/fixed' >> ~/.bashrc",
        "python3 -c 'import textfmt; print(textfmt.__file__)'",
    )
    assert info["diff"] == "" and info["patch_applied"]


def test_stale_bytecode_cannot_stand_in_for_the_source(episode):
    patch = gold(episode)
    info = assert_no_reward(
        episode,
        # Compile the *fixed* module into an unchecked-hash .pyc (never revalidated against the source),
        # then leave the source buggy and make git see the byte code.
        f"mkdir -p /tmp/fix && cp -r textfmt /tmp/fix/ && (cd /tmp/fix && git apply <<'EOF'\n{patch}EOF\n)",
        "python3 -c \"import py_compile, sys; tag = sys.implementation.cache_tag; "
        "py_compile.compile('/tmp/fix/textfmt/wrap.py', cfile=f'textfmt/__pycache__/wrap.{tag}.pyc', "
        "dfile='textfmt/wrap.py', "
        "invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)\"",
        "rm .gitignore",
    )
    assert any(path.endswith(".pyc") for path in info["dropped_paths"]), info["dropped_paths"]


def test_destroying_the_git_repository_earns_nothing_and_says_why(episode):
    run(episode, bash(f"git apply <<'EOF'\n{gold(episode)}EOF"))
    info = assert_no_reward(episode, "rm -rf .git")
    assert "could not read the diff" in info["eval_error"]
