"""The names of the training methods (see :mod:`clawgym.rl.losses` for their formulas), of the OPD
teachers (see :mod:`clawgym.rl.launch.teacher`) and of the judges a judge spec joins: each list is defined
here once (methods and teachers as the ``Literal`` type :class:`~clawgym.rl.trainer.TrainerConfig` declares
its field with) and read everywhere else from it; a light module, so config checks need no judge code."""

from __future__ import annotations

import logging
from typing import Literal, get_args

# The training methods. ``grpo`` trains on verdict/reward advantages (group-normalised, or raw for
# personal chat); it was called ``binary`` (OpenClaw-RL's "Binary RL"), kept as an alias until ALIASES_UNTIL.
# ``opd_topk`` distils the hinted teacher's top-K distribution at every response position (a dense
# signal: it can raise a token nobody sampled) plus PPO-clip on the verdict advantage; torch trainer only.
# ``sft`` trains on demonstrations (the warm start, :mod:`clawgym.rl.warm_start`): -log pi on the assistant's
# tokens, no advantage; as a run's method it is the warm start alone, no RL steps.
Method = Literal["grpo", "opd", "hybrid", "opd_topk", "sft"]
METHODS: tuple[str, ...] = get_args(Method)
USES_HINTS = ("opd", "hybrid", "opd_topk")  # their samples carry the hint judge's hint for the OPD teacher
NEEDS_HINT = ("opd", "opd_topk")  # a turn without a hint teaches them nothing
_METHOD_ALIASES = {"binary": "grpo"}
ALIASES_UNTIL = "2027-06-01"  # the old names of a method and a teacher go in the first release after this date

# The OPD teacher (``trainer.teacher``): whose log-probabilities the OPD term is measured against.
# ``current`` is the older name of ``policy`` (kept until ALIASES_UNTIL).
Teacher = Literal["initial", "policy", "judge"]
TEACHERS: tuple[str, ...] = get_args(Teacher)
TEACHER_ALIASES = {"current": "policy"}


def canonical_method(name: str) -> str:
    """The current name of a training method; an old alias is accepted with a deprecation message."""
    if name in _METHOD_ALIASES:
        new = _METHOD_ALIASES[name]
        logging.getLogger(__name__).warning("method %r is deprecated and goes after %s; use %r (same behaviour)",
                                            name, ALIASES_UNTIL, new)
        return new
    return name


def canonical_teacher(name: str) -> str:
    """The current name of an OPD teacher (``current`` is ``policy``)."""
    return TEACHER_ALIASES.get(name, name)


# The judges a judge spec (``judge.type``, ``--judge``) joins with commas; see clawgym.rl.judge.stage.make_judges.
JUDGE_TYPES = ("rules", "prm", "hint", "rules+prm", "prob", "probhint")
MODEL_JUDGES = tuple(part for part in JUDGE_TYPES if part != "rules")  # the ones that need a judge model
PROB_JUDGES = ("prob", "probhint")  # label-token probabilities of an in-process hf model
