"""The clawgym command: envs table, play in a terminal (scripted stdin), argument errors."""

import io
import subprocess
import sys

import pytest

from clawgym.cli import build_parser, cmd_play, main
from tests.test_core_env import Sum  # noqa: F401  (registers clawgym-test/Sum-v0)


def play(lines, *extra):
    args = build_parser().parse_args(["play", "clawgym-test/Sum-v0", "--task-id", "t2", *extra])
    out = io.StringIO()
    code = cmd_play(args, stdin=io.StringIO("".join(line + "\n" for line in lines)), out=out)
    return code, out.getvalue()


def test_play_tool_call_then_answer():
    code, text = play(['/call add {"a": 2, "b": 2}', "4"])
    assert code == 0
    assert "--- USER\nWhat is 2 + 2?" in text
    assert "--- TOOL[add]\n4" in text
    assert "episode terminated: reward=1.0" in text and '"success": true' in text


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
