"""The serve section (``clawgym serve``) against the other sections: the rules RunConfig's validator runs.

A rule of one serve key alone is the section's own (:class:`~clawgym.rl.launch.schema.ServeSection`); these
read other sections too: per-user adapters are LoRA adapters on a full-precision base, hindsight groups need a
GRPO method, shared adapters and the in-process hf model, and the wishes reach a teacher only where the method
has one. They are checked in the order ``clawgym serve`` has always told them, and every broken one is in the error.
"""

from __future__ import annotations

from typing import Any

from clawgym.rl.methods import PROB_JUDGES, USES_HINTS

# ``config`` is a RunConfig and ``serve`` its ServeSection (the schema imports this module, as it does teacher.py)


def serve_problem(config: Any) -> str | None:
    """Every rule of the serve section that another section breaks, in one message (None: it can serve)."""
    problems = list(serve_problems(config))
    return "; and ".join(problems) if problems else None


def serve_problems(config: Any):
    """Yield each broken rule, so that one ``--check`` names every key to change instead of one per try."""
    serve, method = config.serve, config.method
    if serve.adapters == "per_user" and not config.trainer.lora.enabled:
        yield "serve.adapters: per_user trains one LoRA adapter per user: set trainer.lora.enabled: true"
    if serve.adapters == "per_user" and config.policy.quantize != "none":
        yield ("serve.adapters: per_user serves LoRA adapters on the full-precision base: "
               "set policy.quantize: none")
    if serve.adapters == "per_user" and config.judge.model == "policy" and any(
            part.strip() in PROB_JUDGES for part in config.judge.type.split(",")):
        yield ("the prob judges read label probabilities from an in-process model, and with serve.adapters: per_user "
               "the served base model is shared by every user's adapter: give the judge a model of its own "
               "(judge.model: qwen2.5-coder-0.5b) or use judge.type: rules")
    if serve.hindsight_k:
        why = hindsight_problem(config)
        if why:
            yield f"serve.hindsight_k {why}; or turn the groups off with serve.hindsight_k: 0"
        sizes = hindsight_size_problem(serve)
        if sizes:
            yield f"serve.hindsight_*: {sizes}"
    # (per-user adapters are in-process only, sglang_problems says: each person's gate decodes on a spare slot)
    if serve.gate.enabled and serve.adapters == "shared" and (config.policy.backend != "hf" or config.gpu.enabled):
        yield ("serve.gate decodes each step's weights on a copy of the in-process hf model: set "
               "policy.backend: hf and gpu.enabled: false, or serve.gate.enabled: false")
    if serve.teacher_wishes and method not in USES_HINTS:
        yield ("serve.teacher_wishes puts the wishes in the OPD teacher's context: "
               f"method {method!r} has no teacher (use one of {sorted(USES_HINTS)})")
    if serve.teacher_wishes and serve.adapters != "shared":
        yield "serve.teacher_wishes works with serve.adapters: shared"


def hindsight_problem(config: Any) -> str | None:
    """Why hindsight groups (``serve.hindsight_k``) cannot run with the other sections, or None."""
    if config.method not in ("grpo", "hybrid"):
        return (f"trains GRPO groups scored by the rubric judge: set method: grpo (or hybrid, which adds the OPD "
                f"term of a teacher reading the wishes), not {config.method!r}")
    if config.serve.adapters != "shared":
        return "works with serve.adapters: shared (per-user adapters have no rubric judge yet)"
    if config.policy.backend != "hf" or config.gpu.enabled:
        return ("reads the rubric judge's label probabilities from an in-process hf model: set policy.backend: hf "
                "and gpu.enabled: false")
    return None


def hindsight_size_problem(serve: Any) -> str | None:
    """What of the group's sizes ``HindsightSettings`` (clawgym.personal.hindsight) would refuse, or None."""
    k, prompted, answered = serve.hindsight_k, serve.hindsight_prompted, serve.hindsight_answered
    plain = serve.hindsight_plain
    if k < 2:
        return f"hindsight groups need k >= 2 replies (the person's and a sibling), got {k}"
    if not 0.0 <= serve.hindsight_verdict_weight <= 1.0:
        return f"verdict_weight must be within [0, 1], got {serve.hindsight_verdict_weight}"
    if serve.max_tokens < 1 or serve.hindsight_max_queued < 1:
        return "max_tokens and max_queued must be >= 1"
    if not 0 <= prompted <= k - 1:
        return f"prompted siblings must be within [0, k - 1 = {k - 1}], got {prompted}"
    if answered < 0 or prompted + answered > k - 1:
        return f"prompted + answered siblings must be within [0, k - 1 = {k - 1}], got {prompted} + {answered}"
    if plain < 0 or prompted + answered + plain > k - 1:
        return (f"prompted + answered + plain siblings must be within [0, k - 1 = {k - 1}], "
                f"got {prompted} + {answered} + {plain}")
    return None
