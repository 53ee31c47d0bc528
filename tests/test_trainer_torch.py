"""The torch trainer on the tiny random Qwen2 model with the real SmolLM2 tokenizer (CPU, offline)."""

from __future__ import annotations

import copy
import os

import pytest
import torch

from clawgym.inference.models import build_tiny_random, load_tokenizer
from clawgym.rl import losses
from clawgym.rl.trainer import LoraSettings, TorchTrainer, TrainerConfig
from clawgym.rl.trainer import checkpoint as ckpt
from clawgym.rl.trainer.batching import collate, gather_logprobs, response_logits
from clawgym.rl.trainer.samples import HINT_HEADER, hinted_messages, render_prompt_ids, teacher_prompt_ids
from clawgym.rl.types import Sample

CONTEXT = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Say hello to the user."},
]


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer("tiny-random")


def tiny(tokenizer, seed: int = 0):
    return build_tiny_random(len(tokenizer), seed=seed)


def peaky(model, scale: float = 10.0):
    """Sharpen the random model's output (scale the final norm) so a hint changes its logprobs a lot."""
    with torch.no_grad():
        model.model.norm.weight.mul_(scale)
    return model


def encode(tokenizer, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.convert_tokens_to_ids("<|im_end|>")]


@torch.no_grad()
def current_logprobs(trainer: TorchTrainer, prompt: list[int], response: list[int]) -> list[float]:
    """What the serving side would report for ``response``: the policy's own logprobs (on-policy)."""
    batch = collate([prompt], [response], trainer.pad_id, trainer.device)
    return gather_logprobs(response_logits(trainer.model, batch), batch.targets)[0].tolist()


def make_sample(trainer, prompt, response, reward=0.0, group="g", **kw) -> Sample:
    return Sample(prompt_ids=prompt, response_ids=response, old_logprobs=current_logprobs(trainer, prompt, response),
                  reward=reward, group_id=group, **kw)


# ---- hinted teacher prompt -------------------------------------------------------------------


def test_hint_goes_to_last_user_message_and_input_is_untouched():
    messages = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "second"},
        {"role": "tool", "content": "result"},
    ]
    out = hinted_messages(messages, "  use a list  ")
    assert out[2]["content"] == f"second\n\n{HINT_HEADER}\nuse a list"
    assert out[0]["content"] == "first" and messages[2]["content"] == "second"
    parts = hinted_messages([{"role": "user", "content": [{"type": "text", "text": "hi"}]}], "h")
    assert parts[0]["content"][-1]["text"].endswith("h")
    with pytest.raises(ValueError, match="no user message"):
        hinted_messages([{"role": "system", "content": "s"}], "h")
    inline = hinted_messages(messages, "  use a list  ", "inline")  # the user's own words, no header
    assert inline[2]["content"] == "second use a list" and messages[2]["content"] == "second"
    with pytest.raises(ValueError, match="unknown hint_format 'footer'"):
        hinted_messages(messages, "h", "footer")


def test_the_inline_hint_format_reaches_the_teacher_prompt(tokenizer):
    trainer = TorchTrainer(tiny(tokenizer), tokenizer, TrainerConfig(method="opd", hint_format="inline"))
    sample = make_sample(trainer, render_prompt_ids(tokenizer, CONTEXT), encode(tokenizer, "Hi!"),
                         hint="Greet them warmly.", hint_messages=CONTEXT)
    text = tokenizer.decode(teacher_prompt_ids(tokenizer, sample, trainer.config.hint_format))
    assert "Greet them warmly." in text and HINT_HEADER not in text
    trainer.compute_teacher_logprobs([sample])
    header = make_sample(trainer, sample.prompt_ids, sample.response_ids,
                         hint="Greet them warmly.", hint_messages=CONTEXT)
    TorchTrainer(trainer.model, tokenizer, TrainerConfig(method="opd")).compute_teacher_logprobs([header])
    # the trainer scored the inline prompt, not the header one
    assert sample.teacher_logprobs != header.teacher_logprobs
    with pytest.raises(ValueError, match="hint_format"):
        TrainerConfig(hint_format="footer")


def test_teacher_logprobs_cover_response_only_on_hinted_prompt(tokenizer):
    model = tiny(tokenizer)
    trainer = TorchTrainer(model, tokenizer, TrainerConfig(method="opd"))
    prompt = render_prompt_ids(tokenizer, CONTEXT)
    response = encode(tokenizer, "Hello there!")
    sample = make_sample(trainer, prompt, response, hint="Greet them warmly.", hint_messages=CONTEXT)
    trainer.compute_teacher_logprobs([sample])
    hinted = teacher_prompt_ids(tokenizer, sample)
    text = tokenizer.decode(hinted)
    assert "Greet them warmly." in text and HINT_HEADER in text and text.endswith("<|im_start|>assistant\n")
    # reference computation: full HF forward of the frozen initial model on hinted prompt + response
    with torch.no_grad():
        ids = torch.tensor([hinted + response])
        logp = torch.log_softmax(trainer._frozen(ids).logits[0].float(), -1)
        start = len(hinted)
        expected = [logp[start - 1 + j, tok].item() for j, tok in enumerate(response)]
    assert len(sample.teacher_logprobs) == len(response)
    assert sample.teacher_logprobs == pytest.approx(expected, abs=1e-5)
    assert sample.teacher_logprobs != pytest.approx(sample.old_logprobs, abs=1e-3)  # the hint matters


# ---- learning --------------------------------------------------------------------------------


def test_binary_rl_raises_the_good_response(tokenizer):
    trainer = TorchTrainer(tiny(tokenizer), tokenizer, TrainerConfig(method="grpo", lr=3e-3, micro_batch_size=2))
    prompt = render_prompt_ids(tokenizer, CONTEXT)
    good, bad = encode(tokenizer, "Hello!"), encode(tokenizer, "Go away.")
    start_gap = sum(current_logprobs(trainer, prompt, good)) - sum(current_logprobs(trainer, prompt, bad))
    start_good = sum(current_logprobs(trainer, prompt, good))
    for _ in range(20):
        metrics = trainer.train_step([make_sample(trainer, prompt, good, 1.0), make_sample(trainer, prompt, bad, -1.0)])
        assert metrics["skipped"] == 0.0
    gap = sum(current_logprobs(trainer, prompt, good)) - sum(current_logprobs(trainer, prompt, bad))
    assert gap > start_gap + 5.0
    assert sum(current_logprobs(trainer, prompt, good)) > start_good + 2.0
    assert trainer.step == 20 and trainer.version == 20


def test_opd_moves_student_toward_hinted_teacher(tokenizer):
    trainer = TorchTrainer(peaky(tiny(tokenizer)), tokenizer, TrainerConfig(method="opd", lr=1e-5))
    prompt = render_prompt_ids(tokenizer, CONTEXT)
    response = encode(tokenizer, "Hi friend, nice to meet you.")
    probe = make_sample(trainer, prompt, response, hint="Be friendly.", hint_messages=CONTEXT)
    trainer.compute_teacher_logprobs([probe])
    teacher = torch.tensor(probe.teacher_logprobs)

    def distance() -> float:
        return (torch.tensor(current_logprobs(trainer, prompt, response)) - teacher).abs().mean().item()

    before = distance()
    for _ in range(15):
        metrics = trainer.train_step(
            [make_sample(trainer, prompt, response, hint="Be friendly.", hint_messages=CONTEXT)])
    assert before > 0.1  # the hint really changes the teacher's view of the response
    assert distance() < 0.35 * before
    assert abs(metrics["opd_adv_mean"]) < 0.35 * before  # the advantage shrank with the gap


def test_opd_topk_reduces_topk_kl(tokenizer):
    trainer = TorchTrainer(peaky(tiny(tokenizer)), tokenizer,
                           TrainerConfig(method="opd_topk", lr=1e-5, topk=8, w_rl=0.0))
    prompt = render_prompt_ids(tokenizer, CONTEXT)
    response = encode(tokenizer, "Hello there, friend.")
    history = [
        trainer.train_step([make_sample(trainer, prompt, response, hint="Be warm.", hint_messages=CONTEXT)])["topk_kl"]
        for _ in range(10)
    ]
    assert history[0] > 1e-3 and history[-1] < 0.5 * history[0], history


def test_kl_to_reference_starts_at_zero_then_grows(tokenizer):
    trainer = TorchTrainer(tiny(tokenizer), tokenizer, TrainerConfig(lr=3e-3, kl_coef=0.1))
    prompt = render_prompt_ids(tokenizer, CONTEXT)
    a, b = encode(tokenizer, "Yes."), encode(tokenizer, "No.")
    kls = [
        trainer.train_step([make_sample(trainer, prompt, a, 1.0), make_sample(trainer, prompt, b, -1.0)])["kl"]
        for _ in range(4)]
    assert kls[0] == pytest.approx(0.0, abs=1e-6)
    assert kls[-1] > 1e-4


def test_kl_reference_is_a_constant_with_lora_and_checkpointing(tokenizer, monkeypatch):
    """The chat launcher's setting (LoRA + checkpointing makes the input embeddings require grad): the reference
    log-probs the KL term sees carry no graph, so the reference forward is neither stored nor backpropagated."""
    seen = []
    kl_k3 = losses.kl_k3

    def recording_kl(logprobs, ref_logprobs):
        seen.append((logprobs.requires_grad, ref_logprobs.requires_grad))
        return kl_k3(logprobs, ref_logprobs)

    monkeypatch.setattr(losses, "kl_k3", recording_kl)
    cfg = TrainerConfig(lr=3e-3, kl_coef=0.1, gradient_checkpointing=True, checkpoint_above_tokens=0,
                        lora=LoraSettings(r=4, alpha=8, target_modules=("q_proj", "v_proj")))
    trainer = TorchTrainer(tiny(tokenizer), tokenizer, cfg)
    prompt = render_prompt_ids(tokenizer, CONTEXT)
    a, b = encode(tokenizer, "Yes."), encode(tokenizer, "No.")
    kls = [trainer.train_step([make_sample(trainer, prompt, a, 1.0), make_sample(trainer, prompt, b, -1.0)])["kl"]
           for _ in range(3)]
    assert seen and all(policy and not reference for policy, reference in seen), seen
    assert kls[-1] > 0.0  # the term still trains the policy toward the reference


# ---- batching --------------------------------------------------------------------------------


@pytest.mark.parametrize("aggregation", ["token", "sequence"])
def test_gradient_accumulation_matches_one_big_batch(tokenizer, aggregation):
    prompt = render_prompt_ids(tokenizer, CONTEXT)
    responses = [encode(tokenizer, "Hello!"), encode(tokenizer, "A much longer answer with several more tokens in it.")]
    results = []
    for mbs, accum in ((1, 2), (2, 1)):
        cfg = TrainerConfig(lr=1e-3, micro_batch_size=mbs, grad_accum=accum, aggregation=aggregation, max_grad_norm=0.0)
        trainer = TorchTrainer(tiny(tokenizer), tokenizer, cfg)
        samples = [make_sample(trainer, prompt, r, reward) for r, reward in zip(responses, (1.0, -1.0))]
        samples[1].loss_mask[:3] = [0, 0, 0]  # a partly masked response
        metrics = trainer.train_step(samples)
        # the accumulated gradient stays on the parameters after the step (no clipping: max_grad_norm=0)
        results.append((metrics, {n: p.grad.clone() for n, p in trainer.model.named_parameters()}))
    (m1, p1), (m2, p2) = results
    assert m1["optimizer_steps"] == m2["optimizer_steps"] == 1
    assert m1["grad_norm"] == pytest.approx(m2["grad_norm"], rel=1e-5)
    assert m1["loss"] == pytest.approx(m2["loss"], rel=1e-5, abs=1e-7)
    assert any(g.abs().max() > 0 for g in p1.values())
    for name in p1:
        scale = float(p1[name].abs().max())  # padding changes the kernels' summation order: float noise only
        torch.testing.assert_close(p1[name], p2[name], rtol=1e-4, atol=1e-5 * scale + 1e-12)


def test_more_samples_than_one_step_take_several_optimizer_steps(tokenizer):
    trainer = TorchTrainer(tiny(tokenizer), tokenizer, TrainerConfig(micro_batch_size=1, grad_accum=2))
    prompt = render_prompt_ids(tokenizer, CONTEXT)
    samples = [make_sample(trainer, prompt, encode(tokenizer, t), r) for t, r in (("a", 1.0), ("b", -1.0), ("c", 1.0))]
    metrics = trainer.train_step(samples)
    assert metrics["optimizer_steps"] == 2 and trainer.step == 2 and trainer.version == 1


# ---- bad input ---------------------------------------------------------------------------------


def test_bad_samples_and_config_are_refused_with_clear_errors(tokenizer):
    trainer = TorchTrainer(tiny(tokenizer), tokenizer, TrainerConfig(method="opd"))
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    prompt = render_prompt_ids(tokenizer, CONTEXT)
    with pytest.raises(ValueError, match="needs a hint"):
        trainer.train_step([make_sample(trainer, prompt, encode(tokenizer, "x"))])
    with pytest.raises(ValueError, match="vocabulary"):
        trainer.train_step(
            [Sample(prompt_ids=prompt, response_ids=[10**7], old_logprobs=[-1.0], hint="h", hint_messages=CONTEXT)])
    with pytest.raises(ValueError, match="empty response"):
        trainer.train_step([Sample(prompt_ids=prompt, response_ids=[], old_logprobs=[], hint="h")])
    with pytest.raises(ValueError, match="no hint_messages"):
        trainer.train_step([Sample(prompt_ids=prompt, response_ids=[5], old_logprobs=[-1.0], hint="h")])
    with pytest.raises(ValueError, match="at least one"):
        trainer.train_step([])
    with pytest.raises(ValueError, match="aggregation"):
        TrainerConfig(aggregation="mean")  # type: ignore[arg-type]
    assert trainer.step == 0
    for name, value in trainer.model.named_parameters():
        assert torch.equal(value, before[name]), name  # nothing was changed by the refused steps


# ---- LoRA and export -------------------------------------------------------------------------


def test_lora_trains_only_adapters_and_exports_merged_weights(tokenizer):
    model = tiny(tokenizer)
    original = {k: v.clone() for k, v in model.state_dict().items()}
    cfg = TrainerConfig(lr=1e-2, lora=LoraSettings(r=4, alpha=8, target_modules=("q_proj", "v_proj", "up_proj")))
    trainer = TorchTrainer(model, tokenizer, cfg)
    prompt = render_prompt_ids(tokenizer, CONTEXT)
    good, bad = encode(tokenizer, "Hello!"), encode(tokenizer, "Bye.")
    for _ in range(3):
        trainer.train_step([make_sample(trainer, prompt, good, 1.0), make_sample(trainer, prompt, bad, -1.0)])
    trained = {n for n, p in trainer.model.named_parameters() if p.requires_grad}
    assert trained and all("lora_" in n for n in trained)
    exported = trainer.export_weights()
    assert set(exported) == set(original)
    changed = {k for k in original if not torch.equal(exported[k], original[k])}
    assert changed and all(any(t in k for t in ("q_proj", "v_proj", "up_proj")) for k in changed)
    # base weights themselves never moved; the merge equals peft's own merge_and_unload
    for name, value in trainer.model.get_base_model().state_dict().items():
        if "base_layer" in name or "lora_" not in name and name in original:
            assert torch.equal(value, original[name.replace(".base_layer.", ".")]), name
    merged = copy.deepcopy(trainer.model).merge_and_unload().state_dict()
    for name in original:
        torch.testing.assert_close(exported[name], merged[name], rtol=1e-5, atol=1e-6)
    # the exported weights serve: a fresh HF model loaded with them matches the trained policy
    fresh = tiny(tokenizer, seed=1)
    fresh.load_state_dict(exported)
    batch = collate([prompt], [good], trainer.pad_id, trainer.device)
    with torch.no_grad():
        torch.testing.assert_close(response_logits(fresh, batch),
                                   response_logits(trainer.model, batch), rtol=1e-4, atol=1e-4)


def test_lora_teacher_is_base_model_with_adapters_disabled(tokenizer):
    cfg = TrainerConfig(method="hybrid", lr=1e-2, lora=LoraSettings(r=4, alpha=8, target_modules=("q_proj", "v_proj")))
    trainer = TorchTrainer(tiny(tokenizer), tokenizer, cfg)
    reference = tiny(tokenizer)  # same seed: the initial weights
    prompt = render_prompt_ids(tokenizer, CONTEXT)
    response = encode(tokenizer, "Hello!")
    for _ in range(2):
        trainer.train_step([make_sample(trainer, prompt, response, 1.0)])
    sample = make_sample(trainer, prompt, response, 1.0, hint="Be brief.", hint_messages=CONTEXT)
    trainer.compute_teacher_logprobs([sample])
    hinted = teacher_prompt_ids(tokenizer, sample)
    batch = collate([hinted], [response], trainer.pad_id, trainer.device)
    with torch.no_grad():
        expected = gather_logprobs(response_logits(reference, batch), batch.targets)[0].tolist()
    assert sample.teacher_logprobs == pytest.approx(expected, abs=1e-5)


def test_full_export_matches_model_state(tokenizer):
    trainer = TorchTrainer(tiny(tokenizer), tokenizer, TrainerConfig(lr=1e-2))
    prompt = render_prompt_ids(tokenizer, CONTEXT)
    trainer.train_step([make_sample(trainer, prompt, encode(tokenizer, "Hi"), 1.0, group="")])
    exported = trainer.export_weights(dtype=torch.bfloat16)
    state = trainer.model.state_dict()
    assert set(exported) == set(state)
    assert all(v.dtype == torch.bfloat16 and v.device.type == "cpu" for v in exported.values())
    exported["model.norm.weight"].add_(1.0)  # a copy: mutating it leaves the policy alone
    assert not torch.equal(exported["model.norm.weight"].float(), state["model.norm.weight"])


# ---- checkpoints -----------------------------------------------------------------------------


@pytest.mark.parametrize("lora", [None, LoraSettings(r=4, alpha=8, target_modules=("q_proj", "v_proj"))])
def test_checkpoint_resume_reproduces_the_next_step_exactly(tokenizer, tmp_path, lora):
    cfg = TrainerConfig(lr=5e-3, lora=lora, kl_coef=0.05)
    prompt = render_prompt_ids(tokenizer, CONTEXT)
    good, bad = encode(tokenizer, "Hello!"), encode(tokenizer, "Bye now.")

    def batch(trainer):
        return [make_sample(trainer, prompt, good, 1.0), make_sample(trainer, prompt, bad, -1.0)]

    first = TorchTrainer(tiny(tokenizer), tokenizer, cfg)
    for _ in range(2):
        first.train_step(batch(first))
    first.save_checkpoint(tmp_path / "ckpt")
    expected = first.train_step(batch(first))
    expected_weights = first.export_weights()

    second = TorchTrainer(tiny(tokenizer), tokenizer, cfg)
    second.load_checkpoint(tmp_path / "ckpt")
    assert (second.step, second.version) == (2, 2)
    got = second.train_step(batch(second))
    for key in ("loss", "pg_loss", "kl", "grad_norm", "clip_frac"):
        assert got[key] == expected[key], key
    for name, value in second.export_weights().items():
        assert torch.equal(value, expected_weights[name]), name


def test_checkpoint_refuses_mismatch_and_missing(tokenizer, tmp_path):
    full = TorchTrainer(tiny(tokenizer), tokenizer, TrainerConfig())
    full.save_checkpoint(tmp_path / "full")
    lora = TorchTrainer(tiny(tokenizer), tokenizer, TrainerConfig(lora=LoraSettings(r=2, target_modules=("q_proj",))))
    with pytest.raises(ValueError, match="LoRA"):
        lora.load_checkpoint(tmp_path / "full")
    with pytest.raises(FileNotFoundError, match="no complete checkpoint"):
        full.load_checkpoint(tmp_path / "nowhere")


def test_atomic_directory_keeps_old_checkpoint_on_failure(tmp_path):
    target = tmp_path / "ckpt"
    with ckpt.atomic_directory(target) as tmp:
        (tmp / "weights").write_text("v1")
    with pytest.raises(RuntimeError, match="disk full"):
        with ckpt.atomic_directory(target) as tmp:
            (tmp / "weights").write_text("v2-partial")
            raise RuntimeError("disk full")
    assert (target / "weights").read_text() == "v1"
    assert sorted(os.listdir(tmp_path)) == ["ckpt"]  # no temp directory left behind
    with ckpt.atomic_directory(target) as tmp:
        (tmp / "weights").write_text("v2")
    assert (ckpt.resolve(target) / "weights").read_text() == "v2"
    assert sorted(os.listdir(tmp_path)) == ["ckpt"]


def test_gradient_checkpointing_gives_the_same_step(tokenizer):
    prompt = render_prompt_ids(tokenizer, CONTEXT)
    results = []
    for checkpointing in (False, True):
        trainer = TorchTrainer(tiny(tokenizer), tokenizer, TrainerConfig(lr=1e-3, gradient_checkpointing=checkpointing))
        samples = [make_sample(trainer, prompt, encode(tokenizer, t), r) for t, r in (("Hello!", 1.0), ("Go.", -1.0))]
        results.append(trainer.train_step(samples))
    assert results[0]["grad_norm"] == pytest.approx(results[1]["grad_norm"], rel=1e-5)
    assert results[0]["loss"] == pytest.approx(results[1]["loss"], rel=1e-5, abs=1e-8)


def test_current_teacher_uses_the_trained_policy_and_hybrid_skips_unhinted(tokenizer):
    trainer = TorchTrainer(tiny(tokenizer), tokenizer, TrainerConfig(method="hybrid", lr=1e-2, teacher="current"))
    assert trainer._frozen is None  # no copy of the initial weights is needed
    prompt = render_prompt_ids(tokenizer, CONTEXT)
    response = encode(tokenizer, "Hello!")
    plain = make_sample(trainer, prompt, response, 1.0)
    hinted = make_sample(trainer, prompt, response, -1.0, hint="Be brief.", hint_messages=CONTEXT)
    trainer.train_step([plain, hinted])
    assert plain.teacher_logprobs is None and len(hinted.teacher_logprobs) == len(response)
    probe = make_sample(trainer, prompt, response, 0.0, hint="Be brief.", hint_messages=CONTEXT)
    trainer.compute_teacher_logprobs([probe])
    batch = collate([teacher_prompt_ids(tokenizer, probe)], [response], trainer.pad_id, trainer.device)
    with torch.no_grad():
        expected = gather_logprobs(response_logits(trainer.model, batch), batch.targets)[0].tolist()
    assert probe.teacher_logprobs == pytest.approx(expected, abs=1e-6)  # the updated weights, not the initial ones
    assert probe.teacher_logprobs != pytest.approx(hinted.teacher_logprobs, abs=1e-4)


def test_padded_batch_gives_each_row_the_logprobs_it_has_alone(tokenizer):
    """Right padding needs no mask under causal attention (so SDPA can use its blocked kernel)."""
    model = tiny(tokenizer)
    rows = [(list(range(5, 40)), list(range(50, 58))), (list(range(7, 19)), list(range(60, 63)))]
    batch = collate([p for p, _ in rows], [r for _, r in rows], pad_id=0, device=torch.device("cpu"))
    with torch.no_grad():
        together = gather_logprobs(response_logits(model, batch), batch.targets)
        for i, (prompt, response) in enumerate(rows):
            alone = collate([prompt], [response], pad_id=0, device=torch.device("cpu"))
            expected = gather_logprobs(response_logits(model, alone), alone.targets)[0]
            assert torch.allclose(together[i, : len(response)], expected, atol=1e-5)


def test_int8_serving_weights_track_published_weights_and_tis_corrects_the_gap():
    """policy.quantize=int8: the served copy quantises what the trainer publishes; with
    behavior_correction=tis the ratio's old policy is the trainer's own, the sampler's gap weighs tokens."""
    from clawgym.inference.int8 import Int8Linear, quantize_linears
    from clawgym.rl.trainer import TorchTrainer, TrainerConfig
    from clawgym.rl.types import Sample

    tokenizer = load_tokenizer("tiny-random")
    served = build_tiny_random(len(tokenizer), dtype=torch.bfloat16)
    trained = build_tiny_random(len(tokenizer), dtype=torch.bfloat16)
    assert quantize_linears(served) == 15 and isinstance(served.lm_head, Int8Linear)
    ids = torch.randint(0, 1000, (1, 12), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        gap = (served(ids).logits.float() - trained(ids).logits.float()).abs().max()
    assert 0 < gap < 0.05  # a rounding of the same weights, not other weights
    trainer = TorchTrainer(trained, tokenizer, TrainerConfig(method="grpo", lr=1e-2, behavior_correction="tis"))
    samples = [Sample(prompt_ids=[5, 6, 7], response_ids=[8, 9, 10],
                      old_logprobs=[-3.0, -3.0, -3.0], reward=r, group_id="g")
               for r in (1.0, 0.0)]
    metrics = trainer.train_step(samples)
    assert metrics["ratio_mean"] == pytest.approx(1.0)  # the trainer's own logprobs are the old policy
    assert metrics["abs_logprob_diff"] > 0.5  # the reported gap is to the sampler's logprobs
    served.load_state_dict(trainer.export_weights(), strict=False)  # publication requantises
    with torch.no_grad():
        gap = (served(ids).logits.float() - trained(ids).logits.float()).abs().max()
    assert gap < 0.1
    with pytest.raises(ValueError, match="behavior_correction"):
        TrainerConfig(behavior_correction="magic")


def test_an_off_policy_sample_trains_against_the_trainers_own_logprobs(tokenizer):
    """A response sampled from another prompt (a hindsight sibling that read the wishes) carries that prompt's
    logprobs; the ratio's old policy is the trainer's own, so a good reply is pushed up instead of clipped."""
    prompt = render_prompt_ids(tokenizer, CONTEXT)
    good, bad = encode(tokenizer, "Hello there, Sam!"), encode(tokenizer, "No.")
    gains, metrics = {}, {}
    for off_policy in (False, True):
        trainer = TorchTrainer(tiny(tokenizer), tokenizer, TrainerConfig(method="grpo", lr=1e-2))
        before = sum(current_logprobs(trainer, prompt, good))
        elsewhere = Sample(prompt_ids=prompt, response_ids=good, old_logprobs=[-30.0] * len(good), reward=1.0,
                           group_id="g", off_policy=off_policy)
        metrics[off_policy] = trainer.train_step([elsewhere, make_sample(trainer, prompt, bad, reward=0.0)])
        gains[off_policy] = sum(current_logprobs(trainer, prompt, good)) - before
    assert metrics[True]["ratio_mean"] == pytest.approx(1.0) and metrics[True]["clip_frac"] == 0.0
    assert metrics[False]["clip_frac"] > 0.3  # read as the sampler's logprobs, the good reply is clipped
    assert gains[True] > 0.5 and gains[True] > 3 * max(gains[False], 0.0)
