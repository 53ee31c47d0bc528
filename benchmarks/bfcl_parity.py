"""BFCL-v0 vs bfcl-eval: for the same model outputs, clawgym's reward must equal bfcl-eval's own verdict.

For each sampled task and each kind of model output, the outputs (assistant messages) are

- replayed through ``clawgym/BFCL-v0`` (action parsing, tool names, live multi-turn back ends, the env's
  scoring) -> the env's reward;
- turned into the result format bfcl-eval's generation step writes for an OpenAI function-calling model
  (``[{name: "<arguments JSON>"}]`` per step, or the text; one list of steps per user turn, a turn ending
  at the first step with no decodable call) and judged by bfcl-eval's own per-entry evaluator
  (``eval_runner._evaluate_single_ast_entry`` / ``_relevance_`` / ``_multi_turn_``) with its OpenAI
  handler's decoder, on the prompts and answers bfcl-eval's own loaders return -> bfcl-eval's verdict.

Kinds of output: ``oracle`` (the ground truth), ``perturbed`` (the ground truth with one argument changed,
one call dropped, or a call where none belongs), ``text`` (no call at all) and ``smollm2`` (SmolLM2-135M-
Instruct, greedy, through clawgym's HF policy). Needs `make bench-deps` (bfcl-eval's eval runner imports
python-dotenv, overrides, tenacity and tree-sitter; not its vendor SDKs).

    .venv/bin/python benchmarks/bfcl_parity.py [--per-category 12] [--smollm2 2] [--smollm2-multi 1]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from typing import Any

os.environ.setdefault("BFCL_PROJECT_ROOT", os.path.join(tempfile.gettempdir(), "clawgym-bfcl"))
os.environ.setdefault("OPENAI_API_KEY", "unused")  # bfcl-eval's OpenAI handler builds a client; no request is made

import gymnasium as gym  # noqa: E402

import clawgym  # noqa: E402,F401
from clawgym.core.messages import parse_action  # noqa: E402
from clawgym.envs.toolcall import bfcl_checker, bfcl_data  # noqa: E402

with bfcl_checker.without_model_registry():
    from bfcl_eval.constants.enums import Language, ReturnFormat
    from bfcl_eval.eval_checker import eval_runner
    from bfcl_eval.model_handler.api_inference.openai_completion import OpenAICompletionsHandler
    from bfcl_eval.utils import load_dataset_entry, load_ground_truth_entry

MODEL = bfcl_checker.CHECKER_MODEL
HANDLER = OpenAICompletionsHandler(model_name=MODEL, temperature=0, registry_name=MODEL, is_fc_model=True)


# ------------------------------------------------------------------------------------ bfcl-eval's side
def step_result(action: Any) -> Any:
    """One assistant message as bfcl-eval's OpenAI FC handler records it."""
    _, calls = parse_action(action)
    if not calls:
        return action if isinstance(action, str) else (action.get("content") or "")
    return [{call.name: "<not JSON>" if call.error else json.dumps(call.arguments)} for call in calls]


def decodable(result: Any) -> bool:
    try:
        return bool(HANDLER.decode_execute(result, has_tool_call_tag=False))
    except Exception:
        return False


def bfcl_verdict(category: str, entry: dict, answer: Any, actions: list[Any]) -> bool:
    entry = copy.deepcopy(entry)
    if category in bfcl_data.MULTI_TURN:
        turns: list[list[Any]] = [[]]
        for action in actions:
            result = step_result(action)
            turns[-1].append(result)
            if not decodable(result):
                turns.append([])
            elif len(turns[-1]) > step_limit():  # bfcl-eval stops the conversation after this step
                break
        if turns and not turns[-1]:
            turns.pop()
        name = f"bench_{uuid.uuid4().hex}"
        try:
            out = eval_runner._evaluate_single_multi_turn_entry(
                HANDLER, entry["id"], turns, answer, entry, name, category)
        finally:
            bfcl_checker.forget(name)
        return bool(out["valid"])
    result = step_result(actions[0])
    if "relevance" in category:
        return bool(
            eval_runner._evaluate_single_relevance_entry(HANDLER, entry["id"], result, entry, MODEL, category)["valid"])
    language, fmt = {"simple_java": (Language.JAVA, ReturnFormat.JAVA),
                     "simple_javascript": (Language.JAVASCRIPT, ReturnFormat.JAVASCRIPT)}.get(
        category, (Language.PYTHON, ReturnFormat.PYTHON))
    return bool(eval_runner._evaluate_single_ast_entry(HANDLER, entry["id"], result, answer, entry, MODEL, category,
                                                        language=language, return_format=fmt)["valid"])


def step_limit() -> int:
    from bfcl_eval.constants.default_prompts import MAXIMUM_STEP_LIMIT

    return MAXIMUM_STEP_LIMIT


# ------------------------------------------------------------------------------------ clawgym's side
def env_reward(env: Any, task_id: str, actions: list[Any]) -> float:
    env.reset(options={"task_id": task_id})
    for action in actions:
        _, reward, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            return float(reward)
    raise RuntimeError(f"{task_id}: the outputs ran out before the episode ended")


# ------------------------------------------------------------------------------------ model outputs
def oracle_actions(env: Any, task_id: str) -> list[Any]:
    env.reset(options={"task_id": task_id})
    actions = []
    while True:
        action = env.oracle_action()
        actions.append(action)
        *_, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            return actions


def perturb_value(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 7
    if isinstance(value, str):
        return value + " (changed)"
    if isinstance(value, list):
        return value[:-1] if value else ["changed"]
    if isinstance(value, dict):
        return {}
    return "changed"


def perturbed_actions(env: Any, task: Any, actions: list[Any], rng_index: int) -> list[Any]:
    """The oracle's outputs with one change: an argument, a dropped call, or a call where none belongs."""
    actions = copy.deepcopy(actions)
    with_calls = [a for a in actions if isinstance(a, dict) and a.get("tool_calls")]
    if not with_calls:  # irrelevance, or multi-turn turns without calls: call the first tool instead
        env.reset(options={"task_id": task.id})
        name = env.tools[0]["function"]["name"]
        return [{"role": "assistant", "content": None, "tool_calls": [
            {"id": "p", "type": "function", "function": {"name": name, "arguments": {}}}]}] + actions[1:]
    message = with_calls[rng_index % len(with_calls)]
    calls = message["tool_calls"]
    if len(calls) > 1 and rng_index % 2:
        calls.pop()
        return actions
    function = calls[0]["function"]
    arguments = function["arguments"]
    if arguments:
        key = sorted(arguments)[rng_index % len(arguments)]
        arguments[key] = perturb_value(arguments[key])
    else:
        function["name"] += "_x"
    return actions


async def smollm2_actions(env: Any, task_ids: list[str], max_tokens: int) -> dict[str, list[Any]]:
    from clawgym.core.policy import SamplingParams
    from clawgym.inference.hf import HFPolicy

    policy = HFPolicy.from_pretrained("smollm2-135m")
    sampling = SamplingParams(temperature=0.0, max_tokens=max_tokens)
    out = {}
    try:
        for task_id in task_ids:
            observation, _ = env.reset(options={"task_id": task_id})
            context, actions = list(observation), []
            while True:
                generation = await policy.generate([dict(m) for m in context], env.tools, sampling)
                action = generation.message or generation.text
                actions.append(action)
                observation, _, terminated, truncated, _ = env.step(action)
                context += [parse_action(action)[0], *observation]
                if terminated or truncated:
                    break
            out[task_id] = actions
    finally:
        await policy.close()
    return out


# ------------------------------------------------------------------------------------ main
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-category", type=int, default=12, help="tasks per category (evenly spaced)")
    parser.add_argument("--smollm2", type=int, default=2, help="SmolLM2 outputs per single-turn category")
    parser.add_argument("--smollm2-multi", type=int, default=1, help="SmolLM2 episodes per multi-turn category")
    parser.add_argument("--max-tokens", type=int, default=128)
    args = parser.parse_args(argv)

    env = gym.make("clawgym/BFCL-v0", per_category=args.per_category).unwrapped
    prompts, answers = {}, {}
    for category in bfcl_data.CATEGORIES:  # what bfcl-eval's evaluate_task loads
        entries = load_dataset_entry(category, include_prereq=False, include_language_specific_hint=False)
        truth = [None] * len(entries) if category in bfcl_data.NO_GROUND_TRUTH else load_ground_truth_entry(category)
        for entry, gt in zip(entries, truth):
            prompts[entry["id"]], answers[entry["id"]] = entry, gt and gt["ground_truth"]

    items: list[tuple[Any, str, list[Any]]] = []
    for index, task in enumerate(env.task_set):
        actions = oracle_actions(env, task.id)
        items.append((task, "oracle", actions))
        items.append((task, "perturbed", perturbed_actions(env, task, actions, index)))
        if task.data["category"] in bfcl_data.SINGLE_TURN:
            items.append((task, "text", ["I cannot help with that."]))
    chosen: list[str] = []
    by_category = defaultdict(list)
    for task in env.task_set:
        by_category[task.data["category"]].append(task.id)
    for category, ids in by_category.items():
        chosen += ids[: args.smollm2_multi if category in bfcl_data.MULTI_TURN else args.smollm2]
    if chosen:
        start = time.perf_counter()
        for task_id, actions in asyncio.run(smollm2_actions(env, chosen, args.max_tokens)).items():
            items.append((env.task_set.by_id(task_id), "smollm2", actions))
        print(f"SmolLM2 outputs for {len(chosen)} tasks in {time.perf_counter() - start:.0f} s", file=sys.stderr)

    rows: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # items, bfcl valid, env 1, agree
    disagreements = []
    for task, kind, actions in items:
        category = task.data["category"]
        verdict = bfcl_verdict(category, prompts[task.id], answers[task.id], actions)
        reward = env_reward(env, task.id, actions)
        group = ("multi_turn"
                 if category in bfcl_data.MULTI_TURN else ("live" if category.startswith("live") else "non_live"))
        for key in ((group, kind), (group, "all"), ("all", "all")):
            row = rows[key]
            row[0] += 1
            row[1] += verdict
            row[2] += reward == 1.0
            row[3] += (reward == 1.0) == verdict
        if (reward == 1.0) != verdict:
            disagreements.append((task.id, kind, reward, verdict))
    env.close()

    print("| categories | outputs | items | bfcl-eval valid | clawgym reward 1 | agreement |")
    print("|---|---|---:|---:|---:|---:|")
    for (group, kind), (n, valid, ones, agree) in sorted(rows.items(), key=lambda kv: (kv[0][0] == "all", kv[0])):
        print(f"| {group} | {kind} | {n} | {valid} | {ones} | {100 * agree / n:.1f} % |")
    for disagreement in disagreements[:20]:
        print("DISAGREE", *disagreement)
    return 1 if disagreements else 0


if __name__ == "__main__":
    raise SystemExit(main())
