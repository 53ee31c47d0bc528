"""`clawgym rollout` against a real OpenAI-compatible server (clawgym's own, over a scripted model)."""

import json

import pytest

from clawgym.cli import main
from clawgym.core.messages import text_of
from clawgym.core.tasks import TaskSet
from clawgym.inference.scripted import ScriptedPolicy
from clawgym.inference.server import BackgroundServer, build_app

TASKS = {t.prompt: t for t in TaskSet.from_bundled("clawgym.envs.toolcall", "tasks.jsonl")}


def solver(messages):
    """A 'model' that knows the bundled tasks: run the oracle program, then submit what it printed."""
    task = next(t for prompt, t in TASKS.items() if prompt in text_of(messages[1]))
    if messages[-1]["role"] == "tool":
        return ('<tool_call>'
                f'{json.dumps({"name": "submit", "arguments": {"answer": text_of(messages[-1]).strip()}})}</tool_call>')
    return f'<tool_call>{json.dumps({"name": "python", "arguments": {"code": task.data["solution_code"]}})}</tool_call>'


@pytest.fixture(scope="module")
def server_url():
    with BackgroundServer(build_app(ScriptedPolicy(solver), api_key="k")) as url:
        yield url + "/v1"


def test_rollout_with_openai_policy_writes_judged_turns(server_url, tmp_path, capsys):
    out = tmp_path / "turns.jsonl"
    code = main(["rollout", "clawgym/ToolCall-v0", "--policy", "openai", "--base-url", server_url, "--api-key", "k",
                 "--model", "m", "-n", "4", "--group-size", "2", "--split", "test", "--judge",
                 "rules", "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 0 and "success rate: 1.000 over 4 episodes (0 failed)" in printed
    turns = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(turns) == 8  # python, then submit, in each episode
    final = [t for t in turns if t["terminated"]]
    assert len(final) == 4 and all(t["judge"]["rules"]["score"] == 1.0 for t in final)  # the answer rule agreed
    assert any(t["next_state"][0]["role"] == "tool" for t in turns)
    assert len({t["group_id"] for t in turns}) == 2


def test_rollout_scripted_baseline_and_bad_arguments(tmp_path, capsys):
    out = tmp_path / "s.jsonl"
    assert main(["rollout", "clawgym/ToolCall-v0", "--policy", "scripted", "-n", "2", "--out", str(out)]) == 0
    assert "success rate: 0.000 over 2 episodes" in capsys.readouterr().out
    assert main(["rollout", "clawgym/ToolCall-v0", "--policy", "openai", "-n", "1"]) == 2
    assert "needs --base-url and --model" in capsys.readouterr().err
    assert main(["rollout", "clawgym/ToolCall-v0", "--policy", "nope", "-n", "1"]) == 2
    assert "unknown --policy" in capsys.readouterr().err


def test_eval_reports_preference_score_per_persona(capsys):
    """The chat evaluation: a policy that writes markdown lists pleases the TA less than the teacher."""
    def markdown_writer(messages):
        return "**Result**\n1. The answer is 7\n2. Great job!"

    from clawgym.rl.evaluate import evaluate

    rows = evaluate("clawgym/OpenClawChat-v0", ScriptedPolicy(markdown_writer), split="test", by="persona",
                    env_kwargs={"max_turns": 1})
    from clawgym.envs.openclaw_chat.personas import bundled_tasks

    assert rows["all"]["episodes"] == sum(t.split == "test" for t in bundled_tasks()) and rows["all"]["errors"] == 0
    assert set(rows) == {"all", "persona=student", "persona=teacher", "persona=ta"}
    # the student wants no bold and no lists: only "no LaTeX" (and sometimes the answer) pass
    assert 0.25 <= rows["persona=student"]["mean_reward"] <= 0.5 and rows["persona=student"]["success_rate"] == 0.0
    assert rows["persona=teacher"]["mean_reward"] >= 0.5  # friendly and short, just not named
    assert rows["persona=teacher"]["mean_reward"] > rows["persona=student"]["mean_reward"]
    # the checks one by one: the teacher's comment is friendly and short but never names the student
    teacher = rows["persona=teacher"]["checks"]
    assert teacher["friendly"] == teacher["short"] == 1.0 and teacher["names_student"] == 0.0
    assert rows["persona=student"]["checks"]["no_lists"] == 0.0 and rows["persona=student"]["checks"]["no_latex"] == 1.0
