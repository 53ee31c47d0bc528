"""Many people, one base model: one LoRA adapter per user, trained only on that user's turns.

:class:`UserAdapters` owns the mapping user → adapter slot of the served
:class:`~clawgym.inference.multi_adapter.MultiAdapterHFPolicy` and each user's training state on disk
(``<root>/<user>/checkpoint``: the LoRA weights, the optimiser state, steps). A user's slot is created
on first use from the base weights (an empty adapter answers exactly as the base model).

:class:`UserAdapterTrainer` is the personal trainer of the ``serve.adapters: per_user`` mode. One
:class:`~clawgym.rl.trainer.TorchTrainer` (LoRA) is shared: before a user's step it loads that user's
checkpoint (or the initial adapter), trains on that user's samples only, saves the checkpoint, and
publishes the adapter into the user's slot between two decoding steps. Users with enough pending
turns take turns (round-robin), so a talkative user cannot starve a quiet one.

Why checkpoints on disk rather than a database: the adapter and optimiser state are tensors (tens of
MB per user for SmolLM2 at r=16), written atomically once per step; after a restart every user's
adapter is restored from its directory, and one corrupt directory only sends that user back to the
base model (with a warning), never the others.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from clawgym.personal.trainer import BackgroundTrainer, OnError, OnStep, StepRecord, sample_from_turn, step_record
from clawgym.rl.types import JSONObject, Sample, Turn, read_jsonl

if TYPE_CHECKING:
    import torch

    from clawgym.inference.multi_adapter import AdapterPolicy, MultiAdapterHFPolicy
    from clawgym.rl.trainer import TorchTrainer

logger = logging.getLogger(__name__)

USER_ID = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
INITIAL = "_initial"  # the adapter every new user starts from


class AdaptersFull(RuntimeError):
    """Every adapter slot is taken."""


def check_user_id(user: str) -> str:
    if not USER_ID.fullmatch(user or "") or user == INITIAL:
        raise ValueError(f"invalid user id {user!r}: 1-64 letters, digits, '.', '_', '@' or '-'")
    return user


class UserAdapters:
    def __init__(self, policy: MultiAdapterHFPolicy, root: str | Path) -> None:
        self.policy = policy
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._slots_file = self.root / "slots.json"
        self.slots: dict[str, int] = json.loads(self._slots_file.read_text()) if self._slots_file.exists() else {}

    def checkpoint(self, user: str) -> Path:
        return self.root / check_user_id(user) / "checkpoint"

    def slot(self, user: str) -> int:
        """The user's slot, allocated on first use (an empty adapter: the base model's answers)."""
        check_user_id(user)
        if user not in self.slots:
            free = sorted(set(range(1, self.policy.bank.slots)) - set(self.slots.values()))
            if not free:
                raise AdaptersFull(f"all {self.policy.bank.slots - 1} adapter slots are taken (serve.max_users)")
            self.slots[user] = free[0]
            self._save_slots()
        return self.slots[user]

    def view(self, user: str) -> AdapterPolicy:
        """The policy that answers ``user`` (their adapter)."""
        return self.policy.adapter(self.slot(user))

    def publish(self, user: str, state: Mapping[str, torch.Tensor], version: int) -> int:
        slot = self.slot(user)
        self.policy.load_adapter(slot, state)
        self.policy.adapter_versions[slot] = version
        return version

    def restore(self, trainer: TorchTrainer) -> dict[str, str]:
        """After a restart: load every user's saved adapter into their slot. Returns user -> outcome."""
        outcomes = {}
        for user in sorted(self.slots):
            path = self.checkpoint(user)
            if not path.exists():
                outcomes[user] = "base (no checkpoint yet)"
                continue
            try:
                trainer.load_checkpoint(path)
                self.publish(user, trainer.trainable_state_dict(), int(trainer.version))
                outcomes[user] = f"restored v{trainer.version}"
            except Exception as exc:  # a corrupt file costs this user their adapter, nobody else anything
                logger.warning("user %s: adapter checkpoint %s is unreadable (%s); starting from the base model",
                               user, path, exc)
                self.policy.clear_adapter(self.slots[user])
                outcomes[user] = f"base (corrupt checkpoint: {type(exc).__name__})"
        return outcomes

    def forget(self, user: str) -> bool:
        """Delete the user's adapter and checkpoint and free their slot; durable before returning."""
        slot = self.slots.pop(check_user_id(user), None)
        if slot is not None:
            self.policy.clear_adapter(slot)
            self._save_slots()
        directory = self.root / user
        existed = directory.exists()
        if existed:
            shutil.rmtree(directory)
        return slot is not None or existed

    def _save_slots(self) -> None:
        tmp = self._slots_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.slots, indent=1, sort_keys=True))
        tmp.replace(self._slots_file)


class UserAdapterTrainer(BackgroundTrainer):
    """The per-user personal trainer; see the module docstring."""

    def __init__(self, trainer: TorchTrainer, adapters: UserAdapters, *, batch_size: int = 8, max_staleness: int = 2,
                 output_dir: str | Path = "runs/chat", baseline: str = "batch",
                 on_step: OnStep | None = None,
                 on_error: OnError | None = None) -> None:
        self.adapters = adapters
        super().__init__(trainer, batch_size=batch_size, max_staleness=max_staleness, output_dir=output_dir,
                         baseline=baseline, on_step=on_step, on_error=on_error)
        self.pending: dict[str, list[Sample]] = collections.defaultdict(list)
        self.refused: collections.Counter = collections.Counter()
        self.steps: collections.Counter = collections.Counter()
        self.busy = False
        self._turn_order: collections.deque[str] = collections.deque()
        self._lock = asyncio.Lock()
        initial = adapters.root / INITIAL / "checkpoint"
        if not initial.exists():
            trainer.save_checkpoint(initial)  # the adapter and optimiser every new user starts from
        self._initial = initial

    def _queue(self, turn: Turn) -> bool:
        user = turn.info.get("user")
        if not user:
            self.refused["no_user"] += 1
            return False
        sample, reason = sample_from_turn(turn, self.method, self.temperature)
        if sample is None:
            self.refused[reason or "unknown"] += 1
            return False
        self.pending[user].append(sample)
        if len(self.pending[user]) >= self.batch_size and user not in self._turn_order:
            self._turn_order.append(user)
        return True

    def add(self, turn: Turn) -> None:
        """The gateway's ``on_judged``: queue the turn's sample for its user (never blocks)."""
        if self._queue(turn) and (self._task is None or self._turn_order):
            self._wake_up()

    def recover(self, turns: list[Turn]) -> int:
        """After a restart: queue each user's judged turns that no finished step trained on."""
        steps = self.out / "train_steps.jsonl"
        records = list(read_jsonl(steps)) if steps.exists() else []
        trained = {i for record in records for i in record["trained"]}
        self.steps.update(record["user"] for record in records)
        return sum(self._queue(t) for t in turns if t.judge and t.turn_id not in trained)

    def forget(self, user: str) -> int:
        """Drop the user's pending samples; returns how many."""
        dropped = len(self.pending.pop(user, []))
        if user in self._turn_order:
            self._turn_order.remove(user)
        return dropped

    def status(self) -> JSONObject:
        """Per-user adapters publish every step to their user: no publish gate, no kept versions yet."""
        return {"per_user": True, "gate": False, "paused": False, "reason": "", "versions": [],
                "steps": dict(self.steps)}

    def resume(self) -> JSONObject:
        return self.status()

    async def rollback(self, version: int) -> JSONObject:
        from clawgym.personal.publishing import UnknownVersion

        raise UnknownVersion(version)  # per-user adapters keep only the latest adapter of each user

    async def _train_due(self) -> None:
        while self._turn_order and not self.stopped:
            user = self._turn_order.popleft()  # round-robin: one step per user per turn
            await self.train_user(user)
            if len(self.pending.get(user, [])) >= self.batch_size:
                self._turn_order.append(user)

    async def train_user(self, user: str) -> StepRecord:
        """One train step on ``user``'s pending samples; publishes only their adapter."""
        async with self._lock:
            queue = self.pending.get(user, [])
            batch, self.pending[user] = queue[: self.batch_size], queue[self.batch_size:]
            if not batch:
                return {}
            checkpoint = self.adapters.checkpoint(user)
            self.busy = True
            fresh: list[Sample] = []
            try:
                await asyncio.to_thread(self.trainer.load_checkpoint,
                                        checkpoint if checkpoint.exists() else self._initial)
                fresh = self.trainable(batch)
                if not fresh:
                    return {}
                metrics = await asyncio.to_thread(self.trainer.train_step, fresh)
                await asyncio.to_thread(self.trainer.save_checkpoint, checkpoint)
                served = self.adapters.publish(user, self.trainer.trainable_state_dict(), int(self.trainer.version))
            except Exception as exc:  # this user's batch is dropped; every adapter keeps training
                self._step_failed(exc, len(fresh) or len(batch), user)
                return {}
            finally:
                self.busy = False
            self.steps[user] += 1
            record = step_record(metrics, user=user, step=self.steps[user], samples=len(fresh),
                                 adapter_version=served, trained=[s.turn_id for s in fresh])
            self._record_step(record)
            logger.info("user %s: adapter step %d on %d turns -> adapter v%d", user,
                        self.steps[user], len(fresh), served)
            return record
