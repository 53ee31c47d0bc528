"""What the rest of clawgym calls on a trainer: the :class:`Trainer` protocol.

The async loop (:mod:`clawgym.rl.loop`), the personal trainer (:mod:`clawgym.personal.trainer`) and
the weight transports (:func:`~clawgym.rl.trainer.transport.served_weights`) see nothing else of a trainer:
a train step on a batch of samples, a version that counts the steps, the weights to publish (merged, or the
LoRA adapters alone), and a checkpoint. :class:`~clawgym.rl.trainer.TorchTrainer` implements it.
:class:`~clawgym.rl.trainer.megatron.MegatronTrainer` has the same methods, but its ``config`` is a
``MegatronConfig`` that holds the :class:`TrainerConfig` as ``config.trainer``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Protocol, Sequence

from clawgym.core.policy import Policy

if TYPE_CHECKING:
    import torch

    from clawgym.rl.trainer.config import TrainerConfig
    from clawgym.rl.types import Sample


class Trainer(Protocol):
    """Trains the policy on judged samples; its weights are published to the serving policy after each step."""

    config: TrainerConfig  # read: ``method`` and ``temperature`` (the logprobs' sampling temperature)
    version: int  # train steps taken (one weight publication each); restored by load_checkpoint

    def train_step(self, samples: Sequence[Sample], method: str | None = None) -> dict[str, float]:
        """One optimiser step on ``samples``; returns its metrics. ``method`` overrides the configured one
        for this step (``"sft"``: the warm start's supervised steps before RL, on the same weights)."""
        ...

    def export_weights(self) -> Mapping[str, torch.Tensor] | None:
        """The full HF state dict for serving (LoRA merged); None on ranks that do not publish."""
        ...

    def export_adapters(self) -> Mapping[str, torch.Tensor] | None:
        """The LoRA adapters alone, in peft names (what an adapter transport sends); None on other ranks."""
        ...

    def save_checkpoint(self, path: str | Path) -> Path | None:
        """Weights, optimiser and version in one directory, written atomically."""
        ...

    def load_checkpoint(self, path: str | Path) -> None:
        """Restore a checkpoint written by :meth:`save_checkpoint` (same base model and config)."""
        ...


class UpdatablePolicy(Policy, Protocol):
    """A served policy that takes new weights (hf, sglang): what the loop and the personal trainer publish to."""

    async def update_weights(self, weights: Mapping[str, torch.Tensor], *, version: int | None = None) -> int:
        """Serve ``weights`` (a full state dict, or LoRA adapters where the transport sends those) as ``version``
        (None: the next one); returns the version now served."""
        ...
