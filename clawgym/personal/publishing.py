"""What stands between a train step and the people it serves: the publish gate, the alarms, the kept versions.

The personal trainer (:class:`~clawgym.personal.trainer.PersonalTrainer`) trains a step, then asks the
:class:`Publisher` whether its weights may serve (:meth:`Publisher.decide`): the publish gate
(:mod:`clawgym.personal.gate`, ``serve.gate``) scores them against the serving weights on the people's
held-back requests, and the collapse alarms (:mod:`clawgym.personal.alarms`, ``serve.alarms``) read the
step's entropy and KL and the gate's replies. Published (:meth:`Publisher.publish`), the weights serve, become
the trainer's checkpoint (what a restart serves) and a kept version. Refused (:meth:`Publisher.refuse`), the
old weights keep serving and the trainer goes back to them (``<out>/checkpoint``), so the next step trains
from the weights the people have; an alarm also pauses training until :meth:`Publisher.resume`.
:meth:`Publisher.rollback` serves an earlier kept version again. The pause, its reason and the refusals in a
row live in ``<out>/training_state.json`` and survive a restart, like the served weights.

One publisher serves one set of weights: the shared weights (``<out>`` is the run directory), or one person's
adapter (:class:`~clawgym.personal.user_adapters.UserAdapterTrainer` keeps a publisher a person, ``<out>`` their
adapter directory, ``policy`` their adapter slot, ``export`` the trainer's adapter weights, ``lock`` the trainer's
own, since all of them share one trainer).
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping

from clawgym.personal import alarms as alarm_checks
from clawgym.personal.versions import VersionStore

if TYPE_CHECKING:
    import torch

    from clawgym.personal.alarms import Alarm
    from clawgym.personal.gate import GateVerdict, PublishGate
    from clawgym.rl.launch.serve_section import AlarmSection
    from clawgym.rl.trainer import Trainer
    from clawgym.rl.trainer.base import UpdatablePolicy
    from clawgym.rl.types import JSONObject, Turn

logger = logging.getLogger(__name__)

OnChange = Callable[["JSONObject"], object]  # the training status after every change (the dashboard)
Export = Callable[[], "Mapping[str, torch.Tensor]"]  # the trainer's weights to serve (called off the event loop)


class UnknownVersion(KeyError):
    """A rollback named a version that is not kept."""


@dataclass
class Decision:
    publish: bool
    verdict: GateVerdict | None = None
    alarms: list[Alarm] = field(default_factory=list)
    signals: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> JSONObject:
        return {"published": self.publish, "gate": self.verdict.to_json() if self.verdict else None,
                "alarms": [a.to_json() for a in self.alarms], "signals": self.signals}


class Publisher:
    def __init__(self, trainer: Trainer, policy: UpdatablePolicy, out: Path, *, gate: PublishGate | None = None,
                 alarms: AlarmSection | None = None, keep_versions: int = 8, on_change: OnChange | None = None,
                 export: Export | None = None, lock: asyncio.Lock | None = None) -> None:
        self.trainer = trainer
        self.policy = policy
        self.gate = gate
        self.alarms = alarms
        self.on_change = on_change
        self.checkpoint = out / "checkpoint"
        self.versions = VersionStore(out / "versions", keep_versions)
        self.lock = lock or asyncio.Lock()  # one step or rollback at a time (of every publisher sharing the trainer)
        self._export = export  # the trainer's weights as the policy takes them (None: what its transport takes)
        self._state_path = out / "training_state.json"
        state = json.loads(self._state_path.read_text(encoding="utf-8")) if self._state_path.exists() else {}
        self.paused: bool = bool(state.get("paused", False))
        self.reason: str = str(state.get("reason", ""))
        self.fired: list[JSONObject] = list(state.get("alarms", []))
        self.refusals: int = int(state.get("refusals", 0))
        self.last: JSONObject | None = state.get("last")

    # ------------------------------------------------------------------ a step
    def hold(self, turn: Turn) -> bool:
        """Whether the gate keeps ``turn`` back from training (to score later steps on)."""
        return self.gate is not None and self.gate.held.hold(turn)

    async def prepare(self) -> None:
        """Before a step: the serving weights are on disk (a refusal returns to them) and kept as a version."""
        if not self.checkpoint.is_dir():
            await asyncio.to_thread(self.trainer.save_checkpoint, self.checkpoint)
        version = int(self.policy.version)
        if not self.versions.has(version):
            await asyncio.to_thread(self.versions.add, self.checkpoint, version, "initial")

    async def decide(self, metrics: Mapping[str, float], weights: Mapping[str, torch.Tensor]) -> Decision:
        verdict = None
        if self.gate is not None:
            verdict = await self.gate.judge(weights, int(self.policy.version), int(self.trainer.version))
        signals = self._signals(metrics, verdict)
        fired = alarm_checks.check(self.alarms, signals) if self.alarms is not None else []
        return Decision((verdict is None or verdict.publish) and not fired, verdict, fired, signals)

    async def publish(self, weights: Mapping[str, torch.Tensor], decision: Decision, step: int) -> int:
        served = await self.policy.update_weights(weights, version=int(self.trainer.version))
        await asyncio.to_thread(self.trainer.save_checkpoint, self.checkpoint)
        if self.gate is not None:
            self.gate.accept(served)
        score = decision.verdict.candidate if decision.verdict else None
        await asyncio.to_thread(self.versions.add, self.checkpoint, served, f"step {step}", gate=score)
        self.refusals = 0
        self._changed(decision)
        return served

    async def refuse(self, decision: Decision) -> int:
        """Keep the serving weights and return the trainer to them; an alarm pauses training."""
        await asyncio.to_thread(self.trainer.load_checkpoint, self.checkpoint)
        if decision.verdict is not None and not decision.verdict.publish:
            self.refusals += 1
        if decision.alarms:
            self.paused = True
            self.reason = "; ".join(a.message for a in decision.alarms)
            self.fired = [a.to_json() for a in decision.alarms]
            logger.warning("personal training paused: %s", self.reason)
        self._changed(decision)
        return int(self.policy.version)

    # ------------------------------------------------------------------ what a person (or an admin) does
    def resume(self) -> JSONObject:
        self.paused, self.reason, self.fired, self.refusals = False, "", [], 0
        self._changed()
        return self.status()

    async def rollback(self, version: int) -> JSONObject:
        """Serve kept version ``version`` again, under a new version number; the trainer continues from it."""
        if not self.versions.has(version):
            raise UnknownVersion(version)
        async with self.lock:
            await asyncio.to_thread(self.trainer.load_checkpoint, self.versions.path(version))
            new = max(self.versions.latest(), int(self.policy.version)) + 1
            self.trainer.version = new
            weights = await asyncio.to_thread(self.export())
            served = await self.policy.update_weights(weights, version=new)
            await asyncio.to_thread(self.trainer.save_checkpoint, self.checkpoint)
            await asyncio.to_thread(self.versions.add, self.checkpoint, served, f"rollback to v{version}")
            logger.info("rolled back to the weights of version %d, now serving as version %d", version, served)
        self._changed()
        return self.status()

    def status(self) -> JSONObject:
        serving = int(self.policy.version)
        return {"version": serving, "paused": self.paused, "reason": self.reason, "alarms": self.fired,
                "refusals": self.refusals, "gate": self.gate is not None, "last": self.last,
                "versions": self.versions.listing(serving)}

    def export(self) -> Export:
        """What turns the trainer's weights into the policy's: ``export``, else what the policy's transport takes."""
        if self._export is not None:
            return self._export
        from clawgym.rl.trainer.transport import served_weights

        return served_weights(self.trainer, self.policy)

    def forget(self, user: str) -> int:
        return self.gate.forget(user) if self.gate is not None else 0

    async def close(self) -> None:
        if self.gate is not None:
            await self.gate.close()

    # ------------------------------------------------------------------ internals
    def _signals(self, metrics: Mapping[str, float], verdict: GateVerdict | None) -> dict[str, float]:
        signals = {name: float(metrics[name]) for name in ("entropy",) if name in metrics}
        if "kl" in metrics and (self.trainer.config.kl_coef > 0 or self.trainer.config.monitor_kl):
            signals["kl"] = float(metrics["kl"])
        if verdict is not None and verdict.held_back:
            if verdict.initial_tokens > 0:
                signals["length_ratio"] = round(verdict.candidate_tokens / verdict.initial_tokens, 4)
            signals["repetition"] = verdict.repetition
            if verdict.held_back > 1:
                signals["similarity"] = verdict.similarity
        if verdict is not None:
            signals["refusals"] = float(self.refusals + (0 if verdict.publish else 1))
        return signals

    def _changed(self, decision: Decision | None = None) -> None:
        if decision is not None:
            self.last = decision.to_json()
        state = {"paused": self.paused, "reason": self.reason, "alarms": self.fired, "refusals": self.refusals,
                 "last": self.last}
        tmp = self._state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=1), encoding="utf-8")
        tmp.replace(self._state_path)
        if self.on_change is not None:
            self.on_change(self.status())
