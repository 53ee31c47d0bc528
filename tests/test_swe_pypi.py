"""SWE-v0 tasks from real PyPI projects (pinned sdists unpacked by `make swe-projects`): pinning,
the committed task set's shape, generator determinism, and a sample of tasks run for real (no-op 0,
gold 1), also after export as a SWE-bench instance through the SWE-bench loader and a git mirror.
`benchmarks/swe_pypi_tasks.py` validates every task; CI runs the sample below."""

import json
import sys
import tarfile

import gymnasium as gym
import pytest

import clawgym  # noqa: F401  (registers the ids)
from clawgym.envs.swe import pypi
from clawgym.envs.swe.env import SWEEnv
from clawgym.envs.swe.export import export_swebench, repo_config
from clawgym.envs.swe.loader import bundled_tasks, load_swebench, pypi_base_files, pypi_tasks
from tests.scripts import ROOT, load_script

TASKS = list(pypi_tasks())
SAMPLE = sorted({task.data["repo"]: task.id for task in reversed(TASKS)}.values())  # each project's first task
SUBMIT = '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'


def load_generator():
    return load_script("scripts/gen_swe_pypi_tasks.py")  # the script puts scripts/ on sys.path itself


def test_a_tampered_sdist_is_refused(tmp_path):
    spec = pypi.PROJECTS[0]
    fake = tmp_path / spec.sdist
    with tarfile.open(fake, "w:gz") as archive:
        archive.add(__file__, arcname=f"{spec.key}/setup.py")
    with pytest.raises(ValueError, match="does not match the pinned"):
        pypi.unpack(spec, fake, tmp_path)
    assert not (tmp_path / spec.key).exists()


def test_missing_projects_name_the_make_target(tmp_path, monkeypatch):
    monkeypatch.setenv(pypi.CACHE_ENV, str(tmp_path))
    with pytest.raises(FileNotFoundError, match="make swe-projects"):
        pypi.project_root("idna-3.10")
    with pytest.raises(KeyError, match="unknown SWE project"):
        pypi.project("leftpad-1.0")


def test_task_set_shape():
    assert len(TASKS) >= 200
    projects = {task.data["repo"] for task in TASKS}
    assert projects == {spec.key for spec in pypi.PROJECTS} and len(projects) >= 5
    assert len({task.data["mutation"]["operator"] for task in TASKS}) >= 6
    assert {task.split for task in TASKS} == {"train", "test"}
    for task in TASKS:
        f2p, p2p = task.data["FAIL_TO_PASS"], task.data["PASS_TO_PASS"]
        assert f2p and p2p and not set(f2p) & set(p2p)
        assert task.data["mutation"]["before"] in task.data["patch"] and "fails with" in task.prompt
    # The agent's tree: the sdist without its tests, differing from it only by the bug.
    task = TASKS[0]
    visible, hidden = pypi.split_files(task.data["repo"])
    base = pypi_base_files(task)
    assert hidden and not any(path.startswith("tests/") for path in base)
    assert [path for path in base if base[path] != visible[path]] == [task.data["mutation"]["file"]]


@pytest.mark.slow
def test_generation_is_deterministic_and_matches_the_committed_tasks():
    gen = load_generator()
    fresh = gen.generate(20240601, 2, ["wcwidth"], sys.executable, 120.0, 0.2, log=lambda *_: None)
    committed = [json.loads(line)
                 for line in (ROOT / "clawgym/envs/swe/data/pypi_tasks.jsonl").read_text().splitlines()]
    committed = [record for record in committed if record["data"]["repo"].startswith("wcwidth-")][:2]
    assert [json.dumps(r, sort_keys=True) for r in fresh] == [json.dumps(r, sort_keys=True) for r in committed]


@pytest.fixture(scope="module")
def env():
    environment = gym.make("clawgym/SWE-v0", tasks="pypi")
    yield environment.unwrapped
    environment.close()


def run(env, task_id, oracle):
    env.reset(options={"task_id": task_id})
    if oracle:
        env.step(env.oracle_action())
    _, reward, terminated, _, info = env.step(SUBMIT)
    assert terminated and info["eval_error"] is None, info["eval_error"]
    return reward, info


@pytest.mark.slow
@pytest.mark.parametrize("task_id", SAMPLE)
def test_base_fails_gold_passes(env, task_id):
    task = env.task_set.by_id(task_id)
    reward, info = run(env, task_id, oracle=False)
    report = info["test_report"]
    assert reward == 0.0 and info["diff"] == ""
    assert {t for t, s in report["FAIL_TO_PASS"].items() if s != "passed"} == set(task.data["FAIL_TO_PASS"])
    assert all(s == "passed" for s in report["PASS_TO_PASS"].values())
    reward, info = run(env, task_id, oracle=True)
    assert reward == 1.0 and info["success"]


@pytest.mark.slow
def test_swebench_export_scores_the_same_through_the_swebench_loader(env, tmp_path):
    task = env.task_set.by_id(SAMPLE[0])
    record = export_swebench(task, tmp_path / "mirrors")
    assert record == export_swebench(task, tmp_path / "mirrors")  # fixed dates: the same commits again
    path = tmp_path / "instances.jsonl"
    path.write_text(json.dumps(record) + "\n")
    swebench = SWEEnv(load_swebench(path), mirror_dir=tmp_path / "mirrors", repo_config=repo_config(record))
    try:
        assert [t.id for t in swebench.task_set] == [record["instance_id"]]
        for oracle in (False, True):
            ours, ours_info = run(env, task.id, oracle)
            theirs, theirs_info = run(swebench, record["instance_id"], oracle)
            assert ours == theirs == float(oracle)
            assert theirs_info["test_report"]["FAIL_TO_PASS"] == ours_info["test_report"]["FAIL_TO_PASS"]
    finally:
        swebench.close()
    with pytest.raises(ValueError, match="not a real-project task"):
        export_swebench(next(iter(bundled_tasks())), tmp_path / "mirrors")
