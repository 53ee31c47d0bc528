"""ToolCall-v0: ReTool-style verifiable tasks solved with a persistent sandboxed ``python`` tool.

Each episode gets its own sandbox (``sandbox=`` picks the backend; ``"auto"`` lets
:func:`clawgym.sandbox.make_sandbox` choose) and one long-lived interpreter inside it, so variables
persist across ``python`` calls and a call costs a pipe round trip, not a process start. The episode
ends with ``submit(answer)`` or with a message that has no tool calls (its last ``\\boxed{...}``, or
its whole text, is the answer). Reward: 1 if the answer matches the task's reference by value
(see :mod:`clawgym.envs.toolcall.answer`), else 0.

Tasks: the bundled generated set (``split="train"`` by default for it; ``split="test"`` to evaluate),
or any JSONL/dataset in our format, GSM8K (``question``/``answer`` ending in ``#### N``), MATH
(``problem``/``solution`` with ``\\boxed``) or DAPO (``prompt`` messages + ``reward_model.ground_truth``).
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

from clawgym.core.env import AgentEnv, EpisodeOptions
from clawgym.core.messages import Message, text_of
from clawgym.core.tasks import Record, Task, TaskSet, default_from_record
from clawgym.core.tools import Tool
from clawgym.envs.toolcall.answer import answers_match, extract_answer, gsm8k_final, last_boxed
from clawgym.envs.toolcall.interpreter import Launcher
from clawgym.envs.toolcall.tools import CalculatorTool, PythonTool, SubmitAnswerTool

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from clawgym.sandbox.base import SandboxFactory

log = logging.getLogger(__name__)

BUNDLED_PACKAGE = "clawgym.envs.toolcall"
BUNDLED_FILE = "tasks.jsonl"

SYSTEM_PROMPT = """You solve problems that need exact computation. You have tools:
- python(code): a persistent Python 3 interpreter (variables and imports persist between calls; print what you need to see; no network),
- calculator(expression): exact arithmetic,
- submit(answer): submit the final answer and end the episode.
Compute rather than guess. When you are done, call submit with just the answer, or reply without a tool call and put the final answer in \\boxed{...}."""  # noqa: E501  (the prompt the model sees: kept as written)

# The episode's private directory. Not the SandboxConfig default "/work": a bind mount there would hide a
# host interpreter that lives under /work (as this repository's virtualenv does).
SANDBOX_WORKDIR = "/sandbox"



def toolcall_record(record: Record) -> Task:
    """Map our records, GSM8K, MATH and DAPO rows to a Task with a plain reference answer."""
    record = dict(record)
    if isinstance(record.get("prompt"), list):  # DAPO / verl: chat messages + reward_model.ground_truth
        messages = record.pop("prompt")
        record["prompt"] = next((m.get("content", "") for m in reversed(messages) if m.get("role") == "user"), "")
        reward_model = record.pop("reward_model", None) or {}
        if "answer" not in record and "ground_truth" in reward_model:
            record["answer"] = reward_model["ground_truth"]
    if "solution" in record and "answer" not in record:  # MATH: the answer is boxed in the solution
        record["answer"] = last_boxed(str(record["solution"])) or str(record["solution"])
    task = default_from_record(record)
    if isinstance(task.answer, str) and "####" in task.answer:  # GSM8K
        task.data.setdefault("solution", task.answer)
        task.answer = gsm8k_final(task.answer)
    if task.answer is None:
        raise ValueError(f"task {task.id or task.prompt[:40]!r} has no reference answer")
    return task


class ToolCallEnv(AgentEnv):
    default_max_turns = 16

    def __init__(
        self,
        tasks: Any = None,
        *,
        sandbox: str | SandboxFactory = "auto",
        python: str | None = None,
        python_timeout_s: float = 10.0,
        python_grace_s: float = 2.0,
        memory_mb: int = 1024,
        output_limit: int = 4000,
        calculator: bool = True,
        **episode: Unpack[EpisodeOptions],
    ) -> None:
        if tasks is None and episode.get("split") is None:
            episode["split"] = "train"  # the bundled set's test split stays held out unless asked for
        self.sandbox_kind = sandbox
        self.python = python
        self.python_timeout_s = float(python_timeout_s)
        self.python_grace_s = float(python_grace_s)
        self.memory_mb = int(memory_mb)
        self.output_limit = int(output_limit)
        self.use_calculator = calculator
        self._python_tool = PythonTool(self.python_timeout_s, python=self.python, grace_s=self.python_grace_s,
                                       memory_mb=self.memory_mb, output_limit=self.output_limit)
        self._sandbox: Any = None
        super().__init__(tasks, **episode)

    # ------------------------------------------------------------------ hooks
    def load_tasks(self, source: Any) -> TaskSet:
        if source is None:
            return self.bundled_tasks()
        return TaskSet.load(source, toolcall_record)

    @staticmethod
    def bundled_tasks() -> TaskSet:
        return TaskSet.from_bundled(BUNDLED_PACKAGE, BUNDLED_FILE, toolcall_record)

    def make_tools(self) -> list[Tool]:
        tools: list[Tool] = [self._python_tool]
        if self.use_calculator:
            tools.append(CalculatorTool())
        tools.append(SubmitAnswerTool())
        return tools

    def system_prompt(self, task: Task) -> str:
        return SYSTEM_PROMPT

    def setup(self, task: Task) -> list[Message]:
        self._sandbox = self._make_sandbox()
        self._python_tool.start(self._sandbox)
        return []

    def on_message(self, message: Message) -> tuple[list[Message], bool, str | None]:
        return [], True, extract_answer(text_of(message))

    def score(self, answer: str | None) -> tuple[float, dict[str, Any]]:
        assert self.task is not None
        correct = answers_match(answer, self.task.answer, decimals=self.task.data.get("decimals"))
        return float(correct), {"answer": answer, "expected": str(self.task.answer)}

    def oracle_action(self) -> dict[str, Any]:
        """Run the task's oracle program with the ``python`` tool, then submit what it printed.

        Tasks without a program (GSM8K, DAPO files) submit the reference answer directly.
        """
        assert self.task is not None
        code = self.task.data.get("solution_code")
        if not code:
            return _tool_call("oracle_submit", "submit", {"answer": str(self.task.answer)})
        printed = next((text_of(m) for m in reversed(self.messages)
                        if m.get("role") == "tool" and m.get("tool_call_id") == "oracle_python"), None)
        if printed is None:
            return _tool_call("oracle_python", "python", {"code": code})
        return _tool_call("oracle_submit", "submit", {"answer": printed.strip()})

    def teardown(self) -> None:
        self._python_tool.close()
        sandbox, self._sandbox = self._sandbox, None
        if sandbox is not None:
            try:
                sandbox.close()
            except Exception:  # teardown runs on crash paths too; never mask the original error
                log.exception("closing the sandbox failed")

    def _info(self) -> dict[str, Any]:
        info = super()._info()
        info.update(self._python_tool.stats)
        return info

    # ------------------------------------------------------------------ sandbox
    def _make_sandbox(self) -> Launcher:
        from clawgym.sandbox.base import SandboxConfig

        config = SandboxConfig(
            network=False,
            workdir=SANDBOX_WORKDIR,
            memory_mb=self.memory_mb + 512,  # the interpreter's own RLIMIT_AS trips first, readably
            timeout_s=self.python_timeout_s,
            env={"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1",
                 "HOME": "/tmp", "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        )
        from clawgym.sandbox import make_sandbox

        return make_sandbox(self.sandbox_kind, config)


def _tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}]}
