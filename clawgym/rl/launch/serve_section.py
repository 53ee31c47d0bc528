"""The ``serve`` section of the config: the gateway, its users, the personal trainer, its publish gate and alarms.

``clawgym train`` checks it like any section and uses none of it; the rules that also read other sections are
:func:`~clawgym.rl.launch.serve_rules.serve_problem`'s.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from clawgym.rl.launch.section import ConfigError, Section

Baseline = Literal["batch", "none"]  # batch: A = verdict - the step's mean verdict; none: A = verdict (OpenClaw-RL)
Adapters = Literal["shared", "per_user"]  # one set of weights for everyone | one LoRA adapter per user


class GateSection(Section):
    """The publish gate (:mod:`clawgym.personal.gate`): a step's weights serve only when, on a held-back slice
    of the people's own requests (every ``every``-th judged turn of each person, up to ``requests``, never
    trained on), the rubric judge scores their replies (greedy, or ``sampled`` as served) at least the serving
    weights' minus ``margin``."""

    enabled: bool = False
    every: int = Field(4, ge=1)
    requests: int = Field(4, ge=1)
    margin: float = Field(0.0, ge=0.0)
    max_tokens: int = Field(256, ge=1)  # the replayed replies' length limit (the gate's cost)
    # replay the new weights from the serving weights' reply to the same request (clawgym.inference.draft_replay):
    # the same greedy replies, the tokens both weights choose alike checked in one pass instead of decoded
    draft: bool = True
    # replay each request at its own temperature and top-p, seeded by the turn (both weights draw the same random
    # numbers), as the person is served: a collapse that shows only in sampled replies (the code reviewer's served
    # replies fell to one word while the greedy replays kept half their length) reaches the alarms; no drafts then
    sampled: bool = False


class AlarmSection(Section):
    """Collapse alarms (:mod:`clawgym.personal.alarms`): a step whose signal passes its threshold is not published
    and pauses training until someone resumes it; None switches a signal's alarm off.

    The defaults leave room around a healthy run of the chat launcher's recipe on the default model
    (benchmarks/bad_update.py, arm shipped: entropy 0.15-0.32, the gate's replies 0.59-1.01 of the first served
    weights' length while the person asked for shorter ones, repetition 0.14-0.20, similarity 0.01-0.05); the
    harmful arm's collapsed replies repeated themselves (0.99) and were all alike (1.00)."""

    # token entropy of the step's batch under the new weights (nats): off by default, since its level is the
    # model's and the temperature's (0.15-0.32 above; a random-init model's is ~10)
    min_entropy: float | None = None
    max_entropy: float | None = None
    max_kl: float | None = None  # k3 KL to the initial weights on the step's batch (trainer.monitor_kl)
    min_length_ratio: float | None = 0.25  # the gate's replies' mean length / the first served weights'
    max_length_ratio: float | None = 3.0
    # how much a gate reply's share of repeated word 3-grams exceeds the first served weights' reply to the same
    # request (under OpenClaw's default profile the default model's own replies repeat 0.7 of theirs)
    max_repetition: float | None = 0.5
    max_similarity: float | None = 0.8  # mean 3-gram overlap between the gate's replies to different requests
    max_refusals: int | None = 3  # more gate refusals in a row than this


class ServeSection(Section):
    """``clawgym serve``: the gateway, its users and the personal trainer (clawgym.serve.main); train checks it
    like any section and uses none of it.

    The rules that also read other sections (LoRA for per-user adapters, the method hindsight groups and the
    teacher's wishes need, ...) are :func:`~clawgym.rl.launch.serve_rules.serve_problem`, which RunConfig's
    validator runs when the config is loaded for serving.
    """

    host: str = "127.0.0.1"
    port: int = 8000
    api_key: str | None = None
    log: str | None = None  # default: <loop.output_dir>/turns.jsonl
    idle_timeout_s: float = 1800.0
    train: bool = True
    batch_size: int = 8
    max_staleness: int = 2
    baseline: Baseline = "batch"
    max_tokens: int = 512
    # a reply that calls a tool the request does not offer is answered again in words (clawgym/serve/call_guard.py)
    call_guard: bool = True
    # OpenClaw's internal-context block, sent after the person's message, is read before it: the model answers
    # the person (clawgym.core.chat_protocol.person_last)
    person_last: bool = True
    adapters: Adapters = "shared"
    users: dict[str, str] = Field(default_factory=dict)  # API key -> user id
    admin_key: str | None = None
    max_users: int = 16  # adapter slots (per_user)
    # hindsight GRPO (clawgym.personal.hindsight): 0 = off; k >= 2 replies a group, the person's included
    hindsight_k: int = 0
    hindsight_verdict_weight: float = 0.5  # the share of the person's verdict in their reply's reward
    hindsight_max_queued: int = 8  # judged turns waiting for their group; more are skipped
    hindsight_prompted: int = 0  # siblings sampled with the user's wishes in their prompt (of hindsight_k - 1)
    # who samples them: "" the served policy, or a model of the same tokenizer (e.g. qwen2.5-coder-1.5b)
    hindsight_prompted_model: str = ""
    # siblings the policy writes once the user's next message is in its context (of hindsight_k - 1 - prompted)
    hindsight_answered: int = 0
    # siblings the policy writes to the conversation alone, the user's wishes in it: without the client's system
    # prompt, tool schemas and internal blocks (of hindsight_k - 1 - prompted - answered); see personal/hindsight.py
    hindsight_plain: int = 0
    # the rubric meets no wish with a reply that declines the request ("I'm sorry, but I can't assist with that.")
    hindsight_refusals_fail: bool = False
    # the rubric meets no wish with a reply its judge model says does not answer the request (one more question a
    # reply, clawgym.personal.rubric.ANSWERS): wishes about form alone are not met by a one-word reply
    hindsight_answers_request: bool = False
    # the OPD teacher reads every remembered wish of the user (clawgym.personal.wish_memory), not only the turn's hint
    teacher_wishes: bool = False
    # each new wish is compiled once, in the background, into a tested Python check the rubric judge runs in a
    # bubblewrap sandbox before its cues and its model question (clawgym.personal.wish_checks)
    wish_checks: bool = False
    # the rubric's hand-written cues and request facts (clawgym.personal.rubric_cues, request_facts) decide what they
    # can before the model's question; false leaves the compiled checks and the question alone (no code written for
    # any particular wish)
    rubric_cues: bool = True
    gate: GateSection = Field(default_factory=GateSection)
    alarms: AlarmSection = Field(default_factory=AlarmSection)
    keep_versions: int = Field(8, ge=1)  # published weights kept for rollback (shared adapters)

    @field_validator("users", mode="before")
    @classmethod
    def _a_mapping(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            raise ConfigError("serve.users must map API keys to user ids")
        return value
