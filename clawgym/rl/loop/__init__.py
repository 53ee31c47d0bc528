"""The fully asynchronous RL loop: serving, rollout, judge and training at once (DESIGN.md "The RL side").

Four loops share one asyncio event loop and never wait for each other:

1. **Serving**: the policy answers every request (for ``hf`` the in-process :class:`HFPolicy`, whose
   decoding runs on its own thread; for ``sglang`` a server).
2. **Rollout**: ``num_workers // group_size`` producers, each with its own :class:`RolloutPool` of G
   env workers, play one GRPO group after another. A producer reserves a buffer slot before it starts a
   group, so ``buffer_groups`` bounds groups in flight + waiting (and so how stale data can get).
3. **Judge**: every finished turn goes to a :class:`JudgeStage` as soon as its next state exists; a
   group becomes samples once all its trajectories are done and all its turns are judged.
4. **Training**: takes ``batch_groups`` judged groups from the :class:`SampleBuffer`, drops (or
   down-weights) samples older than ``max_staleness`` versions, runs ``trainer.train_step`` **in a
   thread** (the event loop keeps serving and rolling out meanwhile), publishes the new weights
   (``policy.update_weights``: an in-process copy between two decoding steps for ``hf``, the weight
   update endpoint for ``sglang``) and checkpoints.

Dynamic sampling (DAPO): a grpo group whose rewards are all equal is dropped and another is played in
its place; a step waits for at most ``max_draws_per_batch * batch_groups`` finished groups, then trains on
what is buffered (or is skipped, with none). ``curriculum="pass_rate"`` draws tasks near a 50 % pass
rate most often (:mod:`clawgym.rl.loop.curriculum`; ``curriculum.json`` in the output dir).

Token in, token out: samples are built from each Turn's own prompt/response token ids and logprobs
(:mod:`clawgym.rl.groups`); a turn without them is refused (counted under ``refused/<reason>``).

Rewards (``LoopConfig.reward``):
- ``outcome``: each trajectory's env reward, GRPO-normalised within its group (A_i = (R_i - mean) / std);
  every turn of a trajectory gets its trajectory's advantage.
- ``step_wise`` (Track-2, needs a PRM judge): r_k = R + prm_coef * prm_k, GRPO within (group, turn k).
- ``auto`` (default): ``step_wise`` when a PRM judge is configured, else ``outcome``.
Methods: ``grpo`` trains on those advantages; ``opd`` on hint-judge hints (the trainer computes the
hinted teacher's logprobs; samples without a hint are dropped); ``hybrid`` on both.

Resumability: judged groups are appended to ``pending.jsonl`` before the trainer sees them; each
checkpoint (trainer state + ``loop_state.json`` with the consumed sample ids, written atomically
together) marks what was trained. ``trained_ids.jsonl`` lists, per step, the sample ids trained and
dropped; on resume the entries of steps after the checkpoint are rolled back (those steps are
re-done), so every logged id is in the checkpoint's consumed set exactly once.

``mode="sync"`` is the baseline for :mod:`benchmarks.loop_overlap`: rollout, then train, then publish,
in turn (producers are gated while the trainer works).

Modules: ``config`` (:class:`LoopConfig`, :class:`LoopResult`, file names), ``collector`` (the
producers, judge tracking, the sync gate), ``training`` (weight publication, a step's metrics row),
``curriculum`` (the pass-rate task draw), ``state`` (checkpoints, resume, the trained-ids log),
``evaluation`` (held-out evals, HF export), ``runner`` (:class:`AsyncRLLoop`: the train step and the
run). Only ``config`` is imported with the package; the rest (which imports torch) when a name of it is
first asked for, so :class:`LoopConfig` imports without torch (the launch schema takes its fields from it).
"""

from typing import Any

from clawgym.rl.loop.config import CHECKPOINT_DIR, LOOP_STATE, PENDING_FILE, TRAINED_FILE, LoopConfig, LoopResult

__all__ = [
    "CHECKPOINT_DIR",
    "LOOP_STATE",
    "PENDING_FILE",
    "TRAINED_FILE",
    "AsyncRLLoop",
    "BatchCollector",
    "BusyClock",
    "LoopConfig",
    "LoopResult",
    "apply_staleness",
    "build_group",
    "export_hf",
    "prm_score",
    "refuse_reason",
    "run_loop",
    "verdict_source",
]


def __getattr__(name: str) -> Any:
    if name in ("AsyncRLLoop", "run_loop"):
        from clawgym.rl.loop import runner as module
    elif name in ("BatchCollector", "BusyClock"):
        from clawgym.rl.loop import collector as module
    elif name == "export_hf":
        from clawgym.rl.loop import evaluation as module
    elif name in ("apply_staleness", "build_group", "prm_score", "refuse_reason", "verdict_source"):
        from clawgym.rl import groups as module
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(module, name)
