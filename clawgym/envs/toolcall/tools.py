"""The ToolCall setting's tools: ``python`` (persistent sandboxed interpreter), ``calculator``, ``submit``."""

from __future__ import annotations

from typing import Any

from clawgym.core.tools import SubmitTool, Tool, ToolError, ToolResult, arguments_schema, prop
from clawgym.envs.toolcall.calculator import CalculatorError, evaluate, format_number
from clawgym.envs.toolcall.interpreter import InterpreterError, PythonInterpreter, describe

MAX_CODE_CHARS = 100_000


class PythonTool(Tool):
    """Runs code in the episode's interpreter. The env attaches a fresh interpreter at each reset."""

    name = "python"
    parameters = arguments_schema(["code"], code=prop("string", "Python source to run."))

    def __init__(self, timeout_s: float, **interpreter_options: Any) -> None:
        self.timeout_s = timeout_s
        self.interpreter_options = interpreter_options  # PythonInterpreter's python, grace_s, memory_mb, output_limit
        self.description = (
            "Run Python 3 code in a persistent interpreter: variables, functions and imports persist "
            "between calls in this episode. Printed output and the value of the last expression are "
            f"returned. Each call may run {timeout_s:g} s; there is no network access."
        )
        self.interpreter: PythonInterpreter | None = None
        self.stats = self.fresh_stats()

    def start(self, sandbox: Any) -> None:
        """A fresh interpreter in this episode's ``sandbox``; it boots while the agent thinks (the first call waits)."""
        self.stats = self.fresh_stats()
        self.interpreter = PythonInterpreter(sandbox, timeout_s=self.timeout_s, **self.interpreter_options)
        self.interpreter.start()

    @staticmethod
    def fresh_stats() -> dict[str, int]:
        return {"python_calls": 0, "python_errors": 0, "python_timeouts": 0, "python_restarts": 0}

    def run(self, code: str) -> ToolResult:
        if self.interpreter is None:
            raise ToolError("python: no interpreter is running (reset the environment first)")
        if len(code) > MAX_CODE_CHARS:
            raise ToolError(f"python: the code is longer than {MAX_CODE_CHARS} characters")
        self.stats["python_calls"] += 1
        try:
            outcome = self.interpreter.execute(code, self.timeout_s)
        except InterpreterError as exc:
            self.stats["python_errors"] += 1
            raise ToolError(f"python: {exc}") from None
        self.stats["python_errors"] += int(outcome.failed)
        self.stats["python_timeouts"] += int(outcome.timed_out)
        self.stats["python_restarts"] += int(outcome.state_lost)
        return ToolResult(describe(outcome, self.timeout_s), error=outcome.failed)

    def close(self) -> None:
        if self.interpreter is not None:
            self.interpreter.close()
            self.interpreter = None


class CalculatorTool(Tool):
    name = "calculator"
    description = (
        "Evaluate an arithmetic expression exactly (integers) or in floating point: + - * / // % ** "
        "and parentheses, functions sqrt, exp, log, log10, log2, sin, cos, tan, floor, ceil, round, abs, "
        "min, max, factorial, gcd, lcm, comb, perm, and constants pi, e. Example: 'comb(10, 3) * 2**5'."
    )
    parameters = arguments_schema(["expression"], expression=prop("string", "An arithmetic expression."))

    def run(self, expression: str) -> str:
        try:
            return format_number(evaluate(expression))
        except CalculatorError as exc:
            raise ToolError(f"calculator: {exc}") from None


class SubmitAnswerTool(SubmitTool):
    """``submit(answer)``: ends the episode; numbers are accepted as well as strings."""

    description = "Submit your final answer (just the answer, e.g. '42' or '3/4') and end the episode."
    parameters = arguments_schema(["answer"], answer=prop(["string", "number"], "The final answer."))
