"""A batch's shared prompt beginning runs once (``response_logits(share_prefix=True)``) and gives the
same logits, gradients and train steps as running every row whole; tiny random Qwen2 model, CPU."""

from __future__ import annotations

import pytest
import torch

from clawgym.inference.models import build_tiny_random, load_tokenizer
from clawgym.rl.trainer import LoraSettings, TorchTrainer, TrainerConfig, batching
from clawgym.rl.trainer.batching import MIN_SHARED_PREFIX, collate, gather_logprobs, response_logits
from clawgym.rl.types import Sample

CPU = torch.device("cpu")
PROMPT = list(range(100, 160))  # 60 tokens every row starts with
ROWS = [  # (prompt, response): one GRPO group, replies of different lengths, and a row whose prompt goes on
    (PROMPT, list(range(300, 312))),
    (PROMPT, list(range(400, 405))),
    (PROMPT + [7, 8, 9], list(range(500, 520))),
]


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer("tiny-random")


def lora_model(tokenizer):
    trainer = TorchTrainer(build_tiny_random(len(tokenizer), seed=3), tokenizer,
                           TrainerConfig(lr=1e-2, lora=LoraSettings(r=4, alpha=8)))
    with torch.no_grad():  # peft starts B at zero: make the adapters matter, so their gradients are tested too
        for name, param in trainer.model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.05, generator=torch.Generator().manual_seed(len(name)))
    return trainer.model


def batch_of(rows):
    return collate([p for p, _ in rows], [r for _, r in rows], pad_id=0, device=CPU)


def loss_and_grads(model, batch, share: bool):
    model.zero_grad(set_to_none=True)
    logprobs = gather_logprobs(response_logits(model, batch, share_prefix=share), batch.targets)
    loss = -(logprobs * batch.response_mask).sum()
    loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}
    return logprobs.detach() * batch.response_mask, grads


def test_shared_prefix_length_stops_before_the_first_prediction():
    batch = batch_of(ROWS)
    # the rows agree on 60 tokens; the first two predict their first reply token from position 59
    assert batching.shared_prefix_length(batch) == len(PROMPT) - 1
    assert batching.shared_prefix_length(batch_of(ROWS[:1])) == 0  # one row: nothing to share
    other = [([1] + PROMPT, list(range(300, 304)))] + ROWS[:1]
    assert batching.shared_prefix_length(batch_of(other)) == 0  # differ at the first token


def test_shared_prefix_gives_the_same_logprobs_and_gradients(tokenizer, monkeypatch):
    model = lora_model(tokenizer)
    batch = batch_of(ROWS)
    calls = []
    run_prefix = batching._hidden_after_prefix
    monkeypatch.setattr(batching, "_hidden_after_prefix",
                        lambda decoder, ids, shared: calls.append(shared) or run_prefix(decoder, ids, shared))
    shared_logprobs, shared_grads = loss_and_grads(model, batch, share=True)
    assert calls == [len(PROMPT) - 1]  # the shared path really ran
    whole_logprobs, whole_grads = loss_and_grads(model, batch, share=False)
    assert len(calls) == 1
    torch.testing.assert_close(shared_logprobs, whole_logprobs, rtol=1e-4, atol=1e-5)
    assert shared_grads.keys() == whole_grads.keys() and len(shared_grads) > 0
    for name in whole_grads:
        torch.testing.assert_close(shared_grads[name], whole_grads[name], rtol=1e-3, atol=1e-5, msg=name)
    assert any(float(g.abs().sum()) > 0 for g in shared_grads.values())


def test_short_or_absent_shared_prefix_runs_every_row_whole(tokenizer, monkeypatch):
    model = lora_model(tokenizer)
    monkeypatch.setattr(batching, "_hidden_after_prefix", lambda *a: pytest.fail("nothing worth sharing"))
    short = list(range(100, 100 + MIN_SHARED_PREFIX - 1))
    rows = [(short + [1, 2], list(range(300, 305))), (short + [3, 4], list(range(400, 403)))]
    assert batching.shared_prefix_length(batch_of(rows)) == MIN_SHARED_PREFIX - 1
    with torch.no_grad():
        response_logits(model, batch_of(rows))
        response_logits(model, batch_of(ROWS[:1]))


def test_gradient_checkpointing_runs_every_row_whole(tokenizer, monkeypatch):
    """Checkpointed layers drop the KV cache, so the shared path would be wrong there: it is not taken."""
    trainer = TorchTrainer(build_tiny_random(len(tokenizer), seed=3), tokenizer,
                           TrainerConfig(lora=LoraSettings(r=4, alpha=8), gradient_checkpointing=True))
    monkeypatch.setattr(batching, "_hidden_after_prefix", lambda *a: pytest.fail("shared under checkpointing"))
    batch = batch_of(ROWS)
    logprobs, grads = loss_and_grads(trainer.model, batch, share=True)
    assert torch.isfinite(logprobs).all() and len(grads) > 0


def test_a_train_step_with_and_without_sharing_ends_at_the_same_weights(tokenizer):
    def trained(share: bool):
        torch.manual_seed(0)
        cfg = TrainerConfig(lr=1e-2, micro_batch_size=4, lora=LoraSettings(r=4, alpha=8), shared_prefix=share)
        trainer = TorchTrainer(build_tiny_random(len(tokenizer), seed=3), tokenizer, cfg)
        samples = [Sample(prompt_ids=p, response_ids=r, old_logprobs=[-2.0] * len(r), reward=float(i % 2),
                          group_id="g") for i, (p, r) in enumerate(ROWS + [(PROMPT, [9, 10, 11])])]
        metrics = trainer.train_step(samples)
        return metrics, trainer.trainable_state_dict()

    shared_metrics, shared_weights = trained(True)
    whole_metrics, whole_weights = trained(False)
    assert shared_metrics["loss"] == pytest.approx(whole_metrics["loss"], rel=1e-4, abs=1e-6)
    assert shared_metrics["grad_norm"] == pytest.approx(whole_metrics["grad_norm"], rel=1e-3)
    for name, value in whole_weights.items():
        torch.testing.assert_close(shared_weights[name], value, rtol=1e-4, atol=1e-6, msg=name)


def test_micro_batches_put_each_prompts_samples_together():
    a, b, c, d = [1] * 20, [2] * 20, [3] * 20, [4] * 20
    prompts = [a, b, a, c, b, a, d]
    assert batching.micro_batches(prompts, 3) == [[0, 1, 2], [3, 4, 5], [6]]  # in order, as before
    assert batching.micro_batches(prompts, 3, by_prompt=True) == [[0, 2, 5], [1, 4], [3, 6]]
    assert batching.micro_batches(prompts, 2, by_prompt=True) == [[0, 2], [5], [1, 4], [3, 6]]
    assert batching.micro_batches([], 4, by_prompt=True) == []
    every = sorted(i for chunk in batching.micro_batches(prompts, 2, by_prompt=True) for i in chunk)
    assert every == list(range(len(prompts)))  # every sample once


def interleaved_samples():
    """Two groups' samples interleaved, as the personal trainer's batches can come."""
    other = list(range(200, 250))
    rows = [(PROMPT, list(range(300, 310))), (other, list(range(310, 316))), (PROMPT, list(range(320, 334))),
            (other, list(range(340, 343)))]
    return [Sample(prompt_ids=p, response_ids=r, old_logprobs=[-2.0] * len(r), reward=float(i // 2),
                   group_id=f"g{i % 2}") for i, (p, r) in enumerate(rows)]


@pytest.mark.parametrize("threshold", [0, 10_000])
def test_checkpointing_threshold_changes_speed_not_the_step(tokenizer, monkeypatch, threshold):
    """gradient_checkpointing with checkpoint_above_tokens: a micro-batch under the threshold runs
    without it (and shares its prompt), one over it is checkpointed; both end at the same weights as
    a step without checkpointing or sharing."""
    shared_calls = []
    run_prefix = batching._hidden_after_prefix
    monkeypatch.setattr(batching, "_hidden_after_prefix",
                        lambda decoder, ids, shared: shared_calls.append(shared) or run_prefix(decoder, ids, shared))

    def trained(**overrides):
        cfg = TrainerConfig(lr=1e-2, micro_batch_size=4, lora=LoraSettings(r=4, alpha=8), **overrides)
        trainer = TorchTrainer(build_tiny_random(len(tokenizer), seed=3), tokenizer, cfg)
        metrics = trainer.train_step(interleaved_samples())
        layers = [m for m in trainer.model.modules() if hasattr(m, "gradient_checkpointing")]
        return metrics, trainer.trainable_state_dict(), layers

    plain_metrics, plain_weights, _ = trained(shared_prefix=False)
    assert shared_calls == []
    metrics, weights, layers = trained(gradient_checkpointing=True, checkpoint_above_tokens=threshold)
    # by prompt: two micro-batches of one group each, each shared only when not checkpointed
    assert shared_calls == ([] if threshold == 0 else [len(PROMPT) - 1, 49])
    assert any(m.gradient_checkpointing for m in layers)  # configured as before once the step is done
    assert metrics["loss"] == pytest.approx(plain_metrics["loss"], rel=1e-4, abs=1e-6)
    for name, value in plain_weights.items():
        torch.testing.assert_close(weights[name], value, rtol=1e-4, atol=1e-6, msg=name)


def test_negative_checkpoint_threshold_is_refused():
    with pytest.raises(ValueError, match="checkpoint_above_tokens"):
        TrainerConfig(checkpoint_above_tokens=-1)


def test_hybrid_teacher_logprobs_are_the_same_shared(tokenizer):
    """The OPD teacher's pass (hinted prompts, no gradients, checkpointing configured) groups by prompt too."""
    from clawgym.rl.trainer.samples import render_prompt_ids

    contexts = [[{"role": "system", "content": "You are a helpful assistant who grades homework. " * 4},
                 {"role": "user", "content": f"Please grade answer {n} to the problem about {n} apples."}]
                for n in (3, 7)]

    def samples():
        out = []
        for i in range(6):
            context = contexts[i % 2]
            reply = list(range(300 + i, 312 + 2 * i))
            out.append(Sample(prompt_ids=render_prompt_ids(tokenizer, context), response_ids=reply,
                              old_logprobs=[-2.0] * len(reply), reward=float(i // 2 % 2), group_id=f"g{i % 2}",
                              hint="Name the student.", hint_messages=context))
        return out

    def trained(share: bool):
        cfg = TrainerConfig(method="hybrid", lr=1e-2, micro_batch_size=4, hint_format="inline",
                            gradient_checkpointing=True, checkpoint_above_tokens=4096,
                            lora=LoraSettings(r=4, alpha=8), shared_prefix=share)
        trainer = TorchTrainer(build_tiny_random(len(tokenizer), seed=3), tokenizer, cfg)
        batch = samples()
        trainer.train_step(batch)
        return [s.teacher_logprobs for s in batch], trainer.trainable_state_dict()

    shared_teacher, shared_weights = trained(True)
    whole_teacher, whole_weights = trained(False)
    for shared_row, whole_row in zip(shared_teacher, whole_teacher):
        assert shared_row == pytest.approx(whole_row, abs=1e-5)
    for name, value in whole_weights.items():
        torch.testing.assert_close(shared_weights[name], value, rtol=1e-4, atol=1e-6, msg=name)
