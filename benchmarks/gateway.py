"""What the chat gateway costs, and whether it holds 256 concurrent streaming sessions.

Rows, all against the same scripted policy (no model time, so only overhead shows):
- the policy called in-process (the floor);
- clawgym's plain policy server (``clawgym serve-policy``'s app) over HTTP, streaming;
- the chat gateway over HTTP, streaming: session inference, recording with fsync, judging.
Then 256 sessions x 3 turns stream concurrently through the gateway; every turn must succeed and be
recorded exactly once. The client runs in the same process as the servers (one GIL, two cores), so
the concurrent latencies include the client's own work.

    .venv/bin/python benchmarks/gateway.py [--requests 300] [--sessions 256]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from clawgym.inference.scripted import ScriptedPolicy
from clawgym.inference.server import BackgroundServer, build_app
from clawgym.serve.app import build_gateway_app
from clawgym.serve.gateway import ChatGateway, PolicyResponder
from clawgym.serve.turn_log import TurnLog


def reply(messages):
    return f"ok: {messages[-1]['content'][:40]}"


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


async def stream_once(client: httpx.AsyncClient, url: str, messages, user: str) -> str:
    text = []
    async with client.stream("POST", url + "/v1/chat/completions",
                             json={"model": "m", "messages": messages, "stream": True, "user": user}) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                text.append(line)
    return "".join(text)


async def sequential_latency(url: str, n: int) -> list[float]:
    times = []
    async with httpx.AsyncClient(timeout=30) as client:
        for i in range(n):
            start = time.perf_counter()
            await stream_once(client, url, [{"role": "user", "content": f"hello {i}"}], f"seq-{i}")
            times.append((time.perf_counter() - start) * 1000)
    return times


async def in_process_latency(policy: ScriptedPolicy, n: int) -> list[float]:
    times = []
    for i in range(n):
        start = time.perf_counter()
        await policy.generate([{"role": "user", "content": f"hello {i}"}])
        times.append((time.perf_counter() - start) * 1000)
    return times


async def concurrent_sessions(url: str, sessions: int, turns: int) -> tuple[float, list[float], int]:
    errors = 0
    latencies: list[float] = []
    limits = httpx.Limits(max_connections=sessions, max_keepalive_connections=sessions)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        async def session(index: int) -> None:
            nonlocal errors
            history = [{"role": "user", "content": f"session {index} turn 0"}]
            for turn in range(turns):
                start = time.perf_counter()
                try:
                    await stream_once(client, url, history, f"user-{index}")
                except Exception:
                    errors += 1
                    return
                latencies.append((time.perf_counter() - start) * 1000)
                history += [{"role": "assistant", "content": f"ok: session {index} turn {turn}"[:44]},
                            {"role": "user", "content": f"session {index} turn {turn + 1}"}]

        start = time.perf_counter()
        await asyncio.gather(*(session(i) for i in range(sessions)))
        return time.perf_counter() - start, latencies, errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--sessions", type=int, default=256)
    parser.add_argument("--turns", type=int, default=3)
    args = parser.parse_args()

    policy = ScriptedPolicy(reply, byte_tokens=True)
    rows = [("policy in-process", asyncio.run(in_process_latency(policy, args.requests)))]
    with BackgroundServer(build_app(policy)) as url:
        asyncio.run(sequential_latency(url, 20))  # warm-up
        rows.append(("policy server, HTTP stream", asyncio.run(sequential_latency(url, args.requests))))
    with tempfile.TemporaryDirectory() as tmp:
        log_path = Path(tmp) / "turns.jsonl"
        gateway = ChatGateway(PolicyResponder(policy), TurnLog(log_path))
        with BackgroundServer(build_gateway_app(gateway)) as url:
            asyncio.run(sequential_latency(url, 20))
            rows.append(("chat gateway, HTTP stream", asyncio.run(sequential_latency(url, args.requests))))
            wall, latencies, errors = asyncio.run(concurrent_sessions(url, args.sessions, args.turns))
            time.sleep(0.5)
            gateway.log.flush()
            recorded = sum(t.session_id.startswith("user-") for t in TurnLog(log_path).turns())
        gateway.log.close()

    print(f"\n### Gateway overhead ({args.requests} sequential streaming requests, scripted policy)\n")
    print("| path | p50 ms | p99 ms |")
    print("|---|---:|---:|")
    for name, times in rows:
        print(f"| {name} | {statistics.median(times):.2f} | {percentile(times, 99):.2f} |")
    added_p50 = statistics.median(rows[2][1]) - statistics.median(rows[0][1])
    added_p99 = percentile(rows[2][1], 99) - percentile(rows[0][1], 99)
    print(f"\nadded by the gateway over the in-process policy: p50 {added_p50:.2f} ms, p99 {added_p99:.2f} ms")
    total = args.sessions * args.turns
    print(f"\n### {args.sessions} concurrent streaming sessions x {args.turns} turns through the gateway\n")
    print("| turns | errors | recorded | wall s | turns/s | p50 ms | p99 ms |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| {total} | {errors} | {recorded} | {wall:.2f} | {len(latencies) / wall:.0f} | "
          f"{statistics.median(latencies):.1f} | {percentile(latencies, 99):.1f} |")
    if errors or recorded != total:
        raise SystemExit(f"FAILED: {errors} errors, {recorded}/{total} turns recorded")


if __name__ == "__main__":
    main()
