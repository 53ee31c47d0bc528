"""The clawgym command: envs table, play in a terminal (scripted stdin), argument errors; cli.py only dispatches."""

import argparse
import io
import subprocess
import sys

from clawgym.cli import build_parser, main
from clawgym.commands.play import run_play
from tests.test_core_env import Sum  # noqa: F401  (registers clawgym-test/Sum-v0)


def play(lines, *extra, env_id="clawgym-test/Sum-v0"):
    args = build_parser().parse_args(["play", env_id, *(extra or ("--task-id", "t2"))])
    out = io.StringIO()
    code = run_play(args, stdin=io.StringIO("".join(line + "\n" for line in lines)), out=out)
    return code, out.getvalue()


def test_play_tool_call_then_answer():
    code, text = play(['/call add {"a": 2, "b": 2}', "4", "y"])
    assert code == 0
    assert "--- USER\nWhat is 2 + 2?" in text
    assert "--- TOOL[add]\n4" in text
    assert "episode terminated: reward=1.0" in text and '"success": true' in text


def test_play_asks_before_plain_text_ends_the_episode():
    code, text = play(["4", "n", "/quit"])
    assert code == 0 and "the final answer and may end the episode. Send it? [y/N]" in text
    assert "not sent" in text and "episode terminated" not in text
    code, text = play(["4"])  # input ends at the question: nothing is sent
    assert code == 0 and "episode terminated" not in text
    code, text = play(["<tool_call>{\"name\": \"submit\", \"arguments\": {\"answer\": \"4\"}}</tool_call>"])
    assert "Send it?" not in text and "episode terminated: reward=1.0" in text  # a tool call is not asked about


def test_play_takes_bare_text_for_a_one_argument_tool():
    code, text = play(["/call submit 4"])  # submit(answer) has one argument
    assert "episode terminated: reward=1.0" in text
    code, text = play(["/call add 2 2", "/quit"])  # add(a, b) has two: JSON it must be
    assert "Error: arguments are not valid JSON" in text and "episode terminated" not in text


def test_play_terminal_bare_command_and_oracle_after_other_calls():
    lines = ["/call bash ls -A", "/call bash mkdir -p scratch && cd scratch", "/oracle", "/oracle"]
    code, text = play(lines, "--task-id", "files-create-nested", "--seed", "0", "--env-arg", "sandbox=bwrap",
                      env_id="clawgym/Terminal-v0")
    assert code == 0 and "--- TOOL[bash]\nexit code: 0\nname.txt" in text
    assert "Send it?" not in text
    assert "episode terminated: reward=1.0" in text


def test_play_oracle_says_when_it_cannot_take_over():
    lines = ["/call pwd", "/oracle", "/quit"]
    code, text = play(lines, "--task-id", "multi_turn_base_0", "--env-arg", "category=multi_turn_base",
                      env_id="clawgym/BFCL-v0")
    assert code == 0 and "oracle: the oracle plays a user turn from its start" in text
    assert "episode terminated" not in text


def test_play_reports_bad_input_and_goes_on():
    code, text = play(['/call add {"a": 2', "/tools", "/oracle"])
    assert "Error: arguments are not valid JSON" in text
    assert '"name": "add"' in text  # /tools printed the schemas
    assert "episode terminated: reward=1.0" in text


def test_play_quit_and_eof():
    assert play(["/quit"])[0] == 0
    assert play([])[0] == 0


def test_env_args_must_be_key_value(capsys):
    assert main(["play", "clawgym-test/Sum-v0", "--env-arg", "oops"]) == 2
    assert "key=value" in capsys.readouterr().err


def test_envs_command_lists_every_registered_id():
    result = subprocess.run([sys.executable, "-m", "clawgym.cli", "envs"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    import clawgym
    for env_id in clawgym.ENVS:
        assert env_id in result.stdout


def test_every_command_body_is_in_commands():
    """cli.py parses and dispatches; each subcommand's body is a function of a clawgym.commands module."""
    def bodies(parser):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    fn = sub.get_default("fn")
                    yield name, fn.__module__ if fn else None
                    yield from bodies(sub)

    found = dict(bodies(build_parser()))
    assert set(found) == {"envs", "play", "rollout", "eval", "serve-policy", "serve", "train", "launchers", "models",
                          "fetch", "gguf", "demo"}
    assert {name: module for name, module in found.items() if not module.startswith("clawgym.commands.")} == {}
