"""The names of the training methods (see :mod:`clawgym.rl.losses` for their formulas)."""

from __future__ import annotations

import logging

# The training methods. ``grpo`` trains on verdict/reward advantages (group-normalised, or raw for
# personal chat); it was called ``binary`` (OpenClaw-RL's "Binary RL"), which is kept as an alias.
METHODS = ("grpo", "opd", "hybrid")
_METHOD_ALIASES = {"binary": "grpo"}


def canonical_method(name: str) -> str:
    """The current name of a training method; an old alias is accepted with a deprecation message."""
    if name in _METHOD_ALIASES:
        new = _METHOD_ALIASES[name]
        logging.getLogger(__name__).warning("method %r is deprecated; use %r (same behaviour)", name, new)
        return new
    return name
