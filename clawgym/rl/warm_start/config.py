"""What the warm start is told (:class:`WarmStartConfig`): the launcher's ``warm_start`` section is its fields.

A light module (no torch, no envs), so config checks import it freely; the stage is :mod:`.stage`.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Literal


@dataclass
class WarmStartConfig:
    """The ``warm_start`` section of a launcher (types and defaults defined here only)."""

    enabled: bool = False
    source: Literal["oracle", "self", "oracle+self"] = "oracle"
    episodes: int = 256  # oracle episodes, over the training tasks
    self_attempts: int = 4  # sampled episodes per training task (source self)
    self_tasks: int | None = 64  # training tasks the policy tries (None: all)
    epochs: int = 2
    batch_size: int = 8  # samples (episodes) per train_step; the trainer steps every micro_batch_size x grad_accum
    workers: int = 4  # oracle episodes played at once (one env each)
    max_minutes: float | None = None  # the SFT steps stop after the one that crosses this (data collection apart)
    lr: float | None = None  # the SFT steps' learning rate (None: the trainer's, which RL then keeps)

    def __post_init__(self) -> None:
        checks = {
            "source": self.source in typing.get_args(typing.get_type_hints(WarmStartConfig)["source"]),
            "episodes": self.episodes >= 0,
            "self_attempts": self.self_attempts >= 1,
            "self_tasks": self.self_tasks is None or self.self_tasks >= 1,
            "epochs": self.epochs >= 1,
            "batch_size": self.batch_size >= 1,
            "workers": self.workers >= 1,
            "max_minutes": self.max_minutes is None or self.max_minutes > 0,
            "lr": self.lr is None or self.lr > 0,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            raise ValueError("invalid warm_start settings: " + ", ".join(f"{n}={getattr(self, n)!r}" for n in bad))
