"""A long prompt beginning run without gradients, once per set of weights (``trainer.frozen_prompt_above``):
the same log-probs as the whole sequence, gradients only through the replies' own positions, the keys and
values reused across micro-batches and extended for a longer prompt, and cleared when the weights change.
Tiny random Qwen2 model, CPU."""

from __future__ import annotations

import pytest
import torch

from clawgym.inference.models import build_tiny_random, load_tokenizer
from clawgym.rl.trainer import LoraSettings, TorchTrainer, TrainerConfig
from clawgym.rl.trainer.batching import collate, gather_logprobs, response_logits
from clawgym.rl.trainer.frozen_prompt import PromptKV
from clawgym.rl.types import Sample

CPU = torch.device("cpu")
SYSTEM = list(range(100, 180))  # what every turn starts with (OpenClaw's system prompt, in small)
TURN_A = SYSTEM + [7, 8, 9]
TURN_B = SYSTEM + [11, 12]


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer("tiny-random")


def lora_trainer(tokenizer, **config) -> TorchTrainer:
    trainer = TorchTrainer(build_tiny_random(len(tokenizer), seed=3), tokenizer,
                           TrainerConfig(lr=1e-2, lora=LoraSettings(r=4, alpha=8), **config))
    with torch.no_grad():  # peft starts B at zero: make the adapters matter
        for name, param in trainer.model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.05, generator=torch.Generator().manual_seed(len(name)))
    return trainer


def logprobs_and_grads(model, rows, prompt_kv=None):
    batch = collate([p for p, _ in rows], [r for _, r in rows], pad_id=0, device=CPU)
    model.zero_grad(set_to_none=True)
    logprobs = gather_logprobs(response_logits(model, batch, prompt_kv=prompt_kv), batch.targets)
    (-(logprobs * batch.response_mask).sum()).backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return logprobs.detach() * batch.response_mask, grads


def test_frozen_prompt_gives_the_whole_sequences_logprobs_and_trains_through_the_replies(tokenizer):
    model = lora_trainer(tokenizer).model
    group = [(TURN_A, list(range(300, 312))), (TURN_A, list(range(400, 405)))]
    kv = PromptKV(min_tokens=32)
    frozen, frozen_grads = logprobs_and_grads(model, group, kv)
    whole, whole_grads = logprobs_and_grads(model, group)
    torch.testing.assert_close(frozen, whole, rtol=1e-4, atol=1e-5)
    assert kv.run_tokens == len(TURN_A) - 1  # the group's prompt ran once, without its last token
    # the gradient leaves out the path through the prompt's keys and values: close, not equal
    assert frozen_grads.keys() == whole_grads.keys()
    assert all(float(g.abs().sum()) > 0 for name, g in frozen_grads.items() if "lora_B" in name)
    differs = [n for n in whole_grads if not torch.allclose(frozen_grads[n], whole_grads[n], rtol=1e-3, atol=1e-6)]
    assert differs  # a real approximation, not a second name for the whole pass


def test_a_longer_prompt_extends_the_cached_beginning_and_one_row_freezes_its_own_prompt(tokenizer):
    model = lora_trainer(tokenizer).model
    kv = PromptKV(min_tokens=32)
    logprobs_and_grads(model, [(SYSTEM + [5], [301, 302])], kv)  # one row: its prompt but the last token
    assert kv.run_tokens == len(SYSTEM) and kv.reused_tokens == 0
    one_b, _ = logprobs_and_grads(model, [(TURN_B, [303, 304, 305])], kv)
    assert kv.run_tokens == len(SYSTEM) + 1  # TURN_B[:-1] = SYSTEM + [11]: only the new token ran
    assert kv.reused_tokens == len(SYSTEM)
    whole_b, _ = logprobs_and_grads(model, [(TURN_B, [303, 304, 305])])
    torch.testing.assert_close(one_b, whole_b, rtol=1e-4, atol=1e-5)


def test_a_short_prompt_runs_whole(tokenizer):
    model = lora_trainer(tokenizer).model
    kv = PromptKV(min_tokens=500)
    logprobs_and_grads(model, [(TURN_A, [301, 302]), (TURN_A, [303])], kv)
    assert kv.run_tokens == 0 and not kv.entries


def test_train_steps_match_the_whole_pass_and_the_cache_follows_the_weights(tokenizer):
    samples = [Sample(prompt_ids=list(p), response_ids=r, old_logprobs=[-1.0] * len(r), loss_mask=[1] * len(r),
                      reward=reward, group_id=g)
               for p, r, reward, g in [(TURN_A, [300, 301, 302], 1.0, "a"), (TURN_A, [310, 311], 0.0, "a"),
                                       (TURN_B, [320, 321, 322, 323], 1.0, "b"), (TURN_B, [330], 0.0, "b")]]
    frozen = lora_trainer(tokenizer, frozen_prompt_above=32, micro_batch_size=2, grad_accum=2,
                           gradient_checkpointing=True)
    whole = lora_trainer(tokenizer, micro_batch_size=2, grad_accum=2, gradient_checkpointing=True)
    first_frozen, first_whole = frozen.train_step(samples), whole.train_step(samples)
    assert first_frozen["loss"] == pytest.approx(first_whole["loss"], rel=1e-4, abs=1e-6)  # the same weights
    kv = frozen._policy_kv
    assert not kv.entries  # cleared: the optimiser step changed the weights
    assert kv.run_tokens == len(TURN_A) - 1 + (len(TURN_B) - 1 - len(SYSTEM))  # B reused the system prompt A ran
    second = frozen.train_step(samples)
    assert second["loss"] == pytest.approx(whole.train_step(samples)["loss"], rel=0.05, abs=1e-4)


def test_bad_threshold_is_refused():
    with pytest.raises(ValueError, match="frozen_prompt_above"):
        TrainerConfig(frozen_prompt_above=-1)
    with pytest.raises(ValueError, match="min_tokens"):
        PromptKV(0)


def test_a_frozen_micro_batch_trains_a_row_at_a_time_with_the_same_update(tokenizer):
    """Replies on a frozen prompt attend to all of it without checkpointing: batched, the attention weights kept for
    the backward pass grow as rows x reply x prompt (GBs for OpenClaw's replies); a row at a time they do not."""
    group = [Sample(prompt_ids=list(TURN_A), response_ids=r, old_logprobs=[-1.0] * len(r), loss_mask=[1] * len(r),
                    reward=reward, group_id="a")
             for r, reward in [([300, 301, 302], 1.0), ([310, 311], 0.0), ([320], 1.0), ([330, 331], 0.0)]]
    batched = lora_trainer(tokenizer, frozen_prompt_above=32, micro_batch_size=4)
    single = lora_trainer(tokenizer, frozen_prompt_above=32, micro_batch_size=1, grad_accum=4)
    rows = []
    decoder = batched.model.get_base_model().get_decoder()
    hook = decoder.register_forward_hook(lambda module, args, kwargs, out: rows.append(kwargs["input_ids"].shape[0]),
                                         with_kwargs=True)
    try:
        first = batched.train_step(group)
    finally:
        hook.remove()
    assert rows and set(rows) == {1}  # the prompt ran once, then each row's reply alone
    assert batched._policy_kv.run_tokens == len(TURN_A) - 1
    assert first["loss"] == pytest.approx(single.train_step(group)["loss"], rel=1e-5, abs=1e-7)
    for (name, a), (_, b) in zip(batched.model.named_parameters(), single.model.named_parameters()):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6, msg=name)
