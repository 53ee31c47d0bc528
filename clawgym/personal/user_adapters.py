"""Many people, one base model: one LoRA adapter per user, trained only on that user's turns.

:class:`UserAdapters` owns the mapping user → adapter slot of the served
:class:`~clawgym.inference.multi_adapter.MultiAdapterHFPolicy` and each user's training state on disk
(``<root>/<user>/checkpoint``: the LoRA weights, the optimiser state, steps). A user's slot is created
on first use from the base weights (an empty adapter answers exactly as the base model).

:class:`UserAdapterTrainer` is the personal trainer of the ``serve.adapters: per_user`` mode. One
:class:`~clawgym.rl.trainer.TorchTrainer` (LoRA) is shared: before a user's step it loads that user's
checkpoint (or the initial adapter) and trains on that user's samples only. Users with enough pending
turns take turns (round-robin), so a talkative user cannot starve a quiet one.

Never worse for each person: every user has a :class:`~clawgym.personal.publishing.Publisher` of their own
(``<root>/<user>/``: their kept versions, pause and gate state), the one the shared weights use. With the
publish gate (``serve.gate``) a step's adapter is decoded on a spare slot of the served model (the
candidate: nobody is answered by it) on that person's held-back requests, next to the adapter serving them,
and serves them only when the wish judge finds it not worse; an alarm pauses that person's training only;
a rollback serves one of their kept versions again. The wish judge reads label probabilities from the base
model on the trainer's copy (:class:`TrainerBase`).

Why checkpoints on disk rather than a database: the adapter and optimiser state are tensors (tens of
MB per user for SmolLM2 at r=16), written atomically once per step; after a restart every user's
adapter is restored from its directory, and one corrupt directory only sends that user back to the
base model (with a warning), never the others.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from clawgym.personal.trainer import BackgroundTrainer, OnError, OnStep, StepRecord, sample_from_turn, step_record
from clawgym.rl.types import JSONObject, Sample, Turn, read_jsonl

if TYPE_CHECKING:
    import torch

    from clawgym.core.policy import Generation, SamplingParams
    from clawgym.inference.multi_adapter import AdapterPolicy, MultiAdapterHFPolicy
    from clawgym.personal.publishing import OnChange, Publisher
    from clawgym.personal.rubric import RubricJudge
    from clawgym.rl.launch.serve_section import AlarmSection, GateSection
    from clawgym.rl.trainer import TorchTrainer

logger = logging.getLogger(__name__)

USER_ID = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
INITIAL = "_initial"  # the adapter every new user starts from
DEFAULT_USER = "default"  # who a request without a key table or a ``user`` field is (clawgym.serve.users)


class AdaptersFull(RuntimeError):
    """Every adapter slot is taken."""


def check_user_id(user: str) -> str:
    if not USER_ID.fullmatch(user or "") or user == INITIAL:
        raise ValueError(f"invalid user id {user!r}: 1-64 letters, digits, '.', '_', '@' or '-'")
    return user


class UserAdapters:
    """``candidate``: keep the bank's last slot for the publish gate's candidates (never a user's)."""

    def __init__(self, policy: MultiAdapterHFPolicy, root: str | Path, *, candidate: bool = False) -> None:
        self.policy = policy
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._slots_file = self.root / "slots.json"
        self.slots: dict[str, int] = json.loads(self._slots_file.read_text()) if self._slots_file.exists() else {}
        self.candidate_slot: int | None = None
        if candidate:
            free = sorted(set(range(1, policy.bank.slots)) - set(self.slots.values()))
            if not free:
                raise AdaptersFull("no adapter slot is left for the publish gate's candidate")
            self.candidate_slot = free[-1]

    def checkpoint(self, user: str) -> Path:
        return self.root / check_user_id(user) / "checkpoint"

    def slot(self, user: str) -> int:
        """The user's slot, allocated on first use (an empty adapter: the base model's answers)."""
        check_user_id(user)
        if user not in self.slots:
            free = sorted(set(range(1, self.policy.bank.slots)) - set(self.slots.values()) - {self.candidate_slot})
            if not free:
                users = self.policy.bank.slots - 1 - (self.candidate_slot is not None)
                raise AdaptersFull(f"all {users} adapter slots are taken (serve.max_users)")
            self.slots[user] = free[0]
            self._save_slots()
        return self.slots[user]

    def view(self, user: str) -> AdapterPolicy:
        """The policy that answers ``user`` (their adapter)."""
        return self.policy.adapter(self.slot(user))

    def version(self, user: str) -> int:
        """The version of the adapter serving ``user`` (0: none yet, the base model's answers)."""
        slot = self.slots.get(user)
        return 0 if slot is None else int(self.policy.adapter_versions[slot])

    def publish(self, user: str, state: Mapping[str, torch.Tensor], version: int | None = None) -> int:
        """Serve ``state`` to ``user`` as ``version`` (None: one more); returns the version now serving."""
        slot = self.slot(user)
        served = self.policy.load_adapter(slot, state)
        if version is not None:
            self.policy.adapter_versions[slot] = served = int(version)
        return served

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


class UserSlot:
    """One user's adapter as their publisher and gate see it: the version serving them, publishing to it, and
    decoding with it (an ``UpdatablePolicy``)."""

    def __init__(self, adapters: UserAdapters, user: str) -> None:
        self.adapters, self.user = adapters, user

    @property
    def version(self) -> int:
        return self.adapters.version(self.user)

    async def update_weights(self, weights: Mapping[str, torch.Tensor], *, version: int | None = None) -> int:
        return self.adapters.publish(self.user, weights, version)

    async def generate_ids(self, prompt_ids: list[int], sampling: SamplingParams | None = None) -> Generation:
        return await self.adapters.view(self.user).generate_ids(prompt_ids, sampling)

    async def close(self) -> None:
        return None


class CandidateSlot(UserSlot):
    """The spare slot the gate decodes a step's adapter on, one user's step at a time (the trainer's lock)."""

    def __init__(self, adapters: UserAdapters) -> None:
        assert adapters.candidate_slot is not None
        super().__init__(adapters, "")
        self.slot = adapters.candidate_slot

    @property
    def version(self) -> int:
        return int(self.adapters.policy.adapter_versions[self.slot])

    async def update_weights(self, weights: Mapping[str, torch.Tensor], *, version: int | None = None) -> int:
        return self.adapters.policy.load_adapter(self.slot, weights)  # its own count: the prefix cache's tag

    async def generate_ids(self, prompt_ids: list[int], sampling: SamplingParams | None = None) -> Generation:
        return await self.adapters.policy.adapter(self.slot).generate_ids(prompt_ids, sampling)


class TrainerBase:
    """The base model for the wish judge's label probabilities: the trainer's copy with its adapter off.

    The served model is not read directly: its engine sets each forward pass's per-row adapters before it takes
    the weights lock, so a pass from outside could meet another request's adapters. The trainer's copy is idle
    while the gate scores (inside a user's step, under the trainer's lock). ``_weights_lock`` is what the scoring
    helpers hold around each pass: the adapter off, eval mode."""

    name = "base"
    version = 0

    def __init__(self, trainer: TorchTrainer) -> None:
        self.model, self.tokenizer = trainer.model, trainer.tokenizer
        self._weights_lock = _AdapterOff(trainer.model)


class _AdapterOff:
    def __init__(self, model: Any) -> None:
        self.model = model
        self._stack: list[tuple[contextlib.ExitStack, bool]] = []

    def __enter__(self) -> None:
        stack = contextlib.ExitStack()
        stack.enter_context(self.model.disable_adapter())
        self._stack.append((stack, self.model.training))
        self.model.eval()

    def __exit__(self, *exc: object) -> None:
        stack, training = self._stack.pop()
        self.model.train(training)
        stack.close()


@dataclass(frozen=True)
class UserGating:
    """What each user's publisher is made of (the learner's builder passes it in): the publish gate's settings and
    wish judge (``gate`` None or disabled: no gate), the alarms, how many versions a user keeps."""

    gate: GateSection | None = None
    rubric: RubricJudge | None = None
    wishes_of: Callable[[str], list[str]] | None = None
    alarms: AlarmSection | None = None
    keep_versions: int = 8

    @property
    def gated(self) -> bool:
        return self.gate is not None and self.gate.enabled


class UserAdapterTrainer(BackgroundTrainer):
    """The per-user personal trainer; see the module docstring. ``on_training``: the status after each change of
    anyone's publisher (a step, a refusal, an alarm, a rollback, a resume)."""

    per_user = True

    def __init__(self, trainer: TorchTrainer, adapters: UserAdapters, *, batch_size: int = 8, max_staleness: int = 2,
                 output_dir: str | Path = "runs/chat", baseline: str = "batch", gating: UserGating = UserGating(),
                 on_step: OnStep | None = None, on_error: OnError | None = None,
                 on_training: OnChange | None = None) -> None:
        self.adapters = adapters
        super().__init__(trainer, batch_size=batch_size, max_staleness=max_staleness, output_dir=output_dir,
                         baseline=baseline, on_step=on_step, on_error=on_error)
        if gating.gated and (gating.rubric is None or gating.wishes_of is None or adapters.candidate_slot is None):
            raise ValueError("a per-user publish gate needs the wish judge, the wishes and a candidate slot")
        self.gating = gating
        self.on_training = on_training
        self.pending: dict[str, list[Sample]] = collections.defaultdict(list)
        self.refused: collections.Counter = collections.Counter()
        self.steps: collections.Counter = collections.Counter()
        self.busy = False
        self.publishers: dict[str, Publisher] = {}
        self._turn_order: collections.deque[str] = collections.deque()
        self._lock = asyncio.Lock()  # one user's step or rollback at a time: they share the trainer
        self._candidate = CandidateSlot(adapters) if gating.gated else None
        initial = adapters.root / INITIAL / "checkpoint"
        if not initial.exists():
            trainer.save_checkpoint(initial)  # the adapter and optimiser every new user starts from
        self._initial = initial

    # ------------------------------------------------------------------ each user's publisher
    def publisher(self, user: str) -> Publisher:
        """``user``'s publisher (made on first use; it reads back their versions, pause and gate state)."""
        if user not in self.publishers:
            from clawgym.personal.gate import PublishGate
            from clawgym.personal.publishing import Publisher

            out, slot, gating = self.adapters.root / check_user_id(user), UserSlot(self.adapters, user), self.gating
            gate = None
            if gating.gated:
                assert gating.gate is not None and gating.rubric is not None and gating.wishes_of is not None
                gate = PublishGate(gating.gate, gating.rubric, gating.wishes_of, self._candidate, slot,
                                   out / "gate_lengths.json", owns_candidate=False)
            self.publishers[user] = Publisher(self.trainer, slot, out, gate=gate, alarms=gating.alarms,
                                              keep_versions=gating.keep_versions, on_change=self._changed,
                                              export=self.trainer.trainable_state_dict, lock=self._lock)
        return self.publishers[user]

    def _known(self, user: str) -> bool:
        return user in self.publishers or (self.adapters.root / user / "versions").is_dir()

    def _changed(self, _status: JSONObject) -> None:
        if self.on_training is not None:
            self.on_training(self.status())

    # ------------------------------------------------------------------ turns in
    def _held(self, turn: Turn) -> bool:
        """Whether the user's gate keeps ``turn`` back from training (to score their later steps on)."""
        user = turn.info.get("user")
        return bool(user) and self.gating.gated and self.publisher(str(user)).hold(turn)

    def _queue(self, turn: Turn) -> bool:
        user = turn.info.get("user")
        if not user:
            self.refused["no_user"] += 1
            return False
        if self.publisher(user).paused:
            self.refused["training_paused"] += 1
            return False
        sample, reason = sample_from_turn(turn, self.method, self.temperature)
        if sample is None:
            self.refused[reason or "unknown"] += 1
            return False
        self.pending[user].append(sample)
        self._line_up(user)
        return True

    def _line_up(self, user: str) -> None:
        if len(self.pending[user]) >= self.batch_size and user not in self._turn_order:
            self._turn_order.append(user)

    def add(self, turn: Turn) -> None:
        """The gateway's ``on_judged``: queue the turn's sample for its user (never blocks)."""
        if not self._held(turn) and self._queue(turn) and (self._task is None or self._turn_order):
            self._wake_up()

    def recover(self, turns: list[Turn]) -> int:
        """After a restart: queue each user's judged turns that no finished step trained on (each user's gate
        holds back the same turns as before: it sees their judged turns in the log's order)."""
        steps = self.out / "train_steps.jsonl"
        records = list(read_jsonl(steps)) if steps.exists() else []
        trained = {i for record in records for i in record["trained"]}
        self.steps.update(record["user"] for record in records)
        return sum(self._queue(t) for t in turns if t.judge and not self._held(t) and t.turn_id not in trained)

    def forget(self, user: str) -> int:
        """Drop the user's pending samples and held-back requests; returns how many."""
        dropped = len(self.pending.pop(user, []))
        if user in self._turn_order:
            self._turn_order.remove(user)
        publisher = self.publishers.pop(user, None)
        self.steps.pop(user, None)
        return dropped + (publisher.forget(user) if publisher is not None else 0)

    # ------------------------------------------------------------------ what a person (or an admin) does
    def status(self, user: str | None = None) -> JSONObject:
        """One user's versions, gate verdict, alarms and pause; without ``user``, everyone's (``paused``: anyone's)."""
        if user is not None:
            return {"per_user": True, "user": user, **self._user_status(user)}
        known = {d.name for d in self.adapters.root.iterdir() if d.is_dir() and d.name != INITIAL}
        users = {u: self._user_status(u) for u in sorted(known | set(self.publishers))}
        paused = {u: s["reason"] for u, s in users.items() if s["paused"]}
        return {"per_user": True, "gate": self.gating.gated, "version": None, "paused": bool(paused),
                "reason": "; ".join(f"{u}: {why}" for u, why in paused.items()), "users": users,
                "steps": dict(self.steps)}

    def _user_status(self, user: str) -> JSONObject:
        own = {"steps": self.steps[user], "pending": len(self.pending.get(user, []))}
        if self._known(user):
            return {**self.publisher(user).status(), **own}
        return {"version": self.adapters.version(user), "paused": False, "reason": "", "alarms": [], "refusals": 0,
                "gate": self.gating.gated, "last": None, "versions": [], **own}

    def resume(self, user: str | None = None) -> JSONObject:
        """Train ``user``'s adapter again after an alarm paused it."""
        user = user or DEFAULT_USER
        if self._known(user):
            self.publisher(user).resume()
            if user in self.pending:
                self._line_up(user)
                if self._turn_order:
                    self._wake_up()
        return self.status(user)

    async def rollback(self, version: int, user: str | None = None) -> JSONObject:
        """Serve ``user``'s kept version ``version`` again; what waited to train on their later adapter is dropped."""
        from clawgym.personal.publishing import UnknownVersion

        user = user or DEFAULT_USER
        if not self._known(user):
            raise UnknownVersion(version)
        await self.publisher(user).rollback(version)
        self.refused["rolled_back"] += len(self.pending.pop(user, []))
        if user in self._turn_order:
            self._turn_order.remove(user)
        return self.status(user)

    # ------------------------------------------------------------------ training
    async def _train_due(self) -> None:
        while self._turn_order and not self.stopped:
            user = self._turn_order.popleft()  # round-robin: one step per user per turn
            if self.publisher(user).paused:
                continue  # resume() lines them up again
            await self.train_user(user)
            if not self.publisher(user).paused:
                self._line_up(user)

    async def train_user(self, user: str) -> StepRecord:
        """One train step on ``user``'s pending samples; only their adapter may change, and only if it passes."""
        async with self._lock:
            queue = self.pending.get(user, [])
            batch, self.pending[user] = queue[: self.batch_size], queue[self.batch_size:]
            if not batch:
                return {}
            publisher = self.publisher(user)
            self.busy = True
            fresh: list[Sample] = []
            started = time.perf_counter()
            try:
                checkpoint = publisher.checkpoint
                await asyncio.to_thread(self.trainer.load_checkpoint,
                                        checkpoint if checkpoint.exists() else self._initial)
                fresh = self.trainable(batch)
                if not fresh:
                    return {}
                await publisher.prepare()  # their serving adapter is on disk and kept as a version
                metrics = await asyncio.to_thread(self.trainer.train_step, fresh)
                weights = await asyncio.to_thread(self.trainer.trainable_state_dict)
                decision = await publisher.decide(metrics, weights)
                step = self.steps[user] + 1
                served = (await publisher.publish(weights, decision, step) if decision.publish
                          else await publisher.refuse(decision))
            except Exception as exc:  # this user's batch is dropped; every adapter keeps training
                self._step_failed(exc, len(fresh) or len(batch), user)
                return {}
            finally:
                self.busy = False
            self.steps[user] = step
            record = step_record(metrics, user=user, step=step, samples=len(fresh), adapter_version=served,
                                 trained=[s.turn_id for s in fresh], **decision.to_json(),
                                 seconds=round(time.perf_counter() - started, 3))
            self._record_step(record)
            logger.info("user %s: adapter step %d on %d turns -> %s (serving adapter v%d)", user, step, len(fresh),
                        "published" if decision.publish else "not published", served)
            if publisher.paused:
                logger.warning("user %s: training is paused: %s", user, publisher.reason)
            return record

    async def close(self) -> None:
        for publisher in self.publishers.values():
            await publisher.close()  # the gates own nothing: the candidate slot is the served model's
        await super().close()
