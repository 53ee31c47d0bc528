"""The persistent python interpreter behind ToolCall-v0's ``python`` tool, run inside the sandbox.

Every test drives a real interpreter process through the real client: persistence, REPL values,
two-stage timeouts, memory and output caps, crash recovery and (with the bwrap sandbox) no network.
"""

from __future__ import annotations

import time

import pytest

from clawgym.envs.toolcall.env import SANDBOX_WORKDIR
from clawgym.envs.toolcall.interpreter import InterpreterError, PythonInterpreter, describe
from clawgym.sandbox import make_sandbox
from clawgym.sandbox.base import SandboxConfig

TIMEOUT = 1.0
GRACE = 1.0


@pytest.fixture
def sandbox():
    box = make_sandbox("auto", SandboxConfig(workdir=SANDBOX_WORKDIR, memory_mb=1536,
                                             env={"OPENBLAS_NUM_THREADS": "1"}))
    yield box
    box.close()


@pytest.fixture
def interp(sandbox):
    interpreter = PythonInterpreter(sandbox, timeout_s=TIMEOUT, grace_s=GRACE, memory_mb=512, output_limit=2000)
    yield interpreter
    interpreter.close()


def test_state_persists_and_last_expression_is_returned(interp):
    first = interp.execute("x = 41\ndef double(v):\n    return 2 * v\nprint('set')")
    assert first.stdout == "set\n" and first.value is None and not first.failed
    second = interp.execute("import math\nx += 1\ndouble(x)")
    assert second.value == "84"
    assert interp.execute("math.gcd(x, 35)").value == "7"
    assert interp.execute("_ + 1").value == "8"  # the REPL's last value


def test_output_of_child_processes_and_raw_fds_is_captured(interp):
    outcome = interp.execute("import os, subprocess, sys\nprint('a')\nos.write(1, b'b\\n')\n"
                             "subprocess.run(['echo', 'c'])\nprint('d', file=sys.stderr)")
    assert outcome.stdout == "a\nb\nc\n"
    assert outcome.stderr == "d\n"


def test_errors_are_tracebacks_and_the_interpreter_goes_on(interp):
    syntax = interp.execute("def f(:")
    assert "SyntaxError" in syntax.error and syntax.failed
    runtime = interp.execute("y = 1\n1 / 0")
    assert "ZeroDivisionError" in runtime.error and "<cell" in runtime.error and "python_driver" not in runtime.error
    assert "EOFError" in interp.execute("input()").error  # no stdin to hang on
    assert "SystemExit" in interp.execute("import sys; sys.exit(3)").error
    assert interp.execute("y").value == "1"


def timed(interp, code):
    """Run ``code``; return the outcome and the seconds it took."""
    start = time.monotonic()
    outcome = interp.execute(code)
    return outcome, time.monotonic() - start


def test_pure_python_infinite_loop_is_interrupted_and_variables_survive(interp):
    interp.execute("counter = 0")
    outcome, elapsed = timed(interp, "while True:\n    counter += 1")
    assert outcome.interrupted and not outcome.state_lost
    assert TIMEOUT * 0.9 < elapsed < TIMEOUT + GRACE
    assert "interrupted" in describe(outcome, TIMEOUT)
    assert int(interp.execute("counter").value) > 0
    # even a loop that swallows the exception once is interrupted again
    assert interp.execute("while True:\n    try:\n        pass\n    except BaseException:\n        pass").timed_out
    assert interp.execute("print(1 + 1)").stdout == "2\n"


def test_code_ignoring_the_interrupt_is_killed_and_the_interpreter_restarts(interp):
    interp.execute("kept = 'before'")
    outcome, elapsed = timed(interp,
                             "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True:\n    pass")
    assert outcome.killed and outcome.state_lost and not outcome.interrupted
    assert elapsed < TIMEOUT + GRACE + 2.0
    assert "all variables and imports were lost" in describe(outcome, TIMEOUT)
    after = interp.execute("print(1 + 1)")
    assert after.stdout == "2\n" and not after.failed
    assert "NameError" in interp.execute("kept").error
    assert interp.restarts == 1


def test_interpreter_dying_by_itself_is_restarted(interp):
    interp.execute("z = 1")
    outcome = interp.execute("import os\nos.kill(os.getpid(), 9)")
    assert outcome.crashed and "SIGKILL" in outcome.crashed and outcome.state_lost
    assert interp.execute("2 + 2").value == "4"


def test_memory_bomb_becomes_a_memory_error(interp):
    outcome = interp.execute("big = bytearray(8 * 1024 ** 3)")
    assert "MemoryError" in outcome.error and not outcome.state_lost
    outcome = interp.execute("hog = []\nwhile True:\n    hog.append(bytearray(10 ** 7))", timeout=10)
    assert "MemoryError" in (outcome.error or "") or outcome.state_lost
    assert interp.execute("del hog\nprint('alive')").stdout.strip().endswith("alive") or interp.restarts


def test_huge_outputs_are_capped_with_a_marker(interp):
    start = time.monotonic()
    outcome = interp.execute("print('x' * 10 ** 7)")
    assert len(outcome.stdout) <= 2000 and outcome.stdout_dropped > 9_000_000
    assert "[stdout truncated:" in describe(outcome, TIMEOUT)
    many = interp.execute("for i in range(200000):\n    print(i)")
    assert many.stdout.startswith("0\n1\n2\n") and many.stdout_dropped > 0
    raw = interp.execute("import os\nos.write(1, b'y' * 5_000_000)")
    assert raw.stdout == "y" * 2000 and raw.stdout_dropped == 5_000_000 - 2000
    value = interp.execute("'z' * 100000")
    assert "repr truncated" in value.value and len(value.value) < 2100
    assert time.monotonic() - start < 10
    assert interp.execute("print('small')").stdout == "small\n"  # the capture is reset per call


def test_network_is_blocked(interp, tcp_server):
    outcome = interp.execute(
        "import socket\ns = socket.socket()\ns.settimeout(2)\n"
        f"try:\n    s.connect(('127.0.0.1', {tcp_server.port}))\n    print('CONNECTED')\n"
        "except OSError as exc:\n    print('BLOCKED', type(exc).__name__)",
        timeout=5,
    )
    assert "BLOCKED" in outcome.stdout and "CONNECTED" not in outcome.stdout
    assert tcp_server.wait_received(timeout_s=3.0) == []  # no connection reached the host


def test_startup_failure_is_a_clear_error(sandbox):
    interpreter = PythonInterpreter(sandbox, python="/nonexistent/python3", startup_timeout_s=10)
    with pytest.raises(InterpreterError, match="did not start.*nonexistent"):
        interpreter.execute("1")
    interpreter.close()


def test_close_kills_the_process_and_is_idempotent(interp):
    interp.execute("1")
    proc = interp.proc
    assert proc is not None and proc.poll() is None
    interp.close()
    assert proc.poll() is not None
    interp.close()


def test_huge_exception_messages_are_capped(interp):
    outcome = interp.execute("raise ValueError('v' * 10 ** 6)")
    assert "traceback truncated" in outcome.error and len(outcome.error) < 2200 and not outcome.state_lost
    assert interp.execute("print('fine')").stdout == "fine\n"


def test_garbage_on_the_protocol_channel_restarts_the_interpreter(interp):
    outcome = interp.execute("import os\nfor fd in range(3, 64):\n    try:\n        os.write(fd, b'[1, 2]\\n')\n"
                             "    except OSError:\n        pass")
    assert outcome.crashed and "unreadable" in outcome.crashed and outcome.state_lost
    assert interp.execute("40 + 2").value == "42"


def test_out_of_memory_kill_by_the_sandbox_restarts_the_interpreter():
    box = make_sandbox("auto", SandboxConfig(workdir=SANDBOX_WORKDIR, memory_mb=200))
    if not box.limits_enforced:
        box.close()
        pytest.skip(f"cgroup limits are not enforced here: {box.cgroup_error}")
    interpreter = PythonInterpreter(box, timeout_s=20, grace_s=GRACE, memory_mb=None)  # no RLIMIT_AS: the cgroup acts
    try:
        interpreter.execute("state = 1")
        outcome = interpreter.execute("hog = []\nwhile True:\n    hog.append(b'a' * 10 ** 7)")
        assert outcome.crashed and "out of memory" in outcome.crashed and outcome.state_lost
        assert "all variables and imports were lost" in describe(outcome, 20)
        assert interpreter.execute("print(7 * 6)").stdout == "42\n"
        assert "NameError" in interpreter.execute("state").error
    finally:
        interpreter.close()
        box.close()
