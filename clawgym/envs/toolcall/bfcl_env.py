"""BFCL-v0: the Berkeley Function Calling Leaderboard v4 (``bfcl-eval`` 2026.3.23), scored by its checkers.

Single-turn categories (simple, multiple, parallel, parallel_multiple, irrelevance, live_*): the task's
functions are the env's tools; the agent's first message is the answer (its tool calls, all of them, or
text meaning "no call") and the episode ends with bfcl-eval's verdict: AST checker, or "no call" for
irrelevance and "some call" for relevance. Nothing is executed.

Multi-turn categories: the task's back ends (file system, trading bot, travel, ...) run live, fresh
for every episode; tool calls execute against them and their results come back as tool messages. A
message without tool calls ends the user's turn; the env then sends the next user message (in
miss_func, the held-out functions join the tools at their turn). After the last turn the episode is
scored by bfcl-eval's multi-turn checker. As in BFCL, more than 20 tool steps in one turn end the
episode (which then fails unless it was the last turn), and a message whose calls cannot be decoded
ends the turn.

Tool names: dots become underscores (``math.factorial`` -> ``math_factorial``), the OpenAI convention;
the checker is told the same (see :mod:`clawgym.envs.toolcall.bfcl_checker`). A call by a function's
original dotted name is that function (BFCL scores prompting models on the dotted names), so it is taken
as the underscored tool and the tool message says so; a call to a name that is not offered is told so.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import TYPE_CHECKING, Any

from clawgym.core.env import AgentEnv, EpisodeOptions
from clawgym.core.messages import Message, ToolCall, text_of, tool_result, user
from clawgym.core.spaces import AssistantMessage
from clawgym.core.tasks import Task, TaskSet
from clawgym.core.tools import Tool, ToolError
from clawgym.envs.toolcall import bfcl_checker as checker
from clawgym.envs.toolcall import bfcl_data as data
from clawgym.envs.toolcall import bfcl_oracle as oracle

if TYPE_CHECKING:
    from typing_extensions import Unpack

SYSTEM_PROMPT = (
    "You are an expert in composing functions. You are given a question and a set of possible functions. "
    "Based on the question, make one or more function calls to achieve the purpose. If none of the "
    "functions can be used, say so and make no call. If the question lacks the parameters a function "
    "requires, ask for them instead of calling it."
)
MULTI_TURN_PROMPT = (
    " This is a conversation over several turns: call functions until the current request is done, then "
    "reply without a function call; the user will then say what to do next."
)
NO_CALL_ANSWER = "None of the available functions fits this request, so I make no call."


class SchemaTool(Tool):
    """A BFCL function shown to the agent; BFCL-v0 runs calls itself, never through ``Tool.call``."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.name, self.description, self.parameters = schema["name"], schema["description"], schema["parameters"]

    def run(self, **arguments: Any) -> str:
        raise ToolError(f"{self.name} runs inside the BFCL env only")


class BFCLEnv(AgentEnv):
    default_max_turns = 200  # multi-turn tasks have up to 7 user turns of up to 21 steps each

    def __init__(self, tasks: Any = None, *, category: Any = "all", per_category: int | None = None,
                 **episode: Unpack[EpisodeOptions]) -> None:
        self.categories = data.resolve_categories(category)
        self.per_category = per_category
        self._backends: checker.Backends | None = None
        self._entry: dict[str, Any] = {}
        super().__init__(tasks, **episode)

    # ------------------------------------------------------------------ hooks
    def load_tasks(self, source: Any) -> TaskSet:
        if source is None:
            return data.bfcl_tasks(self.categories, self.per_category)
        if isinstance(source, TaskSet):
            return source
        raise TypeError("BFCL-v0 takes its tasks from bfcl-eval; choose them with category=... (or pass a TaskSet)")

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[list, dict[str, Any]]:
        task_id = (options or {}).get("task_id")
        if task_id is not None and str(task_id) not in self.task_set:
            raise KeyError(f"no BFCL task {task_id!r} in this env (category={','.join(self.categories)}); "
                           f"valid ids: {data.id_help(self.task_set)}")
        return super().reset(seed=seed, options=options)

    def system_prompt(self, task: Task) -> str:
        entry = task.data["entry"]
        extra = [text_of(m) for m in entry["question"][0] if m["role"] == "system"]
        prompt = SYSTEM_PROMPT + (MULTI_TURN_PROMPT if self._multi_turn(task) else "")
        return "\n\n".join([prompt, *extra])

    def setup(self, task: Task) -> list[Message]:
        self._entry = copy.deepcopy(task.data["entry"])  # miss_func extends the function list per episode
        self._turn_index = 0
        self._steps = 0
        self._turns: list[list[list[str]]] = [[]]
        self._answer_calls: list[dict[str, Any]] | None = None
        self._oracle_turn = -1  # the user turn whose calls the oracle made
        self._set_tools(self._entry["agent_function"])
        if self._multi_turn(task):
            self._backends = checker.Backends(self._entry)
        first = [m for m in self._entry["question"][0] if m["role"] != "system"]
        return [dict(m) for m in first[1:]]  # earlier chat turns of a live entry follow the first message

    def on_message(self, message: Message) -> tuple[list[Message], bool, str | None]:
        if self._backends is None:
            self._answer_calls = None  # text: no function call
            return [], True, text_of(message)
        return self._end_turn()

    def score(self, answer: str | None) -> tuple[float, dict[str, Any]]:
        assert self.task is not None
        entry = self._entry
        if self._backends is None:
            verdict = checker.check_single_turn(entry["category"], entry["function"], entry["ground_truth"],
                                                self._answer_calls)
        elif answer is None:  # truncated by max_turns / time_limit_s: not a BFCL outcome, so no credit
            verdict = {"valid": False, "error_type": "truncated"}
        else:  # after the last turn, or a step-limit stop (which fails unless it was in the last turn)
            verdict = checker.check_multi_turn(entry, entry["ground_truth"], self._turns)
        return float(verdict["valid"]), {"category": entry["category"], "bfcl_valid": verdict["valid"],
                                         "bfcl_error_type": verdict.get("error_type", "")}

    def oracle_action(self) -> Any:
        """BFCL's ground truth: one accepted answer (single turn) or each turn's calls, then a reply."""
        assert self.task is not None
        entry = self._entry
        if self._backends is None:
            if entry["category"].endswith("irrelevance"):
                return NO_CALL_ANSWER
            if entry["ground_truth"] is None:  # relevance: any call is accepted; call the first function
                return _message(None, [(next(iter(self._tools)), {})])
            language = {"simple_java": "java", "simple_javascript": "javascript"}.get(entry["category"], "python")
            return _message(None, oracle.single_turn_calls(entry["ground_truth"], entry["function"], language))
        wanted = entry["ground_truth"][self._turn_index]
        if self._steps == 0 and wanted:
            self._oracle_turn = self._turn_index
            docs = entry["function"] + [f for fs in (entry.get("missed_function") or {}).values() for f in fs]
            return _message(None, oracle.multi_turn_calls(wanted, docs))
        if self._steps and self._oracle_turn != self._turn_index:  # the back ends hold someone else's calls
            raise NotImplementedError("the oracle plays a user turn from its start, and this turn already ran other "
                                      "calls: end the turn with a message without calls, then the "
                                      "oracle can take the next")
        return "Done."

    def teardown(self) -> None:
        backends, self._backends = self._backends, None
        if backends is not None:
            backends.close()

    # ------------------------------------------------------------------ tool calls
    def _run_tools(self, calls: list[ToolCall]) -> tuple[list[Message], bool, str | None]:
        notes = [self._name_note(call) for call in calls]
        calls = [dataclasses.replace(call, name=self._dotted.get(call.name, call.name)) for call in calls]
        decodable = all(call.error is None for call in calls)
        self._counts["tool_calls"] += len(calls)
        self._counts["tool_errors"] += sum(call.error is not None for call in calls)
        if self._backends is None:  # single turn: this message is the answer
            self._answer_calls = [{call.name: call.arguments} for call in calls] if decodable else None
            return [tool_result(call, "Recorded as the answer." + note) for call, note in zip(calls, notes)], True, None
        if not decodable:  # as in BFCL: a step that cannot be decoded ends the turn, nothing runs
            problem = next(call.error for call in calls if call.error)
            notes = [tool_result(call, f"Error: {problem}; no call was run and this turn ended.") for call in calls]
            observation, done, answer = self._end_turn()
            return notes + observation, done, answer
        results, recorded = self._backends.run([(call.name, call.arguments) for call in calls])
        self._turns[-1].append(recorded)
        self._steps += 1
        observation = [tool_result(call, result) for call, result in zip(calls, results)]
        if self._steps > checker.MAXIMUM_STEP_LIMIT:  # bfcl-eval stops the conversation here and scores what it has
            return observation, True, "force_quit"
        return observation, False, None

    def _end_turn(self) -> tuple[list[Message], bool, str | None]:
        self._turn_index += 1
        questions = self._entry["question"]
        if self._turn_index >= len(questions):
            return [], True, "done"
        self._steps = 0
        self._turns.append([])
        held_out = (self._entry.get("agent_missed_function") or {}).get(str(self._turn_index))
        if held_out:  # they stay for the rest of the episode, as in BFCL
            self._entry["agent_function"] = self._entry["agent_function"] + held_out
            self._set_tools(self._entry["agent_function"])
            return [user(checker.DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC)], False, None
        return [dict(m) for m in questions[self._turn_index]], False, None

    def _set_tools(self, functions: list[dict[str, Any]]) -> None:
        self._tools = {s["name"]: SchemaTool(s)
                       for s in (data.tool_schema(f, checker.GORILLA_TO_OPENAPI) for f in functions)}
        self._dotted = {f["name"]: f["name"].replace(".", "_") for f in functions if "." in f["name"]}
        self.action_space = AssistantMessage(self.tools)

    def _name_note(self, call: ToolCall) -> str:
        """What the agent should know about the name it called: taken as its tool, or not offered at all."""
        if call.error is not None or call.name in self._tools:
            return ""
        if call.name in self._dotted:
            return f" ({call.name!r} is the function {self._dotted[call.name]!r}: tool names use underscores for dots.)"
        return f" Note: no function {call.name!r} is offered; the functions are: {', '.join(self._tools)}."

    @staticmethod
    def _multi_turn(task: Task) -> bool:
        return task.data["category"] in data.MULTI_TURN


def _message(content: str | None, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "tool_calls": [
        {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": arguments}}
        for i, (name, arguments) in enumerate(calls)]}
