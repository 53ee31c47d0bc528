"""The warm start: the oracle played through the env as token records (round trip through the chat
template), one SFT sample per episode with the assistant's tokens only, the SFT step itself, the training
split only, and the failure paths (an oracle that cannot act, a reply the model's tokens would not write)."""

from __future__ import annotations

import asyncio

import gymnasium as gym
import pytest
import torch

import clawgym  # noqa: F401  (registers the ids)
from clawgym.core.env import recorded_action
from clawgym.core.messages import parse_action
from clawgym.core.policy import SamplingParams
from clawgym.inference.chat_template import encode_prompt, reply_ids
from clawgym.inference.models import load_model, load_tokenizer
from clawgym.inference.scripted import ScriptedPolicy
from clawgym.rl.launch import ConfigError, load_config
from clawgym.rl.trainer import TorchTrainer, TrainerConfig
from clawgym.rl.warm_start import WarmStartConfig
from clawgym.rl.warm_start.episodes import (
    DemonstrationError,
    TokenizerLock,
    collect_demonstrations,
    collect_successes,
    play_demonstration,
)
from clawgym.rl.warm_start.samples import nests, sft_samples
from clawgym.rl.warm_start.stage import check_disjoint, demonstration_plan
from tests.loop_envs import PARITY_SPEC, ParityEnv

ENVS = [("clawgym/ToolCall-v0", {"split": "train"}), ("clawgym/Terminal-v0", {"split": "train"}),
        ("clawgym/BFCL-v0", {"category": ["simple_python", "parallel", "irrelevance"]})]
# the settings whose episodes need a browser or a repository: one tokenizer is enough to show they nest
HEAVY_ENVS = [("clawgym/SWE-v0", {"split": "train"}), ("clawgym/GUI-v0", {}),
              ("clawgym/MiniWoB-v0", {"tasks": ["enter-text", "click-option"]})]


def task_ids(env_id: str, kwargs: dict) -> list[str]:
    env = gym.make(env_id, **kwargs)
    try:
        return [task.id for task in env.unwrapped.task_set]
    finally:
        env.close()


@pytest.fixture(scope="module")
def qwen():
    return load_tokenizer("tiny-random-qwen")  # the real Qwen2.5 tokenizer and chat template (native tools)


@pytest.fixture(scope="module")
def smol():
    return load_tokenizer("tiny-random")  # SmolLM2's: no native tools, the ChatML fallback renders them


@pytest.mark.parametrize("env_id,kwargs", ENVS)
@pytest.mark.parametrize("tokenizer_name", ["qwen", "smol"])
def test_an_oracle_episode_is_what_the_env_and_the_template_produced(env_id, kwargs, tokenizer_name, request):
    tokenizer = request.getfixturevalue(tokenizer_name)
    ids = task_ids(env_id, kwargs)
    trajectories = asyncio.run(collect_demonstrations(env_id, kwargs, tokenizer, demonstration_plan(ids, 3, 0),
                                                      workers=2))
    assert [t.error for t in trajectories] == [None] * 3
    assert all(t.success and t.reward == 1.0 for t in trajectories)
    for trajectory in trajectories:
        env = gym.make(env_id, **kwargs)
        env.reset(seed=trajectory.seed, options={"task_id": trajectory.task_id})  # BFCL's tools are the task's
        tools = env.unwrapped.tools or None
        env.close()
        for turn in trajectory.turns:
            # the prompt is the policy's own rendering of the context the env produced
            assert turn.prompt_ids == encode_prompt(tokenizer, turn.context, tools)
            # the reply ends the turn, and its text makes the env read the oracle's action
            assert turn.response_ids[-1] in {tokenizer.convert_tokens_to_ids("<|im_end|>"), tokenizer.eos_token_id}
            text = tokenizer.decode(turn.response_ids[:-1], skip_special_tokens=False)
            read = parse_action(recorded_action(text, {"tool_call_reading": "lenient"}))[1]
            assert [(c.name, c.arguments) for c in read] == [(c.name, c.arguments)
                                                             for c in parse_action(turn.action)[1]]
        # the next prompt begins with this prompt + reply: the episode is one sample, assistant tokens only
        assert nests(trajectory.turns)
        (sample,) = sft_samples(trajectory)
        full = sample.prompt_ids + sample.response_ids
        last = trajectory.turns[-1]
        assert full == last.prompt_ids + last.response_ids
        trained = [token for token, m in zip(sample.response_ids, sample.loss_mask) if m]
        assert trained == [token for turn in trajectory.turns for token in turn.response_ids]
        assert sample.advantage == 1.0 and sample.off_policy


@pytest.mark.parametrize("env_id,kwargs", HEAVY_ENVS)
def test_every_setting_with_an_oracle_gives_one_nested_episode_sample(env_id, kwargs, qwen):
    ids = task_ids(env_id, kwargs)
    trajectories = asyncio.run(collect_demonstrations(env_id, kwargs, qwen, demonstration_plan(ids, 2, 0), workers=2))
    assert all(t.error is None and t.success for t in trajectories), [t.error for t in trajectories]
    for trajectory in trajectories:
        assert nests(trajectory.turns)
        (sample,) = sft_samples(trajectory)
        assert sum(sample.loss_mask) == sum(len(turn.response_ids) for turn in trajectory.turns)


def test_tool_results_are_not_trained_on(qwen):
    (trajectory,) = asyncio.run(collect_demonstrations("clawgym/ToolCall-v0", {"split": "train"}, qwen,
                                                       [("toolcall-gcd_lcm-02", 0)]))
    (sample,) = sft_samples(trajectory)
    untrained = qwen.decode([t for t, m in zip(sample.response_ids, sample.loss_mask) if not m])
    tool_output = trajectory.turns[0].next_state[0]["content"]
    assert tool_output.strip() and tool_output.strip() in untrained  # the python result is context, not a target
    assert "<tool_response>" in untrained


def test_prompts_that_do_not_nest_give_one_sample_per_turn(qwen):
    (trajectory,) = asyncio.run(collect_demonstrations("clawgym/ToolCall-v0", {"split": "train"}, qwen,
                                                       [("toolcall-gcd_lcm-02", 0)]))
    trajectory.turns[1].prompt_ids = trajectory.turns[1].prompt_ids[1:]  # as if the template re-rendered the start
    samples = sft_samples(trajectory)
    assert [s.response_ids for s in samples] == [t.response_ids for t in trajectory.turns]
    assert all(sum(s.loss_mask) == len(s.response_ids) for s in samples)


def test_an_oracle_that_cannot_act_is_recorded_not_fatal(qwen):
    # ParityEnv has no oracle: every episode is an error, the others (none here) go on
    trajectories = asyncio.run(collect_demonstrations(PARITY_SPEC, {}, qwen, [("parity-00", 0), ("parity-01", 1)]))
    assert [t.task_id for t in trajectories] == ["parity-00", "parity-01"]
    assert all("no oracle" in (t.error or "") for t in trajectories)
    assert all(sft_samples(t) == [] for t in trajectories)


def test_a_reply_the_model_would_not_write_as_the_env_reads_it_is_refused(qwen, monkeypatch):
    env = ParityEnv()
    monkeypatch.setattr(ParityEnv, "oracle_action", lambda self: "an answer", raising=False)
    monkeypatch.setattr(TokenizerLock, "turn_ids",
                        lambda self, c, t, r: ([1, 2], [3, 4], "another answer"))  # what a broken template gives
    with pytest.raises(DemonstrationError, match="read back as another action"):
        play_demonstration(env, TokenizerLock(qwen), 0, "parity-00")
    env.close()


def test_reply_ids_end_with_the_end_of_turn_token_for_text_and_tool_calls(qwen):
    context = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]
    tools = gym.make("clawgym/ToolCall-v0").unwrapped.tools
    text = reply_ids(qwen, context, tools, {"role": "assistant", "content": "Hello there."})
    assert qwen.decode(text) == "Hello there.<|im_end|>"
    call = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "python", "arguments": '{"code": "print(1)"}'}}]}
    assert qwen.decode(reply_ids(qwen, context, tools, call)) == (
        '<tool_call>\n{"name": "python", "arguments": {"code": "print(1)"}}\n</tool_call><|im_end|>')


def test_the_plan_covers_every_task_before_repeating_and_avoids_held_out_seeds():
    ids = [f"t{i}" for i in range(5)]
    plan = demonstration_plan(ids, 12, seed=3, avoid_seeds=range(3 * 1_000_003 + 500_000, 3 * 1_000_003 + 500_004))
    assert sorted(t for t, _ in plan[:5]) == ids and sorted(t for t, _ in plan[5:10]) == ids
    assert all(not 3 * 1_000_003 + 500_000 <= s < 3 * 1_000_003 + 500_004 for _, s in plan)
    assert len({s for _, s in plan}) == 12
    assert plan == demonstration_plan(ids, 12, seed=3, avoid_seeds=range(3 * 1_000_003 + 500_000,
                                                                         3 * 1_000_003 + 500_004))


def test_held_out_tasks_never_reach_the_warm_start():
    train = task_ids("clawgym/ToolCall-v0", {"split": "train"})
    test = task_ids("clawgym/ToolCall-v0", {"split": "test"})
    assert train and test and not set(train) & set(test)
    check_disjoint(train, test)
    with pytest.raises(ValueError, match="held-out task"):
        check_disjoint(train, test + train[:1])
    check_disjoint(train, train[:3], by_seed=True)  # MiniWoB: the same pages, held out by seed


def test_sft_lowers_the_demonstrations_nll_through_the_rl_trainer(qwen):
    trajectories = asyncio.run(collect_demonstrations("clawgym/ToolCall-v0", {"split": "train"}, qwen,
                                                      [("toolcall-gcd_lcm-02", 0), ("toolcall-shopping-00", 1)]))
    samples = [s for t in trajectories for s in sft_samples(t)]
    model, tokenizer = load_model("tiny-random-qwen")
    torch.manual_seed(0)
    trainer = TorchTrainer(model, tokenizer, TrainerConfig(method="grpo", lr=3e-3, micro_batch_size=2))
    nlls = [trainer.train_step(samples, method="sft")["nll"] for _ in range(6)]
    assert all(b < a for a, b in zip(nlls, nlls[1:])) and nlls[-1] < nlls[0] - 1.0
    assert trainer.config.method == "grpo" and trainer.version == 6  # the configured method is untouched


def test_sft_trains_only_the_masked_tokens(qwen):
    (trajectory,) = asyncio.run(collect_demonstrations("clawgym/ToolCall-v0", {"split": "train"}, qwen,
                                                       [("toolcall-gcd_lcm-02", 0)]))
    (sample,) = sft_samples(trajectory)
    sample.loss_mask = [0] * len(sample.loss_mask)
    model, tokenizer = load_model("tiny-random-qwen")
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    metrics = TorchTrainer(model, tokenizer, TrainerConfig(lr=1e-2)).train_step([sample], method="sft")
    assert metrics["grad_norm"] == 0.0 and metrics["loss"] == 0.0
    assert all(torch.equal(before[n], p) for n, p in model.named_parameters())


def test_the_policys_own_successes_are_kept_and_its_failures_dropped():
    # replies of even length succeed on ParityEnv; the scripted policy answers "ab" (even) or "abc" (odd)
    policy = ScriptedPolicy(lambda m: "ab" if "number 1." in m[-1]["content"] else "abc", byte_tokens=True)
    wins, played = asyncio.run(collect_successes(PARITY_SPEC, {}, policy, ["parity-00", "parity-01"], attempts=2,
                                                 sampling=SamplingParams(),
                                                 seed=0, workers=2))
    assert played == 4
    assert [t.task_id for t in wins] == ["parity-01", "parity-01"]
    assert all(sft_samples(t) for t in wins)


@pytest.mark.parametrize("key,value,message", [
    ("warm_start.epochs", "0", "epochs"),
    ("warm_start.source", "teacher", "warm_start.source must be one of oracle, self, oracle"),
    ("method", "sft", "method sft is the warm start alone"),
])
def test_bad_warm_start_settings_are_refused_clearly(key, value, message):
    from clawgym.rl.launch.build import warm_start_config

    with pytest.raises((ConfigError, ValueError), match=message):
        warm_start_config(load_config(None, ["warm_start.enabled=false", f"{key}={value}"]))
    assert warm_start_config(load_config("clawgym/launchers/toolcall.yaml")).enabled  # the launcher warm-starts


def test_warm_start_config_checks_its_fields():
    with pytest.raises(ValueError, match="batch_size=0"):
        WarmStartConfig(batch_size=0)


def _loop(tmp_path, method: str, steps: int, **warm):
    from clawgym.inference.hf import HFPolicy
    from clawgym.rl.loop import AsyncRLLoop, LoopConfig

    serve_model, tokenizer = load_model("tiny-random-qwen")
    train_model, _ = load_model("tiny-random-qwen")
    policy = HFPolicy(serve_model, tokenizer, max_batch_size=8)
    trainer = TorchTrainer(train_model, tokenizer, TrainerConfig(method=method, lr=1e-3, micro_batch_size=4))
    config = LoopConfig(steps=steps, batch_groups=1, group_size=2, num_workers=2, buffer_groups=1, max_tokens=8,
                        output_dir=str(tmp_path / "run"), eval_before=True, eval_after=True, eval_episodes=2,
                        drop_zero_advantage=False, tensorboard=False, plot=False, export_final=False)
    return AsyncRLLoop("clawgym/ToolCall-v0", policy, trainer, config, env_kwargs={"split": "train", "max_turns": 2},
                       eval_env_kwargs={"split": "test", "max_turns": 2},
                       warm_start=WarmStartConfig(enabled=True, episodes=4, epochs=1, batch_size=2, workers=2, **warm))


def test_the_loop_warm_starts_on_the_training_split_then_trains(tmp_path):
    import json

    loop = _loop(tmp_path, "grpo", steps=1)
    result = asyncio.run(loop.run())
    played = [json.loads(line) for line in (tmp_path / "run" / "warm_start.jsonl").read_text().splitlines()]
    train = task_ids("clawgym/ToolCall-v0", {"split": "train"})
    test = task_ids("clawgym/ToolCall-v0", {"split": "test"})
    assert len(played) == 4 and all(p["task_id"] in train and p["task_id"] not in test for p in played)
    assert result.counters["warm_start_steps"] == 2 and result.counters["warm_start_kept"] == 4
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    labels = [r.get("label") for r in records if r["kind"] == "eval"]
    assert labels == ["before", "warm_start", "after"]
    assert [r["kind"] for r in records].count("warm_start") == 2  # one row per SFT step
    assert result.steps == 1 and result.version == 3  # 2 SFT steps + 1 RL step, each published
    assert loop.policy.version == 2  # published once after the warm start, once after the RL step


def test_method_sft_is_the_warm_start_alone(tmp_path):
    result = asyncio.run(_loop(tmp_path, "sft", steps=5).run())
    assert result.steps == 0 and result.history == [] and result.version == 2
    assert result.eval_after is not None and result.counters.get("episodes", 0) == 0  # no RL rollout was played


def test_the_loop_refuses_method_sft_without_a_warm_start(tmp_path):
    from clawgym.inference.hf import HFPolicy
    from clawgym.rl.loop import AsyncRLLoop, LoopConfig

    model, tokenizer = load_model("tiny-random")
    with pytest.raises(ValueError, match="method 'sft' is the warm start alone"):
        AsyncRLLoop("clawgym/ToolCall-v0", HFPolicy(model, tokenizer), TorchTrainer(
            load_model("tiny-random")[0], tokenizer, TrainerConfig(method="sft")),
            LoopConfig(output_dir=str(tmp_path)))


def test_trained_token_rows_reach_the_served_weights_and_nothing_else_of_the_embedding(qwen):
    from clawgym.rl.trainer import LoraSettings

    (trajectory,) = asyncio.run(collect_demonstrations("clawgym/ToolCall-v0", {"split": "train"}, qwen,
                                                       [("toolcall-gcd_lcm-02", 0)]))
    (sample,) = sft_samples(trajectory)
    model, tokenizer = load_model("tiny-random-qwen")
    embedding_before = model.get_input_embeddings().weight.detach().clone()
    lora = LoraSettings(r=4, alpha=8, target_modules=("q_proj",), trainable_tokens=("<tool_call>", "</tool_call>"))
    trainer = TorchTrainer(model, tokenizer, TrainerConfig(lr=1e-2, lora=lora))
    for _ in range(3):
        trainer.train_step([sample], method="sft")
    weights = trainer.export_weights()
    rows = [tokenizer.convert_tokens_to_ids(t) for t in ("<tool_call>", "</tool_call>")]
    name = next(k for k in weights if k.endswith("embed_tokens.weight"))
    changed = (weights[name] != embedding_before).any(dim=1).nonzero().flatten().tolist()
    assert changed == sorted(rows)
    served, _ = load_model("tiny-random-qwen")
    served.load_state_dict(weights, strict=False)
    ids = torch.tensor([sample.prompt_ids + sample.response_ids])
    with torch.no_grad():
        assert torch.allclose(served(ids).logits, trainer.model(input_ids=ids).logits, atol=1e-4)
    with pytest.raises(ValueError, match="not LoRA adapters"):
        trainer.export_adapters()
    # a string that is not one token of the tokenizer has no row of its own: nothing to train
    plain = TorchTrainer(load_model("tiny-random-qwen")[0], tokenizer, TrainerConfig(lora=LoraSettings(
        r=2, alpha=4, target_modules=("q_proj",), trainable_tokens=("two words",))))
    assert not any("trainable_tokens" in n for n, _ in plain.model.named_parameters())


def test_the_warm_start_has_its_own_learning_rate_and_gives_the_trainers_back():
    from clawgym.rl.warm_start.stage import learning_rate

    model, tokenizer = load_model("tiny-random")
    trainer = TorchTrainer(model, tokenizer, TrainerConfig(lr=1e-5))
    with learning_rate(trainer, 5e-4):
        assert [g["lr"] for g in trainer.optimizer.param_groups] == [5e-4]
    assert [g["lr"] for g in trainer.optimizer.param_groups] == [1e-5]
    with pytest.raises(ValueError, match="no one to set|none to set"):
        with learning_rate(object(), 1e-3):
            pass
