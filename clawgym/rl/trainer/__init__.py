"""Trainers: ``torch_trainer`` (HF model, optional LoRA; CPU or one GPU) and ``megatron`` (GPU partition).

:class:`Trainer` (``base``) is what the async loop and the personal trainer call on a trainer.

``config`` (what a step depends on), ``batching`` (padded batches, response log-probs) and ``lora`` (peft
adapters) are the torch trainer's parts; ``samples``, ``checkpoint`` and ``transport`` serve both.

Both optimise the same losses (:mod:`clawgym.rl.losses`). The megatron module is not imported here:
it needs megatron-core and CUDA, which the CPU install does not have. ``TorchTrainer`` is imported when
first asked for, so the plain configs import without torch (the launch schema takes its fields from them).
"""

from typing import Any

from clawgym.rl.trainer.base import Trainer
from clawgym.rl.trainer.config import LoraSettings, TrainerConfig

__all__ = ["LoraSettings", "TorchTrainer", "Trainer", "TrainerConfig"]


def __getattr__(name: str) -> Any:
    if name == "TorchTrainer":
        from clawgym.rl.trainer.torch_trainer import TorchTrainer

        return TorchTrainer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
