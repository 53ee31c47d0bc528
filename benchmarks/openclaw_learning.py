"""The product's own scenario: the real OpenClaw on its default profile, a person who corrects it, and
whether the agent gets better while they talk.

Starts ``clawgym serve --config chat`` in-process (the default model on the CPU, training on, the shipped
recipe; ``--set`` overrides) and two real OpenClaw gateways (npm ``openclaw@2026.9.6``, Node 24) with the
README's openclaw.json *without* its trimming, i.e. OpenClaw's default tool profile and bootstrap files:

- the **person's** gateway: a scripted person holds conversations through OpenClaw's own HTTP endpoint, one
  OpenClaw session each: an ordinary request (a question, a draft, a homework problem, a small task in the
  workspace), and when the reply misses, a correction in the person's words (answer in plain words, not
  JSON; answer what I asked; shorter; actually make the file), then "thanks" when a reply lands. Every such
  turn is recorded, judged and trained on by clawgym as any person's would be;
- the **evaluation** gateway: fixed held-out messages, disjoint from the person's, each in a fresh session,
  before, every ``--eval-every`` minutes and after. Its provider sends ``X-Turn-Type: side`` (OpenClaw-RL's
  header: answered by the serving weights, never recorded as a main-line turn, never trained on) and
  ``temperature: 0``. The person's hidden checks score each reply: *answered* (a reply in prose, not a
  tool-call or JSON dump, that is about what was asked), *brief* (at most 150 words), and for a workspace
  task *done* (the file is in OpenClaw's workspace with what was asked: only a tool call OpenClaw ran can
  make it). The checks never reach clawgym; the replies are kept for reading.

One JSON row per run goes to ``benchmarks/results/openclaw_learning.jsonl`` (every held-out reply of every
round, the person's turns with their latency, the train steps, wall time, CPU); ``--markdown`` writes
docs/results/openclaw_learning.md from the rows and runs nothing.

    .venv/bin/python benchmarks/openclaw_learning.py --minutes 60 --eval-every 20
    .venv/bin/python benchmarks/openclaw_learning.py --markdown docs/results/openclaw_learning.md
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from results_page import add_page_arguments, generated_by, write_page  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "openclaw_learning.jsonl"
PAGE = Path("docs/results/openclaw_learning.md")
BRIEF_WORDS = 150


@dataclass(frozen=True)
class Message:
    """What the person says, and what their hidden checks look for in the reply."""

    text: str
    topic: tuple[str, ...] = ()  # the reply is about the request when it names one of these (any case)
    file: str = ""  # a workspace task: the file the reply's tool call must make ...
    contents: tuple[str, ...] = ()  # ... holding each of these (any case)


# The person's requests (trained on through their corrections) and the held-out ones (never sent by the
# person; only the evaluation gateway sends them). Ordinary requests of an adult with a household and a
# child at school, no persona of the project's.
REQUESTS = (
    Message("What's a good way to keep basil alive on a windowsill?", ("basil", "water", "sun", "light", "soil")),
    Message("Can you draft a short message to my neighbour asking them to water my plants while I'm away next "
            "week?", ("water", "plant", "away", "neighbo")),
    Message("My son's homework: a train travels 180 km in 3 hours. What is its average speed?", ("60",)),
    Message("Explain what a mortgage is in simple terms.", ("loan", "house", "home", "bank", "interest")),
    Message("Write a two-sentence thank-you note for a colleague who covered my shift.", ("thank", "shift")),
    Message("Please create a file named shopping.txt in your workspace listing milk, eggs and bread.",
            file="shopping.txt", contents=("milk", "eggs", "bread")),
    Message("What should I pack for a weekend hiking trip?", ("water", "boot", "shoe", "jacket", "map", "snack")),
    Message("How do I politely decline a meeting invitation?", ("decline", "meeting", "thank", "unfortunately")),
    Message("Homework check: what is 15% of 240?", ("36",)),
    Message("Give me three ideas for a quick vegetarian dinner.",
            ("pasta", "salad", "bean", "tofu", "vegetable", "rice", "curry", "soup", "egg", "lentil")),
    Message("Save a file called todo.txt in the workspace with the line: call the dentist",
            file="todo.txt", contents=("dentist",)),
    Message("What is the difference between weather and climate?", ("climate", "weather")),
)
HELD_OUT = (
    Message("How often should I water a cactus?", ("cact", "water", "week", "month", "dry", "soil")),
    Message("Draft a short note to my landlord saying the kitchen tap is leaking.", ("tap", "leak", "kitchen")),
    Message("Homework: a rectangle is 7 cm by 4 cm. What is its area?", ("28",)),
    Message("Why is the sky blue? Explain it to a ten-year-old.", ("light", "sun", "scatter", "blue", "air")),
    Message("What are two tips for sleeping better?", ("sleep", "bed", "screen", "caffeine", "dark", "routine")),
    Message("Create a file named notes.txt in your workspace containing the words: buy stamps",
            file="notes.txt", contents=("stamps",)),
)
# The person's words when a reply misses, by what missed (several phrasings, drawn with the run's seed).
CORRECTIONS = {
    "prose": ("Please just answer me in plain words, not JSON or code.",
              "That's not an answer, that's code. Tell me in normal sentences please.",
              "I can't read that. No JSON please, just write the answer for me."),
    "on_topic": ("That doesn't answer what I asked. Please answer my question directly.",
                 "That's not what I asked about. Could you answer the question itself?"),
    "brief": ("Shorter, please: a few sentences is enough.", "Too long. Keep it brief."),
    "done": ("Please actually make the file in the workspace: use your write tool for it.",
             "The file isn't there. Use the tool to create it, then tell me it's done."),
}
THANKS = ("Thanks, that's helpful.", "Great, thank you!", "Perfect, thanks.")
CHECK_ORDER = ("prose", "on_topic", "brief", "done")

JSON_START = re.compile(r"^\s*(```[a-z]*\s*)?[\[{]")
CALL_SHAPE = re.compile(r"""["'](name|tool|function)["']\s*:""")
WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")
FENCE = re.compile(r"```.*?(```|\Z)", re.DOTALL)


def prose(reply: str) -> bool:
    """An answer a person can read: not a JSON value or tool-call dump, at least a few words outside code."""
    text = reply.strip()
    if not text or JSON_START.match(text) or (CALL_SHAPE.search(text) and "{" in text):
        return False
    return len(WORD.findall(FENCE.sub(" ", text))) >= 5


def checks(message: Message, reply: str, workspace: Path | None) -> dict[str, bool]:
    """The person's hidden checks of one reply (never seen by clawgym)."""
    result = {"prose": prose(reply)}
    if message.file:
        path = workspace / message.file if workspace is not None else None
        body = path.read_text(errors="replace").lower() if path is not None and path.is_file() else ""
        result["done"] = bool(body) and all(word in body for word in message.contents)
        return result
    lowered = reply.lower()
    result["on_topic"] = result["prose"] and any(word.lower() in lowered for word in message.topic)
    result["brief"] = len(WORD.findall(reply)) <= BRIEF_WORDS
    return result


def landed(message: Message, result: dict[str, bool]) -> bool:
    """Whether the reply did what was asked: the file made (a task), else an on-topic answer in prose."""
    return result["done"] if message.file else result["on_topic"]


def openclaw_config(eval_gateway: bool) -> dict:
    """The README's openclaw.json without its trimming (OpenClaw's default tools and bootstrap files); the
    evaluation gateway's provider also marks its requests side turns and asks for greedy replies."""
    from tests.openclaw_harness import default_profile_config

    config = default_profile_config()
    if eval_gateway:
        provider = config["models"]["providers"]["clawgym"]
        provider["headers"] = {"X-Turn-Type": "side"}
        model = provider["models"][0]["id"]
        config["agents"]["defaults"]["models"] = {f"clawgym/{model}": {"params": {"temperature": 0}}}
    return config


@dataclass
class Clock:
    started: float = field(default_factory=time.monotonic)

    def minutes(self) -> float:
        return (time.monotonic() - self.started) / 60


def evaluate(gateway, workspace: Path, round_name: str, clock: Clock, serving) -> dict:  # noqa: ANN001
    """One round of the held-out messages through the evaluation gateway, each in a fresh session."""
    replies, errors = [], []
    version = int(getattr(serving.policy, "version", 0) or 0)
    for index, message in enumerate(HELD_OUT):
        if message.file:
            (workspace / message.file).unlink(missing_ok=True)
        started = time.monotonic()
        try:
            reply = gateway.chat(f"eval-{round_name}-{index}", message.text)
        except Exception as exc:  # counted and reported, never hidden
            errors.append(f"{message.text[:40]}: {exc}")
            reply = ""
        result = checks(message, reply, workspace)
        replies.append({"message": message.text, "reply": reply, "checks": result,
                        "landed": landed(message, result), "latency_s": round(time.monotonic() - started, 1)})
    answered = [r for r, m in zip(replies, HELD_OUT) if not m.file]
    return {"round": round_name, "minute": round(clock.minutes(), 1), "policy_version": version,
            "landed": sum(r["landed"] for r in replies) / len(replies),
            "answered": sum(r["landed"] for r in answered) / len(answered),
            "prose": sum(r["checks"]["prose"] for r in replies) / len(replies),
            "brief": sum(r["checks"].get("brief", True) for r in answered) / len(answered),
            "tasks_done": sum(r["landed"] for r, m in zip(replies, HELD_OUT) if m.file),
            "errors": errors, "replies": replies}


def converse(gateway, workspace: Path, index: int, rng: random.Random) -> list[dict]:  # noqa: ANN001
    """One conversation of the person: a request, up to two corrections, and thanks when a reply lands."""
    message = REQUESTS[index % len(REQUESTS)]
    session = f"person-{index}"
    if message.file:
        (workspace / message.file).unlink(missing_ok=True)
    turns, text = [], message.text
    for attempt in range(3):
        started = time.monotonic()
        try:
            reply, error = gateway.chat(session, text), ""
        except Exception as exc:  # counted and reported, never hidden
            reply, error = "", str(exc)
        result = checks(message, reply, workspace)
        turns.append({"session": session, "said": text, "reply": reply, "checks": result, "error": error,
                      "latency_s": round(time.monotonic() - started, 1)})
        if error:
            break
        missed = [name for name in CHECK_ORDER if name in result and not result[name]]
        if not missed or attempt == 2:
            if not missed:
                turns.append({"session": session, "said": rng.choice(THANKS), "thanks": True})
            break
        text = rng.choice(CORRECTIONS[missed[0]])
    if turns[-1].get("thanks"):
        started = time.monotonic()
        try:
            gateway.chat(session, turns[-1]["said"])
            turns[-1]["error"] = ""
        except Exception as exc:
            turns[-1]["error"] = str(exc)
        turns[-1]["latency_s"] = round(time.monotonic() - started, 1)
    return turns


def step_records(out: Path) -> list[dict]:
    path = out / "train_steps.jsonl"
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    keep = ("step", "published", "policy_version", "seconds", "samples", "groups")
    views = []
    for row in rows:
        view = {k: row.get(k) for k in keep if k in row}
        gate = row.get("gate") or {}
        view.update(gate_candidate=gate.get("candidate"), gate_serving=gate.get("serving"),
                    gate_reason=gate.get("reason"), gate_s=gate.get("seconds"),
                    alarms=[a.get("signal") for a in row.get("alarms", [])])
        views.append(view)
    return views


def run(args: argparse.Namespace) -> dict:
    from clawgym.inference.server import BackgroundServer
    from clawgym.launchers import resolve
    from clawgym.rl.launch import load_config
    from clawgym.serve.main import build_serving
    from learning_from_conversation import git_commit, host
    from tests.openclaw_harness import openclaw_gateway

    root = Path(tempfile.mkdtemp(prefix="clawgym-openclaw-learning-"))
    out = root / "run"
    sets = [f"loop.output_dir={out}", f"loop.seed={args.seed}", *args.set]
    config = load_config(resolve("chat"), sets)
    serving = build_serving(config)
    server = BackgroundServer(serving.app)
    server.start()
    rng = random.Random(args.seed)
    rounds, person_turns, conversations = [], [], 0
    clock = Clock()
    try:
        with openclaw_gateway(root / "eval", server.url + "/v1", "sk-clawgym-local",
                              template=openclaw_config(eval_gateway=True), timeout_s=3600.0) as evaluator, \
             openclaw_gateway(root / "person", server.url + "/v1", "sk-clawgym-local",
                              template=openclaw_config(eval_gateway=False), timeout_s=3600.0) as person:
            eval_workspace, person_workspace = root / "eval" / "work", root / "person" / "work"
            rounds.append(evaluate(evaluator, eval_workspace, "before", clock, serving))
            log_round(rounds[-1])
            clock = Clock()  # the conversation's minutes start after the first round
            next_eval = args.eval_every
            while clock.minutes() < args.minutes:
                turns = converse(person, person_workspace, conversations, rng)
                conversations += 1
                person_turns += turns
                for turn in turns:
                    print(f"[{clock.minutes():5.1f} min] person: {turn['said'][:60]!r} -> "
                          f"{turn.get('reply', '')[:70]!r} ({turn.get('latency_s')} s)", flush=True)
                if clock.minutes() >= next_eval and clock.minutes() < args.minutes:
                    rounds.append(evaluate(evaluator, eval_workspace, f"{next_eval:g} min", clock, serving))
                    log_round(rounds[-1])
                    next_eval += args.eval_every
            rounds.append(evaluate(evaluator, eval_workspace, "after", clock, serving))
            log_round(rounds[-1])
    finally:
        server.stop()
    latencies = [t["latency_s"] for t in person_turns if "latency_s" in t]
    errors = [t["error"] for t in person_turns if t.get("error")] + [e for r in rounds for e in r["errors"]]
    steps = step_records(out)
    return {"seed": args.seed, "sets": args.set, "model": config.policy.model, "method": config.method,
            "profile": "default", "minutes": args.minutes, "conversations": conversations,
            "person_turns": person_turns, "rounds": rounds, "steps": steps,
            "published": sum(1 for s in steps if s.get("published", True)),
            "later_turn_p50_s": statistics.median(latencies[1:]) if len(latencies) > 1 else None,
            "first_turn_s": latencies[0] if latencies else None, "errors": errors,
            "recorded_turns": serving.gateway.stats.main_turns, "side_turns": serving.gateway.stats.side_turns,
            "wall_s": round(time.monotonic() - clock.started, 1), "host": host(), "commit": git_commit()}


def log_round(row: dict) -> None:
    print(f"== held-out round {row['round']} (minute {row['minute']}, serving v{row['policy_version']}): answered "
          f"{row['answered']:.2f}, prose {row['prose']:.2f}, brief {row['brief']:.2f}, tasks done "
          f"{row['tasks_done']}, errors {len(row['errors'])}", flush=True)
    for reply in row["replies"]:
        print(f"   {reply['message'][:50]!r} -> {reply['reply'][:100]!r} {reply['checks']}", flush=True)


def markdown(path: Path = RESULTS) -> str:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    lines = ["# The real OpenClaw, a person who corrects it, and whether it gets better", "",
             generated_by("openclaw_learning.py", PAGE, "benchmarks/results/openclaw_learning.jsonl"), "",
             "`clawgym serve --config chat` (training on, the shipped recipe unless the row's overrides say) behind",
             "the real OpenClaw 2026.9.6 on its default profile (12 tools, bootstrap files: ~12.5k-token requests).",
             "A scripted person talks through OpenClaw's HTTP endpoint and corrects misses in their own words;",
             "held-out messages (disjoint) go through a second OpenClaw gateway as side turns, greedy, never",
             "trained on. *answered*: held-out replies in prose and on topic (5 questions and drafts); *tasks*:",
             "the held-out workspace task done by a tool call OpenClaw ran; *brief*: at most "
             f"{BRIEF_WORDS} words.", "",
             "    .venv/bin/python benchmarks/openclaw_learning.py --minutes 60 --eval-every 20", "",
             "| seed | overrides | minutes | conversations / person turns | train steps (published) "
             "| answered: before → after | prose | task done | later turns p50 | errors | wall | CPU | commit |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        first, last = r["rounds"][0], r["rounds"][-1]
        lines.append(
            f"| {r['seed']} | {' '.join(r['sets']) or 'shipped'} | {r['minutes']:g} | {r['conversations']} / "
            f"{len(r['person_turns'])} | {len(r['steps'])} ({r['published']}) | {first['answered']:.2f} → "
            f"{last['answered']:.2f} | {first['prose']:.2f} → {last['prose']:.2f} | {first['tasks_done']} → "
            f"{last['tasks_done']} | {r['later_turn_p50_s']:.1f} s | {len(r['errors'])} | "
            f"{r['wall_s'] / 60:.0f} min | {r['host']} | {r['commit']} |")
    for r in rows:
        lines += ["", f"## Seed {r['seed']}{': ' + ' '.join(r['sets']) if r['sets'] else ''}", "",
                  "Held-out rounds (minute of conversation, the version serving):", ""]
        lines += [f"- {x['round']} (minute {x['minute']}, v{x['policy_version']}): answered {x['answered']:.2f}, "
                  f"prose {x['prose']:.2f}, brief {x['brief']:.2f}, task done {x['tasks_done']}" for x in r["rounds"]]
        for x in (r["rounds"][0], r["rounds"][-1]):
            lines += ["", f"Replies, {x['round']}:", ""]
            for reply in x["replies"]:
                text = " ".join(reply["reply"].split())
                text = text if len(text) <= 300 else text[:300] + " …"
                mark = "✓" if reply["landed"] else "✗"
                lines.append(f"- {mark} *{reply['message']}* → `{text}`")
        if r.get("note"):
            lines += ["", r["note"]]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0, help="minutes of the person's conversation")
    parser.add_argument("--eval-every", type=float, default=20.0, help="minutes between held-out rounds")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a chat launcher override")
    add_page_arguments(parser, RESULTS, PAGE)
    args = parser.parse_args()
    if write_page(args, markdown):
        return 0
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    row = run(args)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    with args.results.open("a") as handle:
        handle.write(json.dumps(row) + "\n")
    print(f"\nrow appended to {args.results}; answered {row['rounds'][0]['answered']:.2f} -> "
          f"{row['rounds'][-1]['answered']:.2f}, {len(row['steps'])} train steps, {len(row['errors'])} errors")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
