"""The real OpenClaw client against `clawgym serve` on the default model: latency per turn, prefix reuse.

Starts the gateway of ``clawgym serve --config chat`` in-process (the default model on the CPU; training
and the judge off, so the numbers are the user's wait alone), starts OpenClaw's own gateway (npm
``openclaw@2026.9.6``, Node 24) with the config of the README's "Recipe 3: use it with OpenClaw" section
(``--openclaw-profile readme``) or that config without its trimming, i.e. OpenClaw's default tool
profile and bootstrap files (``--openclaw-profile default``), and drives two interleaved OpenClaw
sessions over OpenClaw's HTTP endpoint. The last message asks for a file in OpenClaw's workspace,
which only a tool call that OpenClaw runs can make. Prints one row per turn: prompt tokens, prompt
tokens reused from the prefix cache, reply tokens, finish reason and the latency a user sees
(OpenClaw's HTTP round trip), the replies, and the targets.

    .venv/bin/python benchmarks/openclaw_turns.py [--turns 10] [--model qwen2.5-coder-0.5b] [--openclaw-profile default]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from clawgym.inference.catalog import DEFAULT_MODEL  # noqa: E402
from tests.openclaw_harness import default_profile_config, openclaw_gateway, readme_config  # noqa: E402


def openclaw_config(profile: str) -> dict:
    """The README's openclaw.json, or the same without its trimming (OpenClaw's default tools, bootstrap)."""
    return default_profile_config() if profile == "default" else readme_config()

MESSAGES = [
    "Hi! Can you suggest a name for my new cat?",
    "What is a good way to start learning Python?",
    "Why do you like that name?",
    "Give me three tips for writing clean functions.",
    "Can you write a two-line poem about my cat?",
    "What should I read after the official tutorial?",
    "Which of your name ideas is the shortest?",
    "How long should a function be?",
    "Thanks! One more name, please.",
    "Summarise your Python advice in one sentence.",
]
FILE_REQUEST = "Please create a file named cat_names.txt in your workspace that lists your cat name ideas."


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--openclaw-profile", choices=["readme", "default"], default="readme")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")  # shows fitting

    from clawgym.inference.server import BackgroundServer
    from clawgym.launchers import resolve
    from clawgym.rl.launch import load_config
    from clawgym.serve.main import build_serving
    from clawgym.serve.turn_log import TurnLog

    root = Path(tempfile.mkdtemp(prefix="clawgym-openclaw-bench-"))
    config = load_config(resolve("chat"), [f"policy.model={args.model}", "serve.train=false",
                                           "method=grpo", "judge.type=rules",
                                  f"loop.output_dir={root / 'run'}"])
    serving = build_serving(config)
    server = BackgroundServer(serving.app)
    server.start()
    rows, errors = [], []
    try:
        with openclaw_gateway(root / "openclaw", server.url + "/v1", "sk-clawgym-local",
                              template=openclaw_config(args.openclaw_profile), timeout_s=3600.0) as openclaw:
            for index in range(args.turns):
                session = "A" if index % 2 == 0 else "B"
                before = serving.gateway.stats.main_turns
                started = time.monotonic()
                message = FILE_REQUEST if index == args.turns - 1 else MESSAGES[index % len(MESSAGES)]
                try:
                    reply = openclaw.chat(session, message)
                except Exception as exc:  # counted, reported, never hidden
                    errors.append(f"turn {index + 1}: {exc}")
                    reply = ""
                latency = time.monotonic() - started
                deadline = time.monotonic() + 5  # a turn is recorded just after its last SSE line
                while serving.gateway.stats.main_turns == before and time.monotonic() < deadline:
                    time.sleep(0.05)
                rows.append({"session": session, "latency_s": latency, "reply": reply, "message": message,
                             "turns": (before, serving.gateway.stats.main_turns)})
                print(f"turn {index + 1} ({session}): {rows[-1]['latency_s']:.1f} s: {reply[:70]!r}", flush=True)
    finally:
        server.stop()
    serving.gateway.log.flush()
    turns = TurnLog(serving.gateway.log.path).turns()
    for row in rows:  # one chat message may take several model requests (a tool call and its result)
        mine = turns[row["turns"][0]:row["turns"][1]]
        if mine:
            last = mine[-1].response_ids
            row.update(requests=len(mine), prompt=len(mine[0].prompt_ids),
                       reused=mine[0].info.get("reused_prefix_tokens", 0),
                       reply_tokens=sum(len(t.response_ids) for t in mine),
                       finish="stop" if last and last[-1] in serving.policy.stop_ids else "length")
    workspace_files = sorted(p.name for p in (root / "openclaw" / "work").glob("*") if p.is_file())
    print(f"\nOpenClaw 2026.9.6 ({args.openclaw_profile} profile) -> clawgym serve ({args.model}, "
          "CPU, prefix cache on)")
    print("| turn | session | model requests | prompt tokens | reused prefix | reply tokens | finish | latency (s) |")
    print("|---:|:---:|---:|---:|---:|---:|:---:|---:|")
    for index, row in enumerate(rows, 1):
        print(f"| {index} | {row['session']} | {row.get('requests', 0)} | {row.get('prompt', '-')} | "
              f"{row.get('reused', '-')} | "
              f"{row.get('reply_tokens', '-')} | {row.get('finish', '-')} | {row['latency_s']:.1f} |")
    print("\nreplies:")
    for index, row in enumerate(rows, 1):
        print(f"  {index} ({row['session']}) user: {row['message']}\n      agent: {row['reply'].strip()!r}")
    later = [r["latency_s"] for r in rows[2:]]
    short = [i + 1 for i, r in enumerate(rows) if r.get("reply_tokens", 0) < 20 and r.get("finish") != "stop"]
    print(f"\nerrors: {len(errors)} {errors or ''}")
    print(f"first turn of each session: {rows[0]['latency_s']:.1f} s, "
          f"{rows[1]['latency_s'] if len(rows) > 1 else 0:.1f} s "
          f"(target <= 60 s); later turns p50: {statistics.median(later) if later else 0:.1f} s (target <= 20 s)")
    print(f"files in OpenClaw's workspace: {workspace_files or 'none'}; turns with more than one model request "
          "(a tool call OpenClaw ran, then its result): "
          f"{[i + 1 for i, r in enumerate(rows) if r.get('requests', 0) > 1]}")
    print(f"replies under 20 tokens that the model did not end itself: {short or 'none'}; "
          f"recorded turns: {len(turns)}; side requests: {serving.gateway.stats.side_turns}")
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
