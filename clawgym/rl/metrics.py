"""Training metrics: one JSON line per step (the record), TensorBoard scalars, and a PNG learning curve.

The JSONL is the source of truth (append-only, so a resumed run continues it); TensorBoard and the
PNG are views of it. TensorBoard is optional: without the ``tensorboard`` package it is skipped with
one warning. The plot uses matplotlib's Agg backend (no display needed).
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

if TYPE_CHECKING:
    from torch.utils.tensorboard import SummaryWriter

    from clawgym.rl.types import JSONObject

logger = logging.getLogger(__name__)

CURVE_FILE = "learning_curve.png"


def _numeric(metrics: Mapping[str, object]) -> dict[str, float]:
    out = {}
    for key, value in metrics.items():
        if isinstance(value, bool):
            value = float(value)
        if isinstance(value, (int, float)) and math.isfinite(float(value)):
            out[key] = float(value)
    return out


class MetricsLogger:
    """Writes ``metrics.jsonl`` (+ ``tensorboard/``) under ``out_dir``; :meth:`plot` draws the curve."""

    def __init__(self, out_dir: str | Path, tensorboard: bool = True) -> None:
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.out_dir / "metrics.jsonl"
        self._tb: SummaryWriter | None = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self._tb = SummaryWriter(log_dir=str(self.out_dir / "tensorboard"))
            except Exception as exc:  # the package is optional
                logger.warning("TensorBoard logging disabled: %s", exc)

    def log(self, step: int, metrics: Mapping[str, object], kind: str = "train") -> None:
        """Append one record ``{"kind", "step", ...metrics}`` and mirror numbers to TensorBoard."""
        record = {"kind": kind, "step": int(step), **metrics}
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, default=float) + "\n")
        if self._tb is not None:
            for key, value in _numeric(metrics).items():
                self._tb.add_scalar(f"{kind}/{key}", value, int(step))
            self._tb.flush()

    def records(self, kind: str | None = None) -> list[JSONObject]:
        """The logged records (a torn last line is skipped); the last one wins for a repeated step."""
        if not self.path.exists():
            return []
        by_key: dict[tuple[str, int], JSONObject] = {}
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if kind is None or record.get("kind") == kind:
                by_key[(record.get("kind", ""), int(record.get("step", 0)))] = record
        return sorted(by_key.values(), key=lambda r: (r["step"], r.get("kind", "")))

    def plot(self, path: str | Path | None = None, title: str = "clawgym learning curve") -> Path:
        """Train reward per step (raw and smoothed) and eval reward / success; returns the PNG path."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        path = Path(path) if path is not None else self.out_dir / CURVE_FILE
        train = self.records("train")
        evals = self.records("eval")
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        ax = axes[0]
        if train:
            steps = [r["step"] for r in train]
            rewards = [r.get("reward_mean", float("nan")) for r in train]
            ax.plot(steps, rewards, color="tab:blue", alpha=0.35, label="train reward (batch mean)")
            ax.plot(steps, _ema(rewards, 0.7), color="tab:blue", label="train reward (smoothed)")
        if evals:
            ax.plot([r["step"] for r in evals], [r.get("eval_reward", float("nan")) for r in evals],
                    "o-", color="tab:red", label="eval reward (held-out)")
        ax.set_xlabel("train step")
        ax.set_ylabel("reward")
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize=8)
        ax = axes[1]
        if train:
            ax.plot([r["step"] for r in train], _ema([r.get("success_rate", float("nan")) for r in train], 0.7),
                    color="tab:green", label="train success (smoothed)")
        if evals:
            ax.plot([r["step"] for r in evals], [r.get("eval_success", float("nan")) for r in evals],
                    "o-", color="tab:orange", label="eval success (held-out)")
        ax.set_xlabel("train step")
        ax.set_ylabel("success rate")
        ax.set_ylim(-0.05, 1.05)
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize=8)
        fig.suptitle(title)
        fig.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return path

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()
            self._tb = None


def _ema(values: list[float], alpha: float) -> list[float]:
    out, current = [], None
    for value in values:
        if value is None or not math.isfinite(value):
            out.append(current if current is not None else float("nan"))
            continue
        current = value if current is None else alpha * current + (1 - alpha) * value
        out.append(current)
    return out
