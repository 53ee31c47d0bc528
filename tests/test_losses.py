"""The loss formulas against hand-computed values, and the clipped surrogate's gradient."""

from __future__ import annotations

import math

import pytest
import torch

from clawgym.rl import losses


def test_grpo_advantages_hand_computed():
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, -1.0])
    groups = ["a", "a", "a", "b", "b"]
    adv = losses.grpo_advantages(rewards, groups, eps=0.0)
    # group a: mean 1/3, unbiased std sqrt(((2/3)^2 + 2*(1/3)^2) / 2) = sqrt(1/3)
    std_a = math.sqrt(1.0 / 3.0)
    # group b: mean 0, unbiased std sqrt(2)
    expected = [(2 / 3) / std_a, (-1 / 3) / std_a, (-1 / 3) / std_a, 1 / math.sqrt(2), -1 / math.sqrt(2)]
    assert adv.tolist() == pytest.approx(expected, rel=1e-6)


def test_grpo_singleton_and_constant_groups_get_zero():
    adv = losses.grpo_advantages(torch.tensor([5.0, 1.0, 1.0, -2.0, 3.0]), ["solo", "same", "same", "x", "x"])
    assert adv[:3].tolist() == [0.0, 0.0, 0.0]
    assert adv[3] < 0 < adv[4]


def test_grpo_rejects_mismatched_ids():
    with pytest.raises(ValueError, match="group id"):
        losses.grpo_advantages(torch.tensor([1.0, 2.0]), ["a"])


def test_raw_advantage_is_reward():
    r = torch.tensor([1.0, -1.0, 0.0])
    assert losses.raw_advantages(r).tolist() == [1.0, -1.0, 0.0]


def test_step_wise_rewards_and_advantages():
    outcome = torch.tensor([1.0, 1.0, -1.0, -1.0])
    prm = torch.tensor([1.0, -1.0, 1.0, 1.0])
    r = losses.step_wise_rewards(outcome, prm, prm_coef=0.5)
    assert r.tolist() == [1.5, 0.5, -0.5, -0.5]
    # rollout A turns 0,1 ; rollout B turns 0,1 ; same group -> normalise per step index
    adv = losses.step_wise_advantages(r, ["g"] * 4, [0, 1, 0, 1], eps=0.0)
    # step 0: {1.5, -0.5}: mean 0.5, std sqrt(2) ; step 1: {0.5, -0.5}: mean 0, std sqrt(0.5)
    assert adv.tolist() == pytest.approx([1 / math.sqrt(2), 0.5 / math.sqrt(0.5),
                                          -1 / math.sqrt(2), -0.5 / math.sqrt(0.5)])


def test_opd_and_hybrid_advantages():
    teacher = torch.tensor([[-0.5, -2.0]])
    old = torch.tensor([[-1.0, -1.0]])
    assert losses.opd_advantages(teacher, old).tolist() == [[0.5, -1.0]]
    hybrid = losses.hybrid_advantages(torch.tensor([1.0]), teacher, old, w_rl=2.0, w_opd=0.5)
    assert hybrid.tolist() == [[2.0 + 0.25, 2.0 - 0.5]]
    with pytest.raises(ValueError, match="shape"):
        losses.opd_advantages(teacher, old[:, :1])


def test_ppo_clip_loss_values_and_clip_mask():
    old = torch.zeros(1, 4)
    # ratios 1.5, 1.1, 0.5, 0.9 with advantages +1, +1, -1, -1
    logp = torch.log(torch.tensor([[1.5, 1.1, 0.5, 0.9]]))
    adv = torch.tensor([[1.0, 1.0, -1.0, -1.0]])
    loss, clipped = losses.ppo_clip_loss(logp, old, adv, eps_clip=0.2, eps_clip_high=0.28)
    assert loss.tolist()[0] == pytest.approx([-1.28, -1.1, 0.8, 0.9], rel=1e-6)
    assert clipped.tolist() == [[1.0, 0.0, 1.0, 0.0]]
    # a [B] advantage broadcasts over tokens
    loss_b, _ = losses.ppo_clip_loss(logp, old, torch.tensor([1.0]))
    assert loss_b.tolist()[0] == pytest.approx([-1.28, -1.1, -0.5, -0.9], rel=1e-6)


def test_clipped_surrogate_has_zero_gradient_where_clipping_is_active():
    old = torch.zeros(6)
    ratios = torch.tensor([1.5, 1.1, 0.5, 0.9, 1.5, 0.5])
    adv = torch.tensor([1.0, 1.0, -1.0, -1.0, -1.0, 1.0])
    logp = torch.log(ratios).requires_grad_(True)
    loss, clipped = losses.ppo_clip_loss(logp, old, adv, eps_clip=0.2, eps_clip_high=0.28)
    loss.sum().backward()
    grad = logp.grad
    # clipped: ratio > 1+eps_high with A>0 (index 0), ratio < 1-eps with A<0 (index 2)
    assert clipped.tolist() == [1.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    assert grad[0].item() == 0.0 and grad[2].item() == 0.0
    # elsewhere the gradient of -rho*A w.r.t. log pi is -rho*A (pessimistic side is unclipped)
    for i in (1, 3, 4, 5):
        assert grad[i].item() == pytest.approx(-(ratios[i] * adv[i]).item(), rel=1e-6)


def test_kl_k3_hand_computed_and_nonnegative():
    logp = torch.tensor([-1.0, -2.0, -0.5])
    ref = torch.tensor([-1.0, -1.0, -1.5])
    k3 = losses.kl_k3(logp, ref)
    expected = [0.0, math.exp(1.0) - 1.0 - 1.0, math.exp(-1.0) + 1.0 - 1.0]
    assert k3.tolist() == pytest.approx(expected, rel=1e-6)
    assert (losses.kl_k3(torch.randn(100), torch.randn(100)) >= 0).all()


def test_aggregation_token_vs_sequence():
    values = torch.tensor([[1.0, 3.0, 0.0], [4.0, 0.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    assert losses.aggregate(values, mask, "token").item() == pytest.approx((1 + 3 + 4) / 3)
    assert losses.aggregate(values, mask, "sequence").item() == pytest.approx((2.0 + 4.0) / 2)
    # explicit normalisers (global over micro-batches) are honoured
    assert losses.token_mean(values, mask, num_tokens=8).item() == pytest.approx(1.0)
    assert losses.sequence_mean(values, mask, num_sequences=4).item() == pytest.approx(1.5)
    with pytest.raises(ValueError, match="aggregation"):
        losses.aggregate(values, mask, "bogus")  # type: ignore[arg-type]


def test_topk_reverse_kl_hand_computed():
    student = torch.log(torch.tensor([0.5, 0.3, 0.15, 0.05]))
    teacher = torch.log(torch.tensor([0.25, 0.25, 0.25, 0.25]))
    kl = losses.topk_reverse_kl(student, teacher, k=2).item()
    # S = {0, 1}; student (0.5, 0.3, tail 0.2); teacher (0.25, 0.25, tail 0.5)
    expected = 0.5 * math.log(0.5 / 0.25) + 0.3 * math.log(0.3 / 0.25) + 0.2 * math.log(0.2 / 0.5)
    assert kl == pytest.approx(expected, rel=1e-5)
    # identical distributions: zero; full-vocab K equals the exact reverse KL
    assert losses.topk_reverse_kl(student, student, k=2).item() == pytest.approx(0.0, abs=1e-7)
    exact = (student.exp() * (student - teacher)).sum().item()
    assert losses.topk_reverse_kl(student, teacher, k=4).item() == pytest.approx(exact, rel=1e-4)


def test_topk_reverse_kl_gradient_pulls_student_toward_teacher():
    logits = torch.tensor([2.0, 0.0, -1.0, -1.0], requires_grad=True)
    teacher = torch.log_softmax(torch.tensor([0.0, 2.0, -1.0, -1.0]), -1)
    for _ in range(200):
        kl = losses.topk_reverse_kl(torch.log_softmax(logits, -1), teacher, k=2)
        (grad,) = torch.autograd.grad(kl, logits)
        logits = (logits - 0.5 * grad).detach().requires_grad_(True)
    assert torch.log_softmax(logits, -1).argmax().item() == 1
