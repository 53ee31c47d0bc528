"""Fair scheduling: how long a short request waits while another user streams the longest reply the server allows.

One invocation builds ``clawgym serve``'s app from the chat launcher (the default model, in this process, served
over HTTP on a local port; ``serve.train=false``, and every request opens a conversation of its own, so no turn is
judged and only the serving engine works), and measures, side by side:

- *alone*: ``--short`` short requests (``max_tokens`` ``--short-tokens``, greedy, each a new conversation), one
  after another, with no other request in the server;
- *while one user streams*: the same requests while another user streams a reply asking for ``max_tokens`` 10^8,
  which the gateway clamps to its advertised ``max_output_tokens`` (``serve.max_tokens``: 512); when one long
  reply ends before the short requests are done, the user asks for the next.

A short request counts in the second set only when a long reply was streaming for the whole of it. The row
(appended to ``benchmarks/results/fair_scheduling.jsonl``) holds each request's latency, the p50 / p95 of both
sets, the long replies' tokens and tokens per second, the CPU, the load average before and after (other jobs on
the same cores show there), the process's nice value, and the command. ``--markdown`` writes the page
(docs/results/fair_scheduling.md) from the rows and runs nothing.

    nice -n 19 .venv/bin/python benchmarks/fair_scheduling.py
    .venv/bin/python benchmarks/fair_scheduling.py --markdown docs/results/fair_scheduling.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from learning_from_conversation import chat_config, git_commit  # noqa: E402
from results_page import add_page_arguments, generated_by, write_page  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "fair_scheduling.jsonl"
PAGE = Path("docs/results/fair_scheduling.md")
SETS = ("serve.train=false",)  # serving only: no trainer (every request opens a conversation: nothing is judged)
LONG_ASKED = 100_000_000  # what the streaming user asks for; the gateway clamps it to max_output_tokens
LONG_PROMPT = "Count from 1 to 5000, one number per line, and write nothing else."
TOPICS = ("len", "sorted", "zip", "enumerate", "map", "filter", "sum", "any", "all", "reversed", "range", "dict",
          "set", "round", "abs", "min", "max", "isinstance", "getattr", "open", "print", "format", "repr", "hash")


def cpu() -> str:
    """The CPU as the page names it: architecture, cores, and the vector / matrix units torch can use."""
    flags = set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    except OSError:
        pass
    units = "/".join(name for name, flag in (("AVX-512", "avx512f"), ("AMX", "amx_tile")) if flag in flags)
    arch = platform.machine().replace("x86_64", "x86-64")
    return f"{arch} {os.cpu_count()} cores" + (f", {units}" if units else "")


def percentile(values: list[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100), linear between the closest ranks; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return round(ordered[low] + (ordered[high] - ordered[low]) * (rank - low), 3)


def short_body(i: int, tokens: int) -> dict:
    return {"model": "m", "user": "quick", "max_tokens": tokens, "temperature": 0.0,
            "messages": [{"role": "user", "content": f"In one sentence: what does Python's `{TOPICS[i % len(TOPICS)]}` "
                                                     f"do? ({i})"}]}


class LongStreamer(threading.Thread):
    """Another user: streams the longest reply allowed, then asks again, until told to stop (the reply streaming
    then is read to its end: every recorded reply is whole)."""

    def __init__(self, client, api_key: str | None) -> None:  # noqa: ANN001
        super().__init__(name="long-streamer", daemon=True)
        self.client, self.key = client, api_key
        self.streaming = threading.Event()  # set while a long reply's tokens are arriving
        self.stop = threading.Event()
        self.replies: list[dict] = []

    def run(self) -> None:
        body = {"model": "m", "user": "long", "max_tokens": LONG_ASKED, "temperature": 0.0, "stream": True,
                "stream_options": {"include_usage": True}, "messages": [{"role": "user", "content": LONG_PROMPT}]}
        while not self.stop.is_set():
            started, first, tokens = time.perf_counter(), None, 0
            with self.client.stream("POST", "/v1/chat/completions", json=body, headers=headers(self.key)) as response:
                response.raise_for_status()
                for line in response.iter_lines():
                    if not line.startswith("data: ") or line == "data: [DONE]":
                        continue
                    chunk = json.loads(line[6:])
                    if chunk.get("usage"):
                        tokens = int(chunk["usage"]["completion_tokens"])
                    if first is None and chunk.get("choices") and chunk["choices"][0]["delta"].get("content"):
                        first = time.perf_counter()
                        self.streaming.set()
            self.streaming.clear()
            seconds = time.perf_counter() - started
            decode = seconds - ((first or started) - started)
            self.replies.append({"tokens": tokens, "seconds": round(seconds, 2),
                                 "first_token_s": round((first or started) - started, 2),
                                 "tokens_per_s": round(tokens / decode, 2) if decode > 0 else None})


def headers(key: str | None) -> dict:
    return {"Authorization": f"Bearer {key}"} if key else {}


def timed(client, body: dict, key: str | None) -> tuple[float, int]:  # noqa: ANN001
    started = time.perf_counter()
    response = client.post("/v1/chat/completions", json=body, headers=headers(key))
    response.raise_for_status()
    return round(time.perf_counter() - started, 3), int(response.json()["usage"]["completion_tokens"])


def run(short: int, short_tokens: int, sets: list[str], note: str) -> dict:
    import httpx

    from clawgym.inference.server import BackgroundServer
    from clawgym.serve.main import build_serving

    load_before = os.getloadavg()
    out = Path(tempfile.mkdtemp(prefix="fair-scheduling-"))
    config = chat_config([*SETS, f"loop.output_dir={out}", *sets])
    started = time.perf_counter()
    serving = build_serving(config, device="cpu")
    key, limit = config.serve.api_key, config.serve.max_tokens
    with BackgroundServer(serving.app) as url, httpx.Client(base_url=url, timeout=600) as client:
        timed(client, short_body(-1, short_tokens), key)  # warm up: the first request allocates
        alone = [timed(client, short_body(i, short_tokens), key) for i in range(short)]
        long_user = LongStreamer(client, key)
        long_user.start()
        overlapped: list[tuple[float, int]] = []
        skipped, i = 0, short
        while len(overlapped) < short:
            if not long_user.streaming.wait(timeout=600):
                raise RuntimeError("the long reply never started streaming")
            ended = len(long_user.replies)
            result = timed(client, short_body(i, short_tokens), key)
            i += 1
            if long_user.streaming.is_set() and len(long_user.replies) == ended:  # one long reply the whole time
                overlapped.append(result)
            else:
                skipped += 1
        long_user.stop.set()
        long_user.join(timeout=900)
    serving.gateway.log.close()
    alone_s, shared_s = [s for s, _ in alone], [s for s, _ in overlapped]
    argv = " ".join(shlex.quote(a) for a in sys.argv[1:])
    return {"model": config.policy.model, "sets": [*SETS, *sets], "max_output_tokens": limit,
            "short_requests": short, "short_max_tokens": short_tokens,
            "alone_s": alone_s, "with_long_s": shared_s, "skipped_not_overlapping": skipped,
            "alone_p50": percentile(alone_s, 50), "alone_p95": percentile(alone_s, 95),
            "with_long_p50": percentile(shared_s, 50), "with_long_p95": percentile(shared_s, 95),
            "short_tokens_mean": round(statistics.mean(t for _, t in alone + overlapped), 1),
            "long_asked": LONG_ASKED, "long_replies": long_user.replies,
            "cpu": cpu(), "nice": os.nice(0), "load_before": [round(x, 2) for x in load_before],
            "load_after": [round(x, 2) for x in os.getloadavg()], "note": note,
            "command": f"nice -n {os.nice(0)} .venv/bin/python benchmarks/fair_scheduling.py {argv}".replace(
                "nice -n 0 ", "").rstrip(),
            "wall_s": round(time.perf_counter() - started, 1), "commit": git_commit()}


def markdown(path: Path = RESULTS) -> str:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    lines = ["# Fair scheduling: short requests while another user streams the longest reply", "",
             generated_by("fair_scheduling.py", PAGE, "benchmarks/results/fair_scheduling.jsonl"), "",
             "Each row: `clawgym serve`'s app built from the chat launcher (serving only: "
             f"`{' '.join('--set ' + s for s in SETS)}`), in one process, over HTTP on a local port. *alone*: "
             "short greedy requests (each a new conversation), one after another, with no other request in the server "
             "(other jobs on the machine show in the load average); "
             "*while streaming*: the same while another user streams a reply that asks for `max_tokens` 10^8, "
             "clamped by the gateway to its advertised `max_output_tokens`. Latency: from sending a request to its "
             "whole reply, in seconds. The continuous batch decodes the short requests' rows next to the long "
             "reply's, so a short request waits for no other reply to finish; what it pays is the slower decoding "
             "step of a bigger batch.", "",
             "| model | short requests (max_tokens) | alone p50 / p95 | while streaming p50 / p95 | long reply: "
             "asked → got tokens | CPU | load before → after | command | commit |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        longs = r["long_replies"]
        got = "; ".join(f"{x['tokens']} in {x['seconds']:.0f} s ({x['tokens_per_s']:.2f} tok/s)" for x in longs)
        lines.append(f"| {r['model']} | {r['short_requests']} + {r['short_requests']} ({r['short_max_tokens']}) "
                     f"| {r['alone_p50']:.2f} / {r['alone_p95']:.2f} s "
                     f"| {r['with_long_p50']:.2f} / {r['with_long_p95']:.2f} s "
                     f"| {r['long_asked']:.0e} → {got} | {r['cpu']} "
                     f"| {r['load_before'][0]:.2f} → {r['load_after'][0]:.2f} | `{r['command']}` | {r['commit']} |")
    notes = [f"- {r['model']} at {r['commit']}: {r['note']}" for r in rows if r.get("note")]
    if notes:
        lines += ["", "Notes on the rows:", "", *notes]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--short", type=int, default=12, help="short requests in each set")
    parser.add_argument("--short-tokens", type=int, default=16, help="max_tokens of a short request")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a config override")
    parser.add_argument("--note", default="", help="what the row should say about the machine (other jobs on it)")
    add_page_arguments(parser, RESULTS, PAGE)
    args = parser.parse_args()
    if write_page(args, markdown):
        return 0
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    row = run(args.short, args.short_tokens, args.set, args.note)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    with args.results.open("a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
