"""Latency of one ``python`` tool call: clawgym's persistent sandboxed interpreter vs a fresh process per call.

Most peers run each python tool call as a new ``python -c`` subprocess (12-16 ms of interpreter start
before any user code). ToolCall-v0 keeps one interpreter per episode inside the sandbox and talks to
it over pipes. This script measures, in one run and interleaved (so machine load hits both alike):

- clawgym: ``env.step`` with a ``python`` tool call running ``print(1+1)`` (parse, dispatch, sandbox
  round trip, formatting: the whole step);
- peers: ``subprocess.run([python, "-c", "print(1+1)"])``, unsandboxed (which flatters the peers), and
  the same with ``-I -S`` (no site imports: the cheapest fresh interpreter there is);
- and, for scale, clawgym's ``reset`` + first call (new sandbox + interpreter start).

    .venv/bin/python benchmarks/toolcall_step.py [--calls 300] [--sandbox auto]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import gymnasium as gym

import clawgym  # noqa: F401

CODE = "print(1+1)"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def python_call() -> dict:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_0", "type": "function", "function": {"name": "python", "arguments": json.dumps({"code": CODE})}}]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--resets", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--sandbox", default="auto")
    args = parser.parse_args(argv)

    env = gym.make("clawgym/ToolCall-v0", sandbox=args.sandbox, max_turns=args.calls + args.warmup + 1).unwrapped
    env.reset(seed=0)
    backend = type(env._sandbox).__name__
    action = python_call()

    def ours() -> float:
        start = time.perf_counter()
        observation, *_ = env.step(action)
        elapsed = time.perf_counter() - start
        assert observation[0]["content"] == "2", observation
        return elapsed

    def fresh(*flags: str) -> float:
        start = time.perf_counter()
        out = subprocess.run([sys.executable, *flags, "-c", CODE], capture_output=True, text=True, check=True)
        elapsed = time.perf_counter() - start
        assert out.stdout == "2\n"
        return elapsed

    for _ in range(args.warmup):
        ours()
        fresh()
        fresh("-I", "-S")
    ours_s, peer_s, bare_s = [], [], []
    for _ in range(args.calls):  # interleaved
        ours_s.append(ours())
        peer_s.append(fresh())
        bare_s.append(fresh("-I", "-S"))
    env.close()

    reset_env = gym.make("clawgym/ToolCall-v0", sandbox=args.sandbox).unwrapped
    reset_s = []
    for index in range(args.resets):
        start = time.perf_counter()
        reset_env.reset(seed=index)
        observation, *_ = reset_env.step(action)
        reset_s.append(time.perf_counter() - start)
        assert observation[0]["content"] == "2"
    reset_env.close()

    rows = [
        (f"clawgym env.step, python tool (persistent interpreter, sandbox: {backend})", ours_s),
        ("fresh `python -c` subprocess per call (peers; no sandbox)", peer_s),
        ("fresh `python -I -S -c` per call (no site imports: a peer's best case)", bare_s),
        ("clawgym reset + first python step (new sandbox + interpreter)", reset_s),
    ]
    print(f"python tool step latency, `{CODE}`, {args.calls} interleaved calls each ({sys.executable})\n")
    print("| method | median (ms) | p95 (ms) | n |")
    print("|---|---:|---:|---:|")
    for name, values in rows:
        print(f"| {name} | {statistics.median(values) * 1e3:.2f} | "
              f"{percentile(values, 95) * 1e3:.2f} | {len(values)} |")
    for name, values in (("`python -c`", peer_s), ("`python -I -S -c`", bare_s)):
        ratio_median = statistics.median(values) / statistics.median(ours_s)
        ratio_p95 = percentile(values, 95) / percentile(ours_s, 95)
        print(f"\nvs {name}: clawgym is {ratio_median:.1f}x faster at the median and {ratio_p95:.1f}x at p95.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
