"""Bad CLI and config input: one line on stderr naming the problem, exit code 2, never a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from clawgym.cli import main


@pytest.fixture
def configs(tmp_path):
    (tmp_path / "bad.yaml").write_text("method: [grpo\n")
    (tmp_path / "unknown_key.yaml").write_text("loop: {steps: 2, stepz: 3}\n")
    (tmp_path / "wrong_type.yaml").write_text("loop: {steps: many}\n")
    (tmp_path / "bad_method.yaml").write_text("method: ppo\n")
    return tmp_path


def bad_inputs(d):
    return {
        "unknown env id (play)": (["play", "clawgym/Nope-v0"], "unknown environment 'clawgym/Nope-v0'"),
        "unknown env id (rollout)": (["rollout", "clawgym/Nope-v0"], "unknown environment"),
        "unknown env id (eval)": (["eval", "clawgym/Nope-v0", "--policy", "scripted"], "unknown environment"),
        "judge 'rule'": (["rollout", "clawgym/ToolCall-v0", "--judge", "rule", "-n", "1"], "unknown judge 'rule'"),
        "unknown policy": (["rollout", "clawgym/ToolCall-v0", "--policy", "gpt"], "unknown --policy 'gpt'"),
        "unknown model": (["eval", "clawgym/ToolCall-v0", "--model", "no-such-model"], "unknown model 'no-such-model'"),
        "openai without url": (["eval", "clawgym/ToolCall-v0", "--policy", "openai"], "needs --base-url"),
        "missing config (train)": (["train", str(d / "missing.yaml")], "not a file"),
        "unknown launcher (train)": (["train", "nosuch"], "not a bundled launcher"),
        "missing config (serve)": (["serve", "--config", str(d / "missing.yaml")], "not a file"),
        "bad YAML": (["train", str(d / "bad.yaml")], "bad.yaml"),
        "unknown key": (["train", str(d / "unknown_key.yaml")], "stepz"),
        "unknown --set key": (["train", "demo", "--set", "loop.nope=1"], "nope"),
        "wrong type": (["train", str(d / "wrong_type.yaml")], "loop.steps"),
        "wrong --set type": (["train", "demo", "--set", "trainer.lr=fast"], "trainer.lr"),
        "bad method": (["train", str(d / "bad_method.yaml")], "method"),
        "bad serve key": (["serve", "--config", "chat", "--set", "serve.nope=1"], "nope"),
        "env value refused (eval)": (["eval", "clawgym/BFCL-v0", "--env-arg", "category=simple_python,multiple"],
                                     """--env-arg 'category=["simple_python","multiple"]'"""),
        "env value refused (rollout)": (["rollout", "clawgym/BFCL-v0", "--env-arg", "per_category=0"], "per_category"),
        "env keyword refused (play)": (["play", "clawgym/ToolCall-v0", "--env-arg", "colour=red"], "colour"),
        "missing tasks dir (play)": (["play", "clawgym/Terminal-v0", "--env-arg", f"tasks={d / 'no-such-tasks'}"],
                                     "no-such-tasks"),
    }


@pytest.mark.parametrize("case", list(bad_inputs(__import__("pathlib").Path("."))))
def test_bad_input_is_one_line_and_exit_code_2(case, configs, capsys):
    argv, expected = bad_inputs(configs)[case]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if not line.startswith(("INFO ", "WARNING ", "DEBUG "))]
    assert len(lines) == 1, err
    assert lines[0].startswith(f"clawgym {argv[0]}: error: ")
    assert expected in lines[0]


def test_bad_input_from_the_real_command_line_has_no_traceback():
    result = subprocess.run([sys.executable, "-m", "clawgym.cli", "train", "no/such/config.yaml"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == ["clawgym train: error: no config 'no/such/config.yaml': not a file, "
                                                  "and not a bundled launcher (chat, demo, gui, "
                                                  "swe, terminal, toolcall)"]


def test_a_refused_env_arg_from_the_real_command_line_says_how_to_pass_a_list():
    result = subprocess.run([sys.executable, "-m", "clawgym.cli", "eval", "clawgym/BFCL-v0", "--env-arg",
                             "category=simple_python,multiple"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("clawgym eval: error: clawgym/BFCL-v0 refused "
                           "category='simple_python,multiple' split='test': "
                           "unknown BFCL category 'simple_python,multiple'")
    assert line.endswith("""(a list is written as JSON: --env-arg 'category=["simple_python","multiple"]')""")


def test_launchers_are_listed_and_run_by_name_from_any_directory(tmp_path, capsys):
    assert main(["launchers"]) == 0
    out = capsys.readouterr().out
    for name in ("chat", "demo", "toolcall", "terminal", "swe", "gui"):
        assert f"\n{name} " in "\n" + out
    from clawgym import launchers

    assert launchers.resolve("chat") == launchers.resolve("chat.yaml") == launchers.resolve("launchers/chat.yaml")
    assert launchers.resolve("chat").parent == launchers.DIRECTORY
    own = tmp_path / "chat.yaml"  # a user's own file wins over the bundled one of the same name
    own.write_text("method: grpo\n")
    assert launchers.resolve(own) == own


def test_demo_passes_its_flags_and_keeps_an_earlier_run(tmp_path, capsys):
    from clawgym.demo import run_directory

    first = run_directory(tmp_path, 3, overwrite=False)
    (first / "marker").write_text("earlier run")
    second = run_directory(tmp_path, 3, overwrite=False)
    assert second == tmp_path / "seed3-2" and (first / "marker").exists()
    assert "kept" in capsys.readouterr().out
    third = run_directory(tmp_path, 3, overwrite=True)
    assert third == first and not (first / "marker").exists()
    # the CLI hands its flags to the demo (argparse of the demo rejects an unknown one with exit code 2)
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--no-such-flag"])
    assert exit_info.value.code == 2
    assert "--no-such-flag" in capsys.readouterr().err


def test_serve_check_validates_the_serve_section_without_starting(capsys):
    assert main(["serve", "--config", "chat", "--check"]) == 0
    out = capsys.readouterr().out
    assert "config OK" in out and "adapters shared" in out
    assert main(["serve", "--config", "chat", "--check", "--set", "serve.adapters=everyone"]) == 2
    assert "serve.adapters must be one of" in capsys.readouterr().err


def test_the_chat_launcher_serves_with_hindsight_groups_and_says_how_to_turn_them_off(capsys):
    from clawgym import launchers
    from clawgym.rl.launch import load_config

    assert load_config(launchers.resolve("chat"), serving=True).serve.hindsight_k == 4
    for where in (["serve.adapters=per_user"], ["gpu.enabled=true", "judge.type=prm,hint"], ["method=opd"]):
        sets = [arg for item in where for arg in ("--set", item)]
        assert main(["serve", "--config", "chat", "--check", *sets]) == 2
        assert "serve.hindsight_k: 0" in capsys.readouterr().err
    assert main(["serve", "--config", "chat", "--check", "--set", "serve.adapters=per_user",
                 "--set", "serve.hindsight_k=0", "--set", "judge.model=qwen2.5-coder-0.5b"]) == 0


def test_serve_check_names_every_broken_rule_in_one_error(capsys):
    """Per-user adapters on the chat launcher break two rules (its prob judges read the shared base, its hindsight
    groups need shared adapters): one --check names both keys, instead of one per try."""
    assert main(["serve", "--config", "chat", "--check", "--set", "serve.adapters=per_user"]) == 2
    err = capsys.readouterr().err
    assert "judge.model: qwen2.5-coder-0.5b" in err and "serve.hindsight_k: 0" in err
