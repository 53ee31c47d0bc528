"""The RL losses, one small function per formula (DESIGN.md "Training"; OpenClaw-RL arXiv 2603.10165).

Shapes: per-sample quantities are ``[B]``; per-token quantities are ``[B, T]`` over the response
tokens only, with a ``mask`` ``[B, T]`` (1 = trained token, 0 = padding or masked out).

    Advantages
      GRPO          A_i   = (r_i - mean_g(r)) / (std_g(r) + eps)            per group g      (DeepSeekMath eq. 3)
      raw           A_i   = r_i                                             personal chat (OpenClaw-RL binary)
      step-wise     r_i,k = R_i + c * prm_i,k ;  A = GRPO over (group, step k)  Track-2 ``step_wise``
      OPD           A_t   = log pi_teacher(a_t | s + hint) - log pi_old(a_t | s)
      Hybrid        A_t   = w_rl * A_rl + w_opd * (log pi_teacher - log pi_old)
    Policy loss
      PPO-clip      L_t   = -min(rho_t A_t, clip(rho_t, 1 - eps, 1 + eps_high) A_t),  rho_t = pi/pi_old
                    (Schulman et al. 2017 eq. 7, with DAPO's decoupled eps_high)
      k3 KL         k3_t  = exp(l_ref - l) - (l_ref - l) - 1                  (Schulman, "Approximating KL")
      top-K OPD     reverse KL(pi_student || pi_teacher) over the student's top-K tokens + one tail bin
      SFT           L_t   = -log pi(a_t | s)   on demonstration tokens (the warm start; ReTool's cold start)
    Aggregation
      token         sum_{i,t} L_i,t m_i,t / N_tokens
      sequence      sum_i (sum_t L_i,t m_i,t / n_i) / N_seqs

Every normaliser can be passed in, so a trainer that splits one optimiser step into micro-batches
normalises each micro-batch by the totals of the whole step and gets exactly the same gradient.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Literal

import torch

Aggregation = Literal["token", "sequence"]


# --------------------------------------------------------------------------------------------
# Advantages
# --------------------------------------------------------------------------------------------


def grpo_advantages(rewards: torch.Tensor, group_ids: Sequence[Hashable], eps: float = 1e-6) -> torch.Tensor:
    """GRPO: A_i = (r_i - mean_g) / (std_g + eps) within each group g.

    ``std_g`` is the unbiased sample standard deviation (as in DeepSeekMath / TRL). A group with a
    single member, or whose rewards are all equal, carries no relative signal: its advantages are 0
    (the sample still counts in the normaliser; the loop may drop such groups to save compute).
    """
    rewards = rewards.to(torch.float32)
    if rewards.ndim != 1 or len(group_ids) != rewards.shape[0]:
        raise ValueError(f"rewards must be [B] with one group id each, got {tuple(rewards.shape)} and "
                         f"{len(group_ids)} ids")
    advantages = torch.zeros_like(rewards)
    for members in _group_indices(group_ids).values():
        index = torch.tensor(members, dtype=torch.long)
        r = rewards[index]
        if len(members) < 2:
            continue  # singleton: r - mean = 0 by definition
        std = r.std(unbiased=True)
        if std.item() == 0.0:
            continue  # all equal: no preference inside the group
        advantages[index] = (r - r.mean()) / (std + eps)
    return advantages


def raw_advantages(rewards: torch.Tensor) -> torch.Tensor:
    """Personal chat (OpenClaw-RL binary RL): A_i = r_i, no normalisation (PRM score in {+1, -1, 0})."""
    return rewards.to(torch.float32).clone()


def step_wise_rewards(outcome: torch.Tensor, prm_scores: torch.Tensor, prm_coef: float) -> torch.Tensor:
    """Track-2 per-turn reward: r_k = R + c * prm_k (outcome reward R of the episode, PRM score of turn k)."""
    return outcome.to(torch.float32) + prm_coef * prm_scores.to(torch.float32)


def step_wise_advantages(
    rewards: torch.Tensor, group_ids: Sequence[Hashable], step_ids: Sequence[int], eps: float = 1e-6
) -> torch.Tensor:
    """Track-2 ``step_wise`` estimator: GRPO-normalise r_k within each (group, step index k).

    Turn k of rollout i is compared with turn k of the other rollouts of the same task, which is
    OpenClaw-RL's choice; rollouts shorter than k simply don't take part in step k's statistics.
    """
    if len(step_ids) != len(group_ids):
        raise ValueError("group_ids and step_ids must have the same length")
    return grpo_advantages(rewards, [(g, int(k)) for g, k in zip(group_ids, step_ids)], eps=eps)


def opd_advantages(teacher_logprobs: torch.Tensor, old_logprobs: torch.Tensor) -> torch.Tensor:
    """On-policy distillation: A_t = log pi_teacher(a_t | s + hint) - log pi_old(a_t | s)."""
    if teacher_logprobs.shape != old_logprobs.shape:
        raise ValueError(f"teacher {tuple(teacher_logprobs.shape)} and old {tuple(old_logprobs.shape)} "
                         "logprobs differ in shape")
    return teacher_logprobs - old_logprobs


def hybrid_advantages(
    rl_advantages: torch.Tensor,
    teacher_logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    w_rl: float = 1.0,
    w_opd: float = 1.0,
) -> torch.Tensor:
    """Hybrid: A_t = w_rl * A_rl + w_opd * (log pi_teacher - log pi_old); A_rl [B] broadcasts over tokens."""
    if rl_advantages.ndim == 1:
        rl_advantages = rl_advantages[:, None]
    return w_rl * rl_advantages + w_opd * opd_advantages(teacher_logprobs, old_logprobs)


# --------------------------------------------------------------------------------------------
# Policy losses (per token, not yet aggregated)
# --------------------------------------------------------------------------------------------


def ppo_clip_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    eps_clip: float = 0.2,
    eps_clip_high: float = 0.28,
) -> tuple[torch.Tensor, torch.Tensor]:
    """PPO clipped surrogate: L_t = -min(rho_t A_t, clip(rho_t, 1-eps, 1+eps_high) A_t).

    Returns the per-token loss and a 0/1 tensor marking tokens where the clipped branch is the
    one taken (those tokens get zero gradient). ``advantages`` may be [B] (broadcast) or [B, T].
    """
    if advantages.ndim == 1 and logprobs.ndim == 2:
        advantages = advantages[:, None]
    ratio = torch.exp(logprobs - old_logprobs)  # rho_t
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - eps_clip, 1.0 + eps_clip_high) * advantages
    loss = -torch.minimum(unclipped, clipped)
    clip_mask = (clipped < unclipped).to(logprobs.dtype)
    return loss, clip_mask


def nll(logprobs: torch.Tensor) -> torch.Tensor:
    """Supervised fine-tuning: L_t = -log pi(a_t | s), the negative log-likelihood of a demonstration's tokens."""
    return -logprobs


def kl_k3(logprobs: torch.Tensor, ref_logprobs: torch.Tensor) -> torch.Tensor:
    """k3 estimator of KL(pi || pi_ref) per token: exp(l_ref - l) - (l_ref - l) - 1 (>= 0, unbiased)."""
    log_ratio = ref_logprobs - logprobs
    return torch.exp(log_ratio) - log_ratio - 1.0


def token_entropy(logits: torch.Tensor) -> torch.Tensor:
    """The entropy (nats) of each position's distribution, ``[B, T]`` from ``[B, T, V]`` logits; 128 positions
    at a time, so only their probabilities are held beside the logits."""
    flat = logits.reshape(-1, logits.shape[-1])
    parts = []
    for chunk in flat.split(128):
        logp = torch.log_softmax(chunk.float(), dim=-1)
        parts.append(-(logp.exp() * logp).sum(-1))
    return torch.cat(parts).reshape(logits.shape[:-1])


def topk_reverse_kl(
    student_logprobs: torch.Tensor, teacher_logprobs: torch.Tensor, k: int = 50
) -> torch.Tensor:
    """Top-K distillation: KL(pi_s || pi_t) over the student's top-K tokens plus one tail bin.

    Both inputs are full-vocabulary log-probs ``[..., V]``. S_t = top-K of the (detached) student;
    the distributions are restricted to S_t and a tail bin holding the remaining mass,
    p_tail = 1 - sum_{v in S_t} p(v), so each stays a proper distribution over K + 1 outcomes and
    the loss is an exact KL between two coarse-grained distributions. We pick the student's top-K
    (SDPO-style reverse KL: mode-seeking, covers what the student would sample) over the teacher's
    top-K used by OpenClaw-RL's ``topk_distillation_loss``. Returns the per-position KL ``[...]``.
    """
    if student_logprobs.shape != teacher_logprobs.shape:
        raise ValueError("student and teacher log-probs must have the same [..., V] shape")
    k = min(k, student_logprobs.shape[-1] - 1)
    index = student_logprobs.detach().topk(k, dim=-1).indices
    s_top = student_logprobs.gather(-1, index)
    t_top = teacher_logprobs.gather(-1, index)
    s_coarse = torch.cat([s_top, _log_tail(s_top)[..., None]], dim=-1)
    t_coarse = torch.cat([t_top, _log_tail(t_top)[..., None]], dim=-1)
    return (s_coarse.exp() * (s_coarse - t_coarse)).sum(-1)


# --------------------------------------------------------------------------------------------
# Aggregation
# --------------------------------------------------------------------------------------------


def token_mean(values: torch.Tensor, mask: torch.Tensor, num_tokens: float | None = None) -> torch.Tensor:
    """Token-level: sum_{i,t} x m / N_tokens (every token weighs the same; DAPO / Dr.GRPO style)."""
    total = values.new_tensor(float(mask.sum())) if num_tokens is None else values.new_tensor(float(num_tokens))
    return (values * mask).sum() / total.clamp_min(1.0)


def sequence_mean(values: torch.Tensor, mask: torch.Tensor, num_sequences: float | None = None) -> torch.Tensor:
    """Sequence-level: mean over sequences of each sequence's token mean (GRPO paper style).

    Sequences with no trained token contribute 0 but still count in ``num_sequences`` when it is
    given; by default only sequences with at least one trained token are counted.
    """
    per_sequence_tokens = mask.sum(-1)
    per_sequence = (values * mask).sum(-1) / per_sequence_tokens.clamp_min(1.0)
    count = float((per_sequence_tokens > 0).sum()) if num_sequences is None else float(num_sequences)
    return per_sequence.sum() / max(count, 1.0)


def aggregate(
    values: torch.Tensor,
    mask: torch.Tensor,
    mode: Aggregation = "token",
    num_tokens: float | None = None,
    num_sequences: float | None = None,
) -> torch.Tensor:
    """Reduce a per-token loss to a scalar with the chosen aggregation ("token" or "sequence")."""
    if mode == "token":
        return token_mean(values, mask, num_tokens)
    if mode == "sequence":
        return sequence_mean(values, mask, num_sequences)
    raise ValueError(f"unknown aggregation {mode!r}; expected 'token' or 'sequence'")


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def _group_indices(group_ids: Sequence[Hashable]) -> dict[Hashable, list[int]]:
    groups: dict[Hashable, list[int]] = {}
    for index, group in enumerate(group_ids):
        groups.setdefault(group, []).append(index)
    return groups


def _log_tail(top_logprobs: torch.Tensor) -> torch.Tensor:
    """log(1 - sum exp(top)), computed stably and floored so an all-mass top-K stays finite."""
    top_mass = torch.logsumexp(top_logprobs, dim=-1).clamp(max=-1e-6)
    return torch.log(-torch.expm1(top_mass)).clamp_min(-80.0)
