"""Terminal-v0: the agent works in a sandboxed bash shell; the task's hidden check script decides.

One episode = one fresh sandbox (bubblewrap by default, Docker on request) with a persistent shell
and a private work dir. The agent calls ``bash(command)`` (cwd and variables persist between calls)
and sees ``exit code: N`` plus the output, clipped to ``max_output_chars`` (head and tail kept) with a
note when a command timed out or its output was cut. A message without a tool call, or ``submit``,
is the final answer and ends the episode; ``max_turns`` and ``time_limit_s`` truncate it.

Scoring (at termination *and* at truncation, since the agent may have finished the work before it
ran out of turns): the task's check script runs in a fresh process in the same sandbox, never in
the agent's shell (so aliases, functions or PATH changes the agent left behind cannot fool it), and
it is shipped inside that command at scoring time, so it is never on disk while the agent acts.

Reward is binary: 1.0 only when every named check passes, else 0.0. Partial credit would pay an
agent for the easy half of a task (and for checks that pass in the untouched start state);
terminal-bench and verifiable-reward RL use all-or-nothing for the same reason. The pass fraction
is still reported in ``info["tests"]["pass_fraction"]``, and ``partial_credit=True`` makes it the
reward for users who want a shaped signal.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shlex
import subprocess
import time
from typing import TYPE_CHECKING, Any

from clawgym.core import AgentEnv, EpisodeOptions, SubmitTool, Task, TaskSet, Tool, ToolError, ToolResult
from clawgym.core.tools import arguments_schema, prop
from clawgym.envs.terminal.image import prepare
from clawgym.envs.terminal.scoring import CheckReport, check_script, parse_check_output, parse_hidden, setup_command
from clawgym.envs.terminal.taskset import load_terminal_tasks
from clawgym.sandbox.base import ExecResult, SandboxConfig

if TYPE_CHECKING:
    from typing_extensions import Unpack

logger = logging.getLogger(__name__)

SYSTEM_PROMPT = """You are an expert Linux user working in a bash shell inside a sandbox.
Solve the task by calling the `bash` tool; each call runs one command (or a multi-line script) in the
same persistent shell, starting in the work directory {workdir}. Each result shows the exit code and
the output. There is no network access. Work only inside {workdir}.
When the task is done, {finish}."""

ORACLE_CALL_ID = "oracle"  # the id of the oracle's solution call, so it knows its own result
ORACLE_LOOK_ID = "oracle_look"  # the id of its first look at the work dir (``oracle_looks_first``)
# what a shell user types first in an unknown directory: the files there and a few levels below, with sizes
LOOK_COMMAND = "ls -la && find . -mindepth 2 -maxdepth 3 -not -path './.git/*' | sort | head -40"

# Identity and pager settings every episode's shell gets, so `git commit` and `git log` just work.
DEFAULT_ENV = {
    "GIT_AUTHOR_NAME": "Agent", "GIT_AUTHOR_EMAIL": "agent@example.com",
    "GIT_COMMITTER_NAME": "Agent", "GIT_COMMITTER_EMAIL": "agent@example.com",
    "PAGER": "cat", "GIT_PAGER": "cat", "TERM": "dumb", "LC_ALL": "C.UTF-8",
}


class BashTool(Tool):
    """``bash(command)``: run a command in the episode's persistent shell."""

    name = "bash"
    description = (
        "Run a bash command (or a multi-line script) in a persistent shell: the working directory and "
        "exported variables carry over between calls. Returns the exit code and the combined output."
    )
    parameters = arguments_schema(["command"], command=prop("string", "The bash command to run."))

    def __init__(self, env: "TerminalEnv") -> None:
        self.env = env

    def run(self, command: str) -> ToolResult:
        if not command.strip():
            raise ToolError("bash: the command is empty")
        return self.env.execute(command)


class TerminalEnv(AgentEnv):
    """Shell tasks in a sandbox, scored by hidden check scripts. See the module docstring."""

    default_max_turns = 30

    def __init__(
        self,
        tasks: Any = None,
        *,
        sandbox: str = "auto",
        sandbox_config: SandboxConfig | dict[str, Any] | None = None,
        sandbox_options: dict[str, Any] | None = None,
        command_timeout_s: float = 30.0,
        check_timeout_s: float = 120.0,
        max_output_chars: int = 10_000,
        submit_tool: bool = True,
        partial_credit: bool = False,
        oracle_looks_first: bool = False,
        **episode: Unpack[EpisodeOptions],
    ) -> None:
        if command_timeout_s <= 0 or check_timeout_s <= 0:
            raise ValueError("command_timeout_s and check_timeout_s must be positive")
        if max_output_chars < 200:
            raise ValueError("max_output_chars must be at least 200")
        self.sandbox_kind = sandbox
        if isinstance(sandbox_config, dict):
            sandbox_config = SandboxConfig(**sandbox_config)
        self.base_config = sandbox_config or SandboxConfig()
        self.sandbox_options = dict(sandbox_options or {})  # backend extras, e.g. docker's base_url
        self.command_timeout_s = float(command_timeout_s)
        self.check_timeout_s = float(check_timeout_s)
        self.max_output_chars = int(max_output_chars)
        self.submit_tool = submit_tool
        self.partial_credit = partial_credit
        self.oracle_looks_first = oracle_looks_first
        self.sandbox: Any = None
        self.hidden: dict[str, str] = {}
        self.setup_files: dict[str, str] = {}
        self.setup_script = ""
        episode.setdefault("time_limit_s", 900.0)  # a shell task that never ends would hold its sandbox forever
        self.default_time_limit_s = episode["time_limit_s"]
        super().__init__(tasks, **episode)

    # ---------------------------------------------------------------- AgentEnv hooks
    def load_tasks(self, source: Any) -> TaskSet:
        return load_terminal_tasks(source)

    def make_tools(self) -> list[Tool]:
        tools: list[Tool] = [BashTool(self)]
        if self.submit_tool:
            tools.append(SubmitTool())
        return tools

    def system_prompt(self, task: Task) -> str:
        finish = ("call `submit` (or reply without a tool call)" if self.submit_tool
                  else "reply without a tool call")
        prompt = SYSTEM_PROMPT.format(workdir=self._workdir(task), finish=finish)
        if self._config(task).network:
            prompt = prompt.replace("There is no network access. ", "")
        return prompt

    def setup(self, task: Task) -> list:
        from clawgym.sandbox import make_sandbox  # the backends load only when an episode starts

        data = task.data
        self.time_limit_s = data.get("time_limit_s") or self.default_time_limit_s
        # a task with a Dockerfile: its image (docker) or its replayed steps (bwrap), see image.py
        config, files, setup = prepare(data, self.sandbox_kind, self._config(task), self.sandbox_options)
        self.sandbox = make_sandbox(self.sandbox_kind, config, **self.sandbox_options)
        result = self.sandbox.run(
            setup_command(self._workdir(task), files, setup, self.episode_seed),
            timeout=max(self.check_timeout_s, 30.0),
        )
        if result.exit_code != 0 or result.timed_out:
            raise RuntimeError(f"setup of terminal task {task.id!r} failed (exit {result.exit_code}): "
                               f"{result.output[-2000:]}")
        self.hidden = parse_hidden(result.stdout)
        self.setup_files, self.setup_script = files, setup
        self._started_at = time.monotonic()  # the agent's clock starts when it can act, not before an image build
        return []

    def score(self, answer: str | None) -> tuple[float, dict[str, Any]]:
        report = self.run_check(answer or "")
        reward = report.pass_fraction if self.partial_credit else float(report.all_passed)
        return reward, {"success": report.all_passed, "tests": report.to_info()}

    def oracle_action(self) -> Any:
        """The task's solution script in one bash call, then its output as the final answer; with
        ``oracle_looks_first``, a look at the work dir (:data:`LOOK_COMMAND`) before it, as at the start of
        an episode nothing has been run yet (the warm start's demonstrations then show a call whose result
        is read before acting, not only one command and the answer).

        It works from any point of an episode: unless the last step was its own solution run, it runs the
        solution (again) from the work dir on the state the episode is in, so ``clawgym play`` can hand
        over after a few calls of the player's.
        """
        assert self.task is not None
        last = self.messages[-1]
        if self.oracle_looks_first and not any(m.get("role") == "tool" for m in self.messages):
            command = f"cd {shlex.quote(self._workdir(self.task))}\n{LOOK_COMMAND}"
            return {"role": "assistant", "content": None, "tool_calls": [{"id": ORACLE_LOOK_ID, "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps({"command": command})}}]}
        if last.get("role") != "tool" or last.get("tool_call_id") != ORACLE_CALL_ID:
            command = f"cd {shlex.quote(self._workdir(self.task))}\n{self.task.data['solution']}"
            return {"role": "assistant", "content": None, "tool_calls": [{"id": ORACLE_CALL_ID, "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps({"command": command})}}]}
        output = last.get("content") or ""
        return output.split("\n", 1)[1].strip() if output.startswith("exit code:") and "\n" in output else "done"

    def teardown(self) -> None:
        sandbox, self.sandbox = self.sandbox, None
        if sandbox is not None:
            try:
                sandbox.close()
            except Exception:  # closing must never mask the error that brought us here
                logger.exception("closing the sandbox failed")

    # ---------------------------------------------------------------- the agent's shell
    def execute(self, command: str) -> ToolResult:
        """Run one agent command with the per-command timeout (never past the episode's time budget)."""
        if self.sandbox is None:
            raise ToolError("no sandbox is running (call reset first)")
        timeout = self.command_timeout_s
        if self.time_limit_s is not None:
            remaining = self.time_limit_s - (time.monotonic() - self._started_at)
            timeout = max(1.0, min(timeout, remaining))
        result = self.sandbox.run(command, timeout=timeout)
        return ToolResult(self.format_result(result, timeout), metadata={"exit_code": result.exit_code})

    def format_result(self, result: ExecResult, timeout: float) -> str:
        """``exit code: N`` + output, clipped to ``max_output_chars`` keeping the head and the tail."""
        output = result.output
        notes = []
        sandbox_noted = "[clawgym:" in result.stderr or "clawgym:" in result.stdout  # the backend's own notes
        if result.timed_out and not sandbox_noted:
            notes.append(f"[the command timed out after {timeout:g} s and was killed]")
        if result.truncated and not sandbox_noted:
            notes.append("[the sandbox dropped the middle of the output: at most "
                         f"{self.base_config.output_limit} bytes per stream]")
        if len(output) > self.max_output_chars:
            keep = self.max_output_chars // 2
            omitted = len(output) - 2 * keep
            output = f"{output[:keep]}\n[... {omitted} characters omitted ...]\n{output[-keep:]}"
            notes.append(f"[output clipped: {omitted} of {len(result.output)} characters not shown]")
        text = f"exit code: {result.exit_code}\n{output}"
        if notes:
            text = text.rstrip("\n") + "\n" + "\n".join(notes)
        return text

    # ---------------------------------------------------------------- scoring
    def run_check(self, answer: str = "") -> CheckReport:
        """Run the task's hidden check in a fresh process of the episode's sandbox."""
        assert self.task is not None
        if self.sandbox is None:
            return parse_check_output("", exit_code=None)
        data = self.task.data
        timeout = float(data.get("check_timeout_s") or self.check_timeout_s)
        script = check_script(
            self._workdir(self.task), self.setup_files, self.setup_script, data["check"],
            self.episode_seed, answer, self.hidden, timeout,
        )
        output, exit_code, timed_out = self._run_fresh(script, timeout + 15.0)
        return parse_check_output(output, exit_code=exit_code, timed_out=timed_out)

    def _run_fresh(self, script: str, timeout: float) -> tuple[str, int | None, bool]:
        """Run a script in a new bash process in the sandbox, outside the agent's shell."""
        try:  # the script arrives on stdin: no argv size limit, nothing on disk
            process = self.sandbox.spawn(["bash", "--noprofile", "--norc", "-c", 'eval "$(cat)"'])
        except NotImplementedError:
            process = None
        if process is None:  # a backend without spawn: a clean bash under the agent's shell
            result = self.sandbox.run(f"env -i bash --noprofile --norc -c {_quote(script)}", timeout=timeout)
            return result.output, result.exit_code, result.timed_out
        try:
            stdout, _ = process.communicate(script.encode("utf-8"), timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            stdout, _ = process.communicate()
            return _text(stdout), None, True
        return _text(stdout), process.returncode, False

    # ---------------------------------------------------------------- helpers
    def _workdir(self, task: Task) -> str:
        return str(task.data.get("workdir") or self.base_config.workdir)

    def _config(self, task: Task) -> SandboxConfig:
        env = {**DEFAULT_ENV, **self.base_config.env}
        network = self.base_config.network or bool(task.data.get("network"))  # tasks whose tests fetch packages
        return dataclasses.replace(self.base_config, env=env, workdir=self._workdir(task), files={},
                                  timeout_s=self.command_timeout_s, network=network)


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"
