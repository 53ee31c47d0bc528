"""terminal-bench (v1) and Harbor task directories run as published: the image is built from the task's
Dockerfile (no registry), tests enter only after the agent is done, and on bwrap a Dockerfile the host
satisfies is replayed while one that installs packages fails naming its line.

The fixtures under tests/fixtures/tbench are clawgym's own tasks (10 per layout); their Dockerfiles
share two package sets, so a run builds two package layers and many cheap per-task layers.
"""

from __future__ import annotations

import ast
from pathlib import Path

import gymnasium as gym
import pytest

import clawgym  # noqa: F401  (registers the ids)
from clawgym.envs.terminal import load_terminal_tasks
from clawgym.envs.terminal.harbor import load_harbor
from clawgym.envs.terminal.image import DockerfileNotReplayable, replay_dockerfile
from clawgym.envs.terminal.tbench import fetches_packages, load_terminal_bench
from clawgym.sandbox.dockerfile import DockerfileError, parse, static_facts

FIXTURES = Path(__file__).parent / "fixtures" / "tbench"
TBENCH = FIXTURES / "terminal_bench"
HARBOR = FIXTURES / "harbor"
TERMINAL = Path(__file__).resolve().parents[1] / "clawgym" / "envs" / "terminal"


def run_episode(env, task_id: str, oracle: bool) -> tuple[float, dict]:
    env.reset(seed=0, options={"task_id": task_id})
    while True:
        action = env.unwrapped.oracle_action() if oracle else "done"
        _, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return reward, info


# ------------------------------------------------------------------------------------------ no engine needed
def test_dockerfile_parser_keeps_lines_and_reads_env_and_workdir():
    text = ("# syntax=docker/dockerfile:1\nFROM python:3.11-slim AS base\n\nRUN apt-get update && \\\n"
            "    # a comment inside\n    apt-get install -y jq\nENV A=1 B=\"two words\"\nENV OLD style value\n"
            "ENV PATH=/opt/venv/bin:$PATH\nWORKDIR /srv\nWORKDIR app\nCMD [\"bash\"]\n")
    instructions = parse(text)
    assert [(i.keyword, i.line) for i in instructions] == [
        ("FROM", 2), ("RUN", 4), ("ENV", 7), ("ENV", 8), ("ENV", 9), ("WORKDIR", 10), ("WORKDIR", 11), ("CMD", 12)]
    assert instructions[1].value == "apt-get update && apt-get install -y jq"
    facts = static_facts(instructions)
    assert facts.base == "python:3.11-slim" and facts.base_line == 2 and facts.workdir == "/srv/app"
    assert facts.env["B"] == "two words" and facts.env["OLD"] == "style value"
    assert facts.env["PATH"].startswith("/opt/venv/bin:/usr/local/sbin")
    with pytest.raises(DockerfileError, match="no FROM"):
        static_facts(parse("RUN true\n"))
    with pytest.raises(DockerfileError, match="Dockerfile:2: heredocs"):
        parse("FROM debian\nRUN <<EOF\necho\nEOF\n")


def test_dockerignore_matches_like_docker():
    from clawgym.sandbox.images import _ignored

    patterns = [(False, "secret"), (False, "*.log"), (True, "keep.log"), (False, "**/cache"), (False, "docs/*.md")]
    ignored = {path for path in ["secret/a.txt", "x.log", "keep.log", "a/b/cache/z", "cache/y", "a/b.txt", "data/x.log",
                                 "docs/a.md", "docs/sub/b.md"] if _ignored(path, patterns)}
    assert ignored == {"secret/a.txt", "x.log", "a/b/cache/z", "cache/y", "docs/a.md"}


def test_both_layouts_load_with_instruction_timeouts_and_dockerfile():
    tbench, harbor = load_terminal_bench(TBENCH), load_harbor(HARBOR)
    assert len(tbench) == 10 and len(harbor) == 10
    for task in [*tbench, *harbor]:
        data = task.data
        assert task.prompt and data["solution"].strip() and data["workdir"] == "/app", task.id
        assert Path(data["dockerfile"]).is_file() and data["files"] == {}, task.id
        assert data["time_limit_s"] == 300.0 and data["check_timeout_s"] == 60.0, task.id
        assert "test_outputs" not in task.prompt and "def test_" not in data["solution"], task.id
    assert "/logs/verifier/reward" in harbor.by_id("implement-slugify").data["check"]
    # gym.make's loader picks the layout from the directory
    assert len(load_terminal_tasks(str(HARBOR))) == 10 and len(load_terminal_tasks(str(TBENCH))) == 10


def test_network_only_for_tasks_whose_tests_fetch_packages_and_harbor_solution_dirs(tmp_path):
    import shutil

    assert not any(task.data.get("network") for task in load_terminal_bench(TBENCH))
    env = gym.make("clawgym/Terminal-v0", tasks=str(TBENCH), sandbox="bwrap")
    assert "no network" in env.unwrapped.system_prompt(env.unwrapped.task_set[0])
    v1 = tmp_path / "v1"
    shutil.copytree(TBENCH / "top-words", v1)
    (v1 / "run-tests.sh").write_text("pip install pytest==8.3.5\npython3 -m pytest $TEST_DIR/test_outputs.py -rA\n")
    task = load_terminal_bench(v1)[0]
    assert task.data["network"] is True and "no network" not in env.unwrapped.system_prompt(task)
    env.close()
    harbor = tmp_path / "hb"
    shutil.copytree(HARBOR / "implement-slugify", harbor)
    (harbor / "solution" / "slugify.py").write_text("print('helper')\n")
    solution = load_harbor(harbor)[0].data["solution"]
    assert "/solution/slugify.py" not in solution and "slugify.py" in solution and solution.endswith(
        "bash /solution/solve.sh")


# a runner that only names installers in its comments, as a runner adapted from terminal-bench's stock one may
COMMENTED_RUNNER = ("#!/bin/bash\n# The stock runner installs curl and uv; this one needs neither.\n"
                    'python3 -m pytest "$TEST_DIR/test_outputs.py" -rA -p no:cacheprovider  # no uv add pytest\n')


def interfaces(proc_net_dev: str) -> list[str]:
    """The network interfaces a process sees, from its /proc/net/dev (its own network namespace)."""
    return [line.split(":")[0].strip() for line in proc_net_dev.splitlines()[2:] if ":" in line]


def test_a_folder_holding_both_layouts_loads_every_task(tmp_path):
    import shutil

    tasks = load_terminal_tasks(str(FIXTURES))  # one folder per layout
    assert len(tasks) == 20 and {t.data.get("layout", "terminal-bench") for t in tasks} == {"harbor", "terminal-bench"}
    mixed = tmp_path / "mixed"  # both layouts side by side
    shutil.copytree(TBENCH / "top-words", mixed / "top-words")
    shutil.copytree(HARBOR / "implement-slugify", mixed / "implement-slugify")
    with gym.make("clawgym/Terminal-v0", tasks=str(mixed), sandbox="docker") as env:
        assert [t.id for t in env.unwrapped.task_set] == ["implement-slugify", "top-words"]
        assert env.unwrapped.task_set.by_id("implement-slugify").data["layout"] == "harbor"
    shutil.copytree(TBENCH / "top-words", tmp_path / "same" / "v1" / "words")
    shutil.copytree(HARBOR / "implement-slugify", tmp_path / "same" / "v2" / "words")
    with pytest.raises(ValueError, match="two tasks are named 'words' in .*same .*v1/words.*v2/words"):
        load_terminal_tasks(tmp_path / "same")
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    with pytest.raises(FileNotFoundError,
                       match=r"no terminal tasks in .*empty: expected \*.jsonl files, .*task.yaml.*task.toml"):
        load_terminal_tasks(str(tmp_path / "empty"))


def test_network_comes_from_real_commands_or_a_declaration_never_from_a_comment(tmp_path):
    import shutil

    assert not fetches_packages(COMMENTED_RUNNER)
    assert fetches_packages("apt-get update; apt-get install -y curl\n"
                            "curl -LsSf https://astral.sh/uv/install.sh | sh\n")
    assert fetches_packages("echo '# not a comment'; uv add pytest\n") and not fetches_packages("true #curl x\n")
    v1 = tmp_path / "v1" / "top-words"
    shutil.copytree(TBENCH / "top-words", v1)
    (v1 / "run-tests.sh").write_text(COMMENTED_RUNNER)
    task = load_terminal_bench(v1)[0]
    assert "network" not in task.data
    with gym.make("clawgym/Terminal-v0", tasks=str(v1), sandbox="bwrap") as env:
        assert "There is no network access." in env.unwrapped.system_prompt(task)
    spec = (v1 / "task.yaml").read_text()
    (v1 / "task.yaml").write_text(spec + "allow_internet: true\n")  # a declaration grants it without a fetch
    assert load_terminal_bench(v1)[0].data["network"] is True
    (v1 / "task.yaml").write_text(spec + "allow_internet: false\n")  # and refuses it even with one
    (v1 / "run-tests.sh").write_text("pip install pytest==8.3.5\n" + COMMENTED_RUNNER)
    assert "network" not in load_terminal_bench(v1)[0].data
    (v1 / "task.yaml").write_text(spec + "allow_internet: sometimes\n")
    with pytest.raises(ValueError, match="allow_internet must be true or false, got 'sometimes'"):
        load_terminal_bench(v1)
    harbor = tmp_path / "hb" / "implement-slugify"
    shutil.copytree(HARBOR / "implement-slugify", harbor)
    test_sh = harbor / "tests" / "test.sh"
    test_sh.write_text(
        "# the stock verifier runs: curl -LsSf https://astral.sh/uv/install.sh | sh\n" + test_sh.read_text())
    assert "network" not in load_harbor(harbor)[0].data
    (harbor / "task.toml").write_text((harbor / "task.toml").read_text() + "allow_internet = true\n")  # [environment]
    assert load_harbor(harbor)[0].data["network"] is True


def test_a_task_naming_curl_in_a_comment_sees_only_loopback_on_bwrap(tmp_path):
    task = write_replayable_task(tmp_path)
    (task / "run-tests.sh").write_text("# The stock runner installs curl and uv first.\n"
                                       + (task / "run-tests.sh").read_text())
    with gym.make("clawgym/Terminal-v0", sandbox="bwrap", tasks=str(tmp_path)) as env:
        observation, _ = env.reset(seed=0, options={"task_id": "greet"})
        assert "There is no network access." in observation[0]["content"]
        observation, *_ = env.step({"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function",
                                    "function": {"name": "bash", "arguments": '{"command": "cat /proc/net/dev"}'}}]})
        assert interfaces(observation[0]["content"].split("\n", 1)[1]) == ["lo"]


def test_a_failing_tests_message_reaches_info_whole(tmp_path):
    import sys

    task = tmp_path / "long-message"
    (task / "tests").mkdir(parents=True)
    (task / "task.yaml").write_text("instruction: Write the report.\n")
    message = "/app/report.txt should list every region with its total, " + "x" * 60 + " END-OF-MESSAGE"
    (task / "tests" / "test_outputs.py").write_text(f"def test_report():\n    assert False, {message!r}\n")
    (task / "run-tests.sh").write_text(f'{sys.executable} -m pytest "$TEST_DIR/test_outputs.py" -rA '
                                       '-p no:cacheprovider\n')
    with gym.make("clawgym/Terminal-v0", sandbox="bwrap", tasks=str(tmp_path)) as env:
        reward, info = run_episode(env, "long-message", oracle=False)
    (check, *_) = info["tests"]["checks"]
    assert reward == 0.0 and check["name"].endswith("test_outputs.py::test_report") and not check["passed"]
    assert check["detail"] == f"AssertionError: {message}"


def test_harbor_loader_rejects_incomplete_tasks(tmp_path):
    task = tmp_path / "t"
    (task / "environment").mkdir(parents=True)
    (task / "task.toml").write_text('version = "1.0"\n')
    with pytest.raises(ValueError, match="no instruction.md"):
        load_harbor(task)
    (task / "instruction.md").write_text("Do it.\n")
    with pytest.raises(ValueError, match="no tests/test.sh"):
        load_harbor(task)
    (task / "tests").mkdir()
    (task / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    with pytest.raises(ValueError, match="no environment/Dockerfile"):
        load_harbor(task)
    (task / "task.toml").write_text("version = \n")
    with pytest.raises(ValueError, match="not valid TOML"):
        load_harbor(task)


def test_taskset_and_tbench_do_not_import_each_other():
    def imports(module: str) -> set[str]:
        tree = ast.parse((TERMINAL / f"{module}.py").read_text())
        return {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}

    assert "clawgym.envs.terminal.tbench" in imports("taskset")
    for loader in ("tbench", "harbor", "records"):
        assert "clawgym.envs.terminal.taskset" not in imports(loader), loader


def write_replayable_task(root: Path, install: str = "bash coreutils") -> Path:
    task = root / "greet"
    (task / "tests").mkdir(parents=True)
    (task / "task.yaml").write_text("instruction: Append the value of $GREETING to data/log.txt.\n"
                                    "max_agent_timeout_sec: 60\n")
    (task / "Dockerfile").write_text(
        "FROM debian:bookworm-slim\n"
        f"RUN apt-get update && apt-get install -y --no-install-recommends {install} && rm -rf /var/lib/apt/lists/*\n"
        "ENV GREETING=hello\nWORKDIR /app\nCOPY setup-env.sh /app/\nRUN bash setup-env.sh && rm setup-env.sh\n")
    (task / "setup-env.sh").write_text("mkdir -p data && echo start > data/log.txt\n")
    (task / "Dockerfile").write_text((task / "Dockerfile").read_text() + "RUN echo 'a; b && c' > data/quoted.txt\n")
    (task / "solution.sh").write_text('echo "$GREETING" >> data/log.txt\n')
    (task / "run-tests.sh").write_text(
        '[ "$(cat data/log.txt)" = "$(printf "start\\nhello")" ] && echo "PASS appended" || echo "FAIL appended"\n'
        '[ -f setup-env.sh ] && echo "FAIL cleaned_up" || echo "PASS cleaned_up"\n'
        '[ "$(cat data/quoted.txt)" = "a; b && c" ] && echo "PASS quoted_run" || echo "FAIL quoted_run"\n')
    return task


def test_bwrap_replays_a_dockerfile_the_host_satisfies(tmp_path):
    write_replayable_task(tmp_path)
    with gym.make("clawgym/Terminal-v0", sandbox="bwrap", tasks=str(tmp_path)) as env:
        assert run_episode(env, "greet", oracle=True)[0] == 1.0
        reward, info = run_episode(env, "greet", oracle=False)
        assert reward == 0.0 and {c["name"]: c["passed"] for c in info["tests"]["checks"]} == {
            "appended": False, "cleaned_up": True, "quoted_run": True}


def test_bwrap_refuses_a_package_install_naming_the_line(tmp_path):
    task = write_replayable_task(tmp_path, install="clawgym-no-such-package-xyz")
    with pytest.raises(DockerfileNotReplayable, match=r"Dockerfile:2: .*clawgym-no-such-package-xyz.*sandbox='docker'"):
        replay_dockerfile(task / "Dockerfile", task, "/app")
    (task / "Dockerfile").write_text("FROM debian\nWORKDIR /app\nCOPY setup-env.sh /etc/\n")
    with pytest.raises(DockerfileNotReplayable, match="Dockerfile:3: .*outside the work dir"):
        replay_dockerfile(task / "Dockerfile", task, "/app")
    (task / "Dockerfile").write_text("FROM python:3.11\nENV X=1\nRUN pip install --no-cache-dir "
                                     "clawgym-no-such-dist==1.0\n")
    with pytest.raises(DockerfileNotReplayable,
                       match="Dockerfile:3: .*pip packages the host lacks \\(clawgym-no-such-dist==1.0\\)"):
        replay_dockerfile(task / "Dockerfile", task, "/app")
    (task / "Dockerfile").write_text("FROM debian\nRUN curl -fsSL https://example.com/x.sh | sh\n")
    with pytest.raises(DockerfileNotReplayable, match="Dockerfile:2: .*installs software"):
        replay_dockerfile(task / "Dockerfile", task, "/app")
    (task / "Dockerfile").write_text("FROM debian\nRUN apt-get install -y clawgym-no-such-package-xyz\n")
    with gym.make("clawgym/Terminal-v0", sandbox="bwrap", tasks=str(tmp_path)) as env:
        with pytest.raises(DockerfileNotReplayable, match="Dockerfile:2"):
            env.reset(seed=0)
    with gym.make("clawgym/Terminal-v0", sandbox="bwrap", tasks=str(HARBOR)) as env:
        with pytest.raises(DockerfileNotReplayable, match="Harbor tasks .* use sandbox='docker'"):
            env.reset(seed=0)


def test_docker_sandbox_without_an_engine_says_so(tmp_path):
    from clawgym.sandbox.base import SandboxUnavailable

    with gym.make("clawgym/Terminal-v0", tasks=str(TBENCH), sandbox="docker",
                   sandbox_options={"base_url": f"unix://{tmp_path}/no-docker.sock"}) as env:
        with pytest.raises(SandboxUnavailable, match="no Docker Engine answers .* to build .*Dockerfile"):
            env.reset(seed=0)


# ------------------------------------------------------------------------------------------ on Docker
@pytest.mark.slow
@pytest.mark.parametrize("layout", ["terminal_bench", "harbor"])
def test_every_fixture_oracle_scores_1_and_noop_0_on_docker(docker_engine, layout):
    env = gym.make("clawgym/Terminal-v0", tasks=str(FIXTURES / layout), sandbox="docker",
                   sandbox_options={"base_url": docker_engine.base_url})
    failures = []
    try:
        for task in env.unwrapped.task_set:
            oracle, info = run_episode(env, task.id, oracle=True)
            names = [c["name"] for c in info["tests"]["checks"]]
            noop, _ = run_episode(env, task.id, oracle=False)
            if oracle != 1.0 or noop != 0.0 or not any("test_outputs.py::" in n for n in names):
                failures.append((task.id, oracle, noop, info["tests"]))
    finally:
        env.close()
    assert not failures, failures


@pytest.mark.slow
def test_docker_build_cache_and_build_errors(docker_engine, tmp_path):
    from clawgym.sandbox.images import ImageBuildError, build_task_image

    client = docker_engine.client()
    task = TBENCH / "json-active-users"
    first = build_task_image(client, task / "Dockerfile", task)
    again = build_task_image(client, task / "Dockerfile", task)
    assert again.tag == first.tag and not again.built and again.workdir == "/app"
    # a GRPO group resetting one new task at once: one build, the others wait for it and find the image
    import uuid
    from concurrent.futures import ThreadPoolExecutor

    group = tmp_path / "group"
    group.mkdir()
    (group / "Dockerfile").write_text(f"FROM debian:bookworm-slim\nRUN echo {uuid.uuid4().hex} > /stamp\n")
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda _: build_task_image(client, group / "Dockerfile", group), range(3)))
    assert len({r.tag for r in results}) == 1 and sum(r.built for r in results) == 1
    context = tmp_path / "ctx"
    context.mkdir()
    (context / "Dockerfile").write_text("FROM registry.example.com/private/image:1\n")
    with pytest.raises(DockerfileError, match=r"Dockerfile:1: FROM registry.example.com/private/image:1: no registry"):
        build_task_image(client, context / "Dockerfile", context)
    # a base named through a global ARG, and a .dockerignore the context honours (as the docker CLI does)
    (context / "Dockerfile").write_text("ARG BASE=debian:bookworm-slim\nFROM ${BASE}\nWORKDIR /app\nCOPY . /app/\n")
    (context / ".dockerignore").write_text("# not for the image\nsecret.txt\n*.log\n!keep.log\n")
    for name in ("secret.txt", "debug.log", "keep.log", "data.txt"):
        (context / name).write_text(name)
    image = build_task_image(client, context / "Dockerfile", context)
    listing = client.containers.run(image.tag, ["ls", "-A", "/app"], remove=True, network_mode="none").decode().split()
    assert sorted(listing) == [".dockerignore", "Dockerfile", "data.txt", "keep.log"]
    (context / "Dockerfile").write_text("FROM debian:bookworm-slim\nRUN echo building; exit 3\n")
    with pytest.raises(ImageBuildError, match="returned a non-zero code: 3"):
        build_task_image(client, context / "Dockerfile", context)


@pytest.mark.slow
def test_tests_that_install_packages_get_the_network_on_docker(docker_engine, tmp_path):
    import shutil

    task = tmp_path / "top-words"
    shutil.copytree(TBENCH / "top-words", task)
    (task / "run-tests.sh").write_text(  # terminal-bench's usual runner installs its test deps at test time
        "pip install --no-cache-dir -q pytest-timeout==2.3.1\n"
        'python3 -m pytest --timeout 30 "$TEST_DIR/test_outputs.py" -rA -p no:cacheprovider\n')
    with gym.make("clawgym/Terminal-v0", tasks=str(tmp_path), sandbox="docker",
                   sandbox_options={"base_url": docker_engine.base_url}) as env:
        assert run_episode(env, "top-words", oracle=True)[0] == 1.0
        assert run_episode(env, "top-words", oracle=False)[0] == 0.0


@pytest.mark.slow
def test_a_task_naming_curl_in_a_comment_sees_only_loopback_on_docker(docker_engine, tmp_path):
    import shutil

    task = tmp_path / "top-words"
    shutil.copytree(TBENCH / "top-words", task)
    (task / "run-tests.sh").write_text(COMMENTED_RUNNER)
    with gym.make("clawgym/Terminal-v0", tasks=str(tmp_path), sandbox="docker",
                   sandbox_options={"base_url": docker_engine.base_url}) as env:
        env.reset(seed=0, options={"task_id": "top-words"})
        observation, *_ = env.step({"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function",
                                    "function": {"name": "bash", "arguments": '{"command": "cat /proc/net/dev"}'}}]})
        assert interfaces(observation[0]["content"].split("\n", 1)[1]) == ["lo"]
        _, reward, *_ = env.step(env.unwrapped.oracle_action())  # the tests still run without the network
        _, reward, *_ = env.step(env.unwrapped.oracle_action())
        assert reward == 1.0
