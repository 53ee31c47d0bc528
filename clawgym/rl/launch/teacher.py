"""The OPD teacher (``trainer.teacher``): whose log-probabilities of the student's reply, under the
hinted prompt, the OPD and Hybrid advantages are measured against.

- ``initial`` (default): the frozen starting weights (LoRA adapters disabled, or a frozen copy). A
  stable teacher: the advantage cannot drift as the student changes.
- ``policy``: the current policy weights with the hint (no gradient). What the teacher knows grows
  with the student. ``current`` is accepted as its older name.
- ``judge``: the judge model (OpenClaw-RL's choice). With ``judge.model: policy`` that is the current
  policy, i.e. the same as ``policy``; with a separate local ``judge.model`` (``judge.backend: hf``),
  that frozen model, which must share the policy's tokenizer because it scores the student's own
  token ids. An OpenAI-compatible judge endpoint cannot be the teacher: the chat API returns no
  log-probabilities of *given* tokens. The GPU partition's SGLang judge server is not wired to the
  trainer either. Both are refused as config errors with what to set instead.
"""

from __future__ import annotations

from typing import Any

from clawgym.rl.methods import USES_HINTS, canonical_teacher  # the names: defined in rl/methods.py


def teacher_problems(config: Any) -> list[str]:
    """Config errors of ``trainer.teacher`` (called from the schema's cross-field checks)."""
    teacher = canonical_teacher(config.trainer.teacher)
    if teacher != "judge" or config.judge.model == "policy":
        return []  # initial, policy, or a name the schema's closed-choice check reports
    if config.judge.backend == "openai":
        return ["trainer.teacher judge: an OpenAI-compatible judge endpoint returns no log-probabilities of the "
                "student's tokens, so it cannot be the OPD teacher; use judge.backend hf with a local judge.model, "
                "or trainer.teacher initial / policy"]
    if config.gpu.enabled:
        return ["trainer.teacher judge with a separate judge.model runs in process only (CPU or one device); on the "
                "GPU partition the judge is an SGLang server that returns no teacher log-probabilities: use "
                "trainer.teacher initial or policy, or judge.model policy"]
    return []


def trainer_teacher(config: Any) -> str:
    """The trainer's teacher setting: ``judge`` only when a separate judge model will be handed to it."""
    teacher = canonical_teacher(config.trainer.teacher)
    if teacher == "judge" and config.judge.model == "policy":
        return "policy"  # the judge is the current policy
    if teacher == "judge" and config.method not in USES_HINTS:
        return "initial"  # no OPD term: the teacher is never asked
    return teacher
