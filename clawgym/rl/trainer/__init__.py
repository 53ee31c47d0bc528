"""Trainers: ``torch_trainer`` (HF model, optional LoRA; CPU or one GPU) and ``megatron`` (GPU partition).

:class:`Trainer` (``base``) is what the async loop and the personal trainer call on a trainer.

``config`` (what a step depends on), ``batching`` (padded batches, response log-probs) and ``lora`` (peft
adapters) are the torch trainer's parts; ``samples``, ``checkpoint`` and ``transport`` serve both.

Both optimise the same losses (:mod:`clawgym.rl.losses`). The megatron module is not imported here:
it needs megatron-core and CUDA, which the CPU install does not have.
"""

from clawgym.rl.trainer.base import Trainer
from clawgym.rl.trainer.config import LoraSettings, TrainerConfig
from clawgym.rl.trainer.torch_trainer import TorchTrainer

__all__ = ["LoraSettings", "TorchTrainer", "Trainer", "TrainerConfig"]
