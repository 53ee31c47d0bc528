"""Launcher configs and ``clawgym train``: every YAML validates, ``--set`` values are parsed as YAML and
typed by the pydantic schema, unknown keys and bad values fail clearly, every GPU section passes
``--check`` for its documented GPU count (and wrong counts say what to change), and a tiny config trains
end to end through the CLI."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
import torch

from clawgym import cli
from clawgym.rl.launch import (
    ConfigError,
    GpuSection,
    Shape,
    build,
    check_config,
    load_config,
    loop_config,
    plan,
    trainer_config,
)
from clawgym.rl.launch.schema import CLOSED_KEYS
from clawgym.rl.methods import ALIASES_UNTIL, JUDGE_TYPES
from tests.loop_envs import PARITY_SPEC

REPO = Path(__file__).resolve().parents[1]
LAUNCHERS = sorted((REPO / "clawgym" / "launchers").glob("*.yaml"))


@pytest.fixture(autouse=True)
def one_torch_thread():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)  # run_config (clawgym train) sets loop.torch_threads process-wide


def test_there_is_a_launcher_per_setting_and_a_gpu_section():
    names = {p.stem for p in LAUNCHERS}
    assert {"toolcall", "terminal", "swe", "gui", "chat", "demo"} <= names
    assert any(load_config(p).gpu != GpuSection() or "gpu:" in p.read_text() for p in LAUNCHERS)


@pytest.mark.parametrize("path", LAUNCHERS, ids=lambda p: p.stem)
def test_every_launcher_validates(path):
    config = load_config(path)
    assert config.method in ("grpo", "opd", "hybrid")
    assert config.env.id.startswith("clawgym/")
    trainer_config(config, num_layers=30)  # the trainer and loop settings build too
    loop_config(config)


def test_set_overrides_coerce_types():
    config = load_config(
        REPO / "clawgym" / "launchers" / "demo.yaml",
        [
            "trainer.lr=1e-4",  # YAML 1.1 reads this as a string; coerced to float
            "loop.steps=3",
            "loop.eval_before=false",
            "rollout.episode_timeout_s=null",
            "rollout.temperature=1",  # int widens to float
            "env.kwargs.personas=[student, ta]",  # free-form dict below env.kwargs
            "trainer.lora.target_modules=q_proj,v_proj",
            "gpu.sglang_args=[--foo, '1']",
        ],
    )
    assert config.trainer.lr == 1e-4 and isinstance(config.trainer.lr, float)
    assert config.loop.steps == 3 and config.loop.eval_before is False
    assert config.rollout.episode_timeout_s is None and isinstance(config.rollout.temperature, float)
    assert config.env.kwargs["personas"] == ["student", "ta"] and config.env.kwargs["max_turns"] == 1
    assert config.trainer.lora.target_modules == ["q_proj", "v_proj"]
    assert config.gpu.sglang_args == ["--foo", "1"]


@pytest.mark.parametrize(
    "override, message",
    [
        ("loop.stepz=3", "unknown key 'loop.stepz'"),
        ("trainr.lr=1", "unknown key 'trainr'"),
        ("trainer.lora.rank=8", "valid keys under trainer.lora: alpha, dropout, enabled, export, r, target_modules"),
        ("loop.steps=many", "loop.steps: expected an integer"),
        ("loop.eval_before=maybe", "loop.eval_before: expected true/false"),
        ("trainer.lr=fast", "trainer.lr: expected a number"),
        ("loop.steps", "expects key=value"),
        ("method=ppo", "method must be one of grpo, opd, hybrid, opd_topk"),
        ("judge.type=oracle", "unknown judge(s) ['oracle']"),
        ("method=opd", "needs a hint judge"),
        ("loop.batch_groups=9", "buffer_groups must be >= loop.batch_groups"),
        ("rollout.executor=k8s", "rollout.executor must be one of local, asyncio, ray, got 'k8s'"),
        ("policy.backend=openai", "policy.backend must be one of hf, sglang, got 'openai'"),
    ],
)
def test_bad_overrides_fail_clearly(override, message):
    with pytest.raises(ConfigError) as info:
        load_config(REPO / "clawgym" / "launchers" / "demo.yaml", [override])
    assert message in str(info.value)


# what an allowed value of a closed key needs beside it to pass the cross-field checks
NEEDS = {"method": ["judge.type=hint", "warm_start.enabled=true"],  # opd / hybrid / opd_topk; sft
         "trainer.lora.export": ["trainer.lora.enabled=true", "gpu.enabled=true"],  # adapter
         "policy.quantize": ["policy.dtype=bfloat16"]}  # int8


def test_the_closed_keys_are_read_from_their_types():
    assert {"method", "policy.backend", "policy.dtype", "policy.quantize", "judge.backend", "rollout.executor",
            "trainer.behavior_correction", "trainer.hint_format", "trainer.teacher", "trainer.lora.export",
            "loop.mode", "gpu.backend", "gpu.weight_transport"} <= set(CLOSED_KEYS)


@pytest.mark.parametrize("key", sorted(CLOSED_KEYS))
def test_a_closed_key_names_every_value_and_takes_each(key):
    allowed = CLOSED_KEYS[key]
    with pytest.raises(ConfigError) as info:
        load_config(None, [f"{key}=bogus", *NEEDS.get(key, [])])
    prefix = f"{key} must be one of "
    line = next(line for line in str(info.value).splitlines() if line.startswith(f"  - {prefix}"))
    named = line.removeprefix(f"  - {prefix}").removesuffix(", got 'bogus'").split(", ")
    assert named == [value or "''" for value in allowed]
    for value in allowed:
        config = load_config(None, [f"{key}={value}", *NEEDS.get(key, [])])
        assert functools.reduce(getattr, key.split("."), config) == value


def test_judge_type_names_every_judge_and_takes_each():
    with pytest.raises(ConfigError) as info:
        load_config(None, ["judge.type=rules,oracle"])
    assert f"unknown judge(s) ['oracle']; use none, {', '.join(JUDGE_TYPES)} (comma-joined)" in str(info.value)
    for part in ("none", *JUDGE_TYPES):
        assert load_config(None, [f"judge.type={part}"]).judge.type == part
    assert load_config(None, [f"judge.type={','.join(JUDGE_TYPES)}"]).judge.type == ",".join(JUDGE_TYPES)


def test_unknown_keys_in_the_file_fail(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("method: grpo\nloop: {steps: 2, max_stalenes: 3}\n")
    with pytest.raises(ConfigError,
                       match=r"unknown config key\(s\) loop.max_stalenes; valid keys under loop: .*max_staleness"):
        load_config(path)
    path.write_text("- just\n- a list\n")
    with pytest.raises(ConfigError, match="top level must be a mapping"):
        load_config(path)
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.yaml")


def test_hint_format_is_checked_and_reaches_the_trainer():
    from clawgym import launchers
    from clawgym.rl.launch import trainer_config

    with pytest.raises(ConfigError, match="trainer.hint_format must be one of header, inline, got 'footer'"):
        load_config(launchers.resolve("chat"), ["trainer.hint_format=footer"])
    assert trainer_config(
        load_config(launchers.resolve("chat"), ["trainer.hint_format=inline"])).hint_format == "inline"


GPU_LAUNCHERS = [p for p in LAUNCHERS if "\ngpu:" in p.read_text()]


def test_gpu_section_static_checks():
    with pytest.raises(ConfigError, match="gpu.backend must be one of"):
        load_config(None, ["gpu.backend=deepspeed"])
    with pytest.raises(ConfigError, match="gpu.actor_gpus must be at least 1"):
        load_config(None, ["gpu.actor_gpus=0"])
    with pytest.raises(ConfigError,
                       match=r"multiple of tensor_parallel x pipeline_parallel \(2 x 2\): set actor_gpus to 4"):
        load_config(None, ["gpu.actor_gpus=2", "gpu.tensor_parallel=2", "gpu.pipeline_parallel=2"])
    with pytest.raises(ConfigError, match="torch\\+sglang trains on one GPU: set gpu.actor_gpus=1"):
        load_config(None, ["gpu.backend=torch+sglang", "gpu.actor_gpus=2"])


# what each launcher's comment says to add for its GPU run (the chat launcher's CPU judge reads label
# probabilities from the in-process model, which the GPU partition does not have)
GPU_SETS = {"chat": ["gpu.enabled=true", "judge.type=prm,hint"],
            "terminal": ["gpu.enabled=true", "judge.type=rules+prm"]}  # the CPU recipe's rules judge runs no model


@pytest.mark.parametrize("path", GPU_LAUNCHERS, ids=lambda p: p.stem)
def test_every_gpu_section_passes_check_for_its_documented_gpu_count(path, capsys):
    assert {p.stem for p in GPU_LAUNCHERS} >= {"chat", "terminal"}
    sets = GPU_SETS.get(path.stem, ["gpu.enabled=true"])
    assert f"--set {' --set '.join(sets)}" in path.read_text()  # the launcher documents the command checked here
    config = load_config(path, sets)
    p = plan(config)
    used = sorted(g for role in p.roles for g in role.gpus)
    assert used == [(0, i) for i in range(config.gpu.gpus_per_node)]  # every GPU used once, none twice
    assert p.transport == "nccl" and p.role("rollout") is not None
    assert cli.main(["train", str(path), "--check", *[arg for s in sets for arg in ("--set", s)]]) == 0
    printed = capsys.readouterr().out
    assert "placement: partition" in printed and "weights  nccl:" in printed and "GiB per GPU" in printed


@pytest.mark.parametrize("name", [p.stem for p in LAUNCHERS])
def test_every_bundled_launcher_ships_a_gpu_section_that_passes_check(name, capsys):
    """``clawgym train NAME --set gpu.enabled=true --check`` as a user types it: the shipped GPU section's
    counts add up and every model it runs has GPUs (chat also swaps its in-process label-probability
    judge for the server's generated votes, as its comment says)."""
    assert "\ngpu:" in (REPO / "clawgym" / "launchers" / f"{name}.yaml").read_text()
    sets = GPU_SETS.get(name, ["gpu.enabled=true"])
    assert cli.main(["train", name, "--check", *[arg for s in sets for arg in ("--set", s)]]) == 0
    printed = capsys.readouterr().out
    assert "placement: partition" in printed and "SGLang policy server" in printed


def test_label_probability_judges_are_refused_where_the_judge_is_an_sglang_server():
    with pytest.raises(ConfigError,
                       match="on the GPU partition judge.model: policy is the SGLang server; use judge.type prm,hint"):
        load_config(REPO / "clawgym" / "launchers" / "chat.yaml", ["gpu.enabled=true"])


def test_check_prints_the_placement_plan():
    chat = check_config(REPO / "clawgym" / "launchers" / "chat.yaml", GPU_SETS["chat"])
    assert "actor    [node0:gpu0] torch (HF) trainer, TP=1 PP=1 DP=1, LoRA r=16" in chat
    assert "rollout  [node0:gpu1] SGLang policy server, --tp-size 1" in chat
    assert "the judge queries the policy server" in chat and "LoRA adapters merged" in chat
    terminal = check_config(REPO / "clawgym" / "launchers" / "terminal.yaml", GPU_SETS["terminal"])
    assert "megatron-core trainer, TP=1 PP=1 DP=1" in terminal
    assert "judge    [node0:gpu2] SGLang judge server (qwen2.5-coder-0.5b, frozen)" in terminal  # alias resolved
    cpu = check_config(REPO / "clawgym" / "launchers" / "demo.yaml")
    assert "placement: cpu" in cpu and "GPUs: none" in cpu and "weights  inproc" in cpu
    colocated = check_config(REPO / "clawgym" / "launchers" / "chat.yaml",
                             GPU_SETS["chat"] + ["gpu.rollout_gpus=0", "gpu.gpus_per_node=1"])
    assert "weights  tensor:" in colocated and "SGLang policy server (colocated)" in colocated
    wide = plan(load_config(REPO / "clawgym" / "launchers" / "terminal.yaml", [
        *GPU_SETS["terminal"], "gpu.nodes=2", "gpu.gpus_per_node=8", "gpu.actor_gpus=8", "gpu.tensor_parallel=4",
        "gpu.pipeline_parallel=2", "gpu.rollout_gpus=4", "gpu.judge_gpus=4", "rollout.executor=ray",
        "ray.address=node0:6379"]))
    assert wide.placement == "multi-node" and wide.role("rollout").gpus == [(1, i) for i in range(4)]
    assert wide.role("judge").gpus == [(1, i) for i in range(4, 8)]


def test_check_shows_lora_adapter_export_and_the_context_window_sglang_gets():
    chat = REPO / "clawgym" / "launchers" / "chat.yaml"
    smol = ["policy.model=smollm2-135m"]  # an 8k model: a 32k window needs YaRN
    merged = plan(load_config(chat, GPU_SETS["chat"]))
    assert merged.transport == "nccl" and "merged" in merged.transport_note and merged.sglang_args == []
    printed = check_config(chat,
                           GPU_SETS["chat"] + smol + ["trainer.lora.export=adapter", "policy.context_window=32768"])
    assert "weights  adapter: LoRA adapters only (" in printed and "/load_lora_adapter as clawgym-v<version>" in printed
    assert ("sglang   policy server also gets: --enable-lora --max-lora-rank 16 "
            "--lora-target-modules down_proj gate_proj "
            "k_proj o_proj q_proj up_proj v_proj --context-length 32768 --json-model-override-args ") in printed
    args = plan(load_config(chat, GPU_SETS["chat"] + smol + ["policy.context_window=32768"])).sglang_args
    assert args[:3] == ["--context-length", "32768", "--json-model-override-args"]
    override = json.loads(args[3])
    from transformers import LlamaConfig

    from clawgym.inference.models import extend_context

    hf = extend_context(LlamaConfig(max_position_embeddings=8192,
                                    rope_parameters={"rope_type": "default", "rope_theta": 100000.0}), 32768)
    assert override == {"max_position_embeddings": 32768, "rope_scaling": hf.rope_parameters}  # the hf policy's YaRN
    assert (override["rope_scaling"]["factor"] == 4.0
            and override["rope_scaling"]["original_max_position_embeddings"] == 8192)
    assert plan(load_config(chat, GPU_SETS["chat"] + smol + ["policy.context_window=8192"])).sglang_args == []  # native
    # Qwen's own 32k
    assert plan(load_config(chat, GPU_SETS["chat"] + ["policy.context_window=32768"])).sglang_args == []
    with pytest.raises(ConfigError, match="set gpu.enabled true, or trainer.lora.export merged"):
        load_config(chat, ["trainer.lora.export=adapter"])  # the in-process hf policy takes merged weights


def test_memory_estimate_counts_the_named_model():
    assert Shape.of("smollm2-135m").params() == 134_515_008  # SmolLM2-135M's published parameter count
    assert Shape.of("qwen2.5-coder-0.5b").params() == 494_032_768  # Qwen2.5-0.5B's (tied output layer, q/k/v biases)
    assert Shape.of("qwen2.5-coder-1.5b").params() == 1_543_714_304
    full_weights = [*GPU_SETS["terminal"], "trainer.lora.enabled=false"]  # the GPU budget trains every weight
    full = plan(load_config(REPO / "clawgym" / "launchers" / "terminal.yaml", full_weights))
    assert full.role("actor").memory_gib == pytest.approx(494_032_768 * 18 / 2**30)  # bf16 + fp32 grads/master/Adam
    assert full.role("rollout").memory_gib == pytest.approx(494_032_768 * 2 / 2**30)
    tp2 = plan(load_config(REPO / "clawgym" / "launchers" / "terminal.yaml", [
        *full_weights, "gpu.actor_gpus=2", "gpu.tensor_parallel=2", "gpu.gpus_per_node=4"]))
    assert tp2.role("actor").memory_gib == pytest.approx(full.role("actor").memory_gib / 2)


def test_checkpoint_directory_models_are_sized_from_config_json(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({
        "vocab_size": 151936, "hidden_size": 1536, "intermediate_size": 8960, "num_hidden_layers": 28,
        "num_attention_heads": 12, "num_key_value_heads": 2, "tie_word_embeddings": True}))
    assert 1.4e9 < Shape.of(str(tmp_path)).params() < 1.6e9  # a Qwen2.5-1.5B-shaped checkpoint
    with pytest.raises(ConfigError, match="no config.json"):
        Shape.of(str(tmp_path / "nope"))


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["gpu.rollout_gpus=2"],
         r"uses 3 GPUs \(actor 1 \+ rollout 2 \+ judge 0\) but gpu.nodes x gpu.gpus_per_node = 1 x 2 = 2"),
        (["gpu.actor_gpus=4"], "torch\\+sglang trains on one GPU: set gpu.actor_gpus=1 \\(got 4\\)"),
        (["gpu.weight_transport=tensor"], "set gpu.rollout_gpus=0"),
        (["gpu.judge_gpus=1", "gpu.gpus_per_node=3", "judge.type=rules", "method=grpo"], "set gpu.judge_gpus=0"),
        (["judge.model=smollm2-135m"], "give it GPUs \\(gpu.judge_gpus >= 1\\)"),
        (["gpu.nodes=2", "gpu.gpus_per_node=1"], "set rollout.executor=ray"),
        (["policy.model=/no/such/model"], "no config.json"),
        (["trainer.lora.export=adapters"], "trainer.lora.export must be one of merged, adapter"),
        (["trainer.lora.export=adapter", "trainer.lora.enabled=false"], "trainer.lora.enabled is false"),
        (["trainer.lora.export=adapter", "gpu.weight_transport=nccl"], "set gpu.weight_transport auto"),
        (["policy.context_window=65536", 'gpu.sglang_args=["--context-length","4096"]'],
         "remove it from gpu.sglang_args"),
        (["policy.context_window=65536", "gpu.backend=megatron+sglang", "gpu.actor_gpus=1"], "does not apply"),
    ],
)
def test_wrong_gpu_sections_say_what_to_change(overrides, message, capsys):
    path = REPO / "clawgym" / "launchers" / "chat.yaml"
    with pytest.raises(ConfigError, match=message):
        check_config(path, [*GPU_SETS["chat"], *overrides])
    args = ["train", str(path), "--check", "--set", "gpu.enabled=true", "--set", "judge.type=prm,hint"]
    for item in overrides:
        args += ["--set", item]
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("clawgym train: error: ") and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without GPUs")
def test_gpu_enabled_without_gpus_is_refused_clearly(tmp_path, capsys):
    config = load_config(REPO / "clawgym" / "launchers" / "terminal.yaml", GPU_SETS["terminal"])
    with pytest.raises(ConfigError, match="needs 3 GPUs. Set gpu.enabled=false to train on CPU"):
        build(config)
    assert cli.main(["train", "terminal", *[arg for s in GPU_SETS["terminal"] for arg in ("--set", s)]]) == 2
    assert "this machine has no CUDA GPU" in capsys.readouterr().err


def test_config_errors_exit_2_from_the_cli(capsys):
    assert cli.main(["train", str(REPO / "clawgym" / "launchers" / "demo.yaml"), "--set", "loop.nope=1"]) == 2
    assert "unknown key 'loop.nope'" in capsys.readouterr().err


def test_clawgym_train_runs_a_tiny_config_end_to_end(tmp_path, capsys):
    out = tmp_path / "run"
    config = tmp_path / "tiny.yaml"
    config.write_text(
        f"""
method: grpo
env: {{id: "{PARITY_SPEC}", kwargs: {{split: train}}, eval_kwargs: {{split: test}}}}
policy: {{model: tiny-random}}
judge: {{type: rules}}
rollout: {{workers: 8, group_size: 4, max_tokens: 8}}
trainer: {{lr: 1.0e-3, micro_batch_size: 8, lora: {{enabled: true, r: 4, alpha: 8}}}}
loop: {{steps: 2, batch_groups: 2, buffer_groups: 4, eval_after: true, eval_episodes: 2, output_dir: "{out}",
        torch_threads: 1}}
"""
    )
    code = cli.main(["train", str(config), "--set", "loop.eval_before=true"])
    printed = capsys.readouterr().out
    assert code == 0
    assert "trained 2 steps (policy version 2)" in printed
    assert "held-out success: before " in printed and " -> after " in printed and "groups: " in printed
    assert f"learning curve: {out / 'learning_curve.png'}" in printed
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["kind"] for r in records] == ["eval", "train", "train", "eval"]
    state = json.loads((out / "checkpoint" / "loop_state.json").read_text())
    assert state["step"] == 2 and state["config"]["batch_groups"] == 2
    assert (out / "checkpoint" / "trainer" / "trainable.safetensors").exists()  # LoRA adapters


def test_demo_oracle_tour_and_training_path(tmp_path, capsys):
    from clawgym.commands import demo

    assert demo.main(["--oracle", "--env", "clawgym/OpenClawChat-v0"]) == 0
    assert "reward=1.0 success=True" in capsys.readouterr().out
    code = demo.main([
        "--out", str(tmp_path), "--steps", "1", "--seed", "3",
        "--set", "policy.model=tiny-random", "--set", "rollout.max_tokens=6", "--set", "loop.eval_episodes=4",
        "--set", "loop.drop_zero_advantage=false",  # random weights: every reply scores the same
    ])
    printed = capsys.readouterr().out
    assert code == 0
    assert "held-out teacher checks (4 unseen teacher tasks, greedy; 0 errored), before -> after:" in printed
    for check in ("names_student", "friendly", "mentions_result", "short", "mean of checks", "all checks pass"):
        assert f"  {check} " in printed
    assert f"learning curve: {tmp_path / 'seed3' / 'learning_curve.png'}" in printed
    assert printed.count("held-out task chat-teacher-") == 2  # what the person reads, before and after
    assert "  before (score " in printed and "  after  (score " in printed
    tasks = [json.loads(line) for line in (tmp_path / "seed3" / "tasks.jsonl").read_text().splitlines()]
    assert len(tasks) == 120 and {t["data"]["persona"] for t in tasks} == {"teacher"}
    assert sum(t["split"] == "test" for t in tasks) == 35
    records = [json.loads(line) for line in (tmp_path / "seed3" / "metrics.jsonl").read_text().splitlines()]
    assert "eval" not in {r["kind"] for r in records}  # the demo scores the held-out tasks itself, once each side


def test_old_method_name_binary_is_an_alias_of_grpo(tmp_path, caplog):
    path = tmp_path / "old.yaml"
    path.write_text("method: binary\n")
    with caplog.at_level("WARNING"):
        config = load_config(path)
    assert config.method == "grpo"
    assert "deprecated" in caplog.text and "'grpo'" in caplog.text and ALIASES_UNTIL in caplog.text


def test_the_default_dtype_follows_the_cpu(monkeypatch):
    """policy.dtype empty: the Qwen models compute in bfloat16 on a GPU or a CPU with native bfloat16
    matmuls, and in float32 on a CPU that emulates them (where a train step took minutes, not seconds)."""
    from clawgym.inference import catalog

    chat = REPO / "clawgym" / "launchers" / "chat.yaml"
    monkeypatch.setattr(catalog, "cpu_has_native_bf16", lambda: False)
    assert load_config(chat).policy.dtype == "float32"
    assert load_config(chat, ["policy.device=cuda"]).policy.dtype == "bfloat16"
    assert load_config(chat, ["gpu.enabled=true", "judge.type=prm,hint"]).policy.dtype == "bfloat16"
    assert load_config(chat, ["policy.quantize=int8"]).policy.dtype == "bfloat16"  # int8 multiplies bfloat16
    assert load_config(chat, ["policy.dtype=bfloat16"]).policy.dtype == "bfloat16"  # said is said
    assert load_config(chat, ["policy.model=smollm2-135m"]).policy.dtype == "float32"
    assert catalog.default_dtype("qwen2.5-coder-1.5b", "cuda:0") == "bfloat16"
    monkeypatch.setattr(catalog, "cpu_has_native_bf16", lambda: True)
    assert load_config(chat).policy.dtype == "bfloat16"
    assert catalog.default_dtype("smollm2-135m") == catalog.default_dtype("/some/checkpoint") == "float32"


def test_native_bf16_is_read_from_the_cpu_flags_and_agrees_with_torch(tmp_path):
    import torch

    from clawgym.inference.catalog import cpu_has_native_bf16

    capabilities = torch.cpu.get_capabilities()
    assert cpu_has_native_bf16() is bool(capabilities.get("avx512_bf16") or capabilities.get("amx_bf16"))
    for flags, native in (("fpu avx2 avx512f avx512_bf16", True), ("fpu avx2 amx_bf16 amx_tile", True),
                          ("fpu avx2 avx512f avx512_vnni", False)):
        cpuinfo = tmp_path / flags.replace(" ", "-")
        cpuinfo.write_text(f"processor\t: 0\nmodel name\t: x\nflags\t\t: {flags}\n\nprocessor\t: 1\n")
        assert cpu_has_native_bf16(str(cpuinfo)) is native
    assert cpu_has_native_bf16(str(tmp_path / "absent")) is False  # no /proc: float32, never the slow choice


def test_int8_serving_weights_validate_and_turn_on_the_behavior_correction():
    from clawgym.rl.launch.build import trainer_config

    chat = REPO / "clawgym" / "launchers" / "chat.yaml"
    config = load_config(chat, ["policy.quantize=int8"])
    assert trainer_config(config).behavior_correction == "tis"  # the sampler's weights are a rounding
    assert trainer_config(load_config(chat)).behavior_correction == "none"
    assert trainer_config(load_config(chat,
                                      ["policy.quantize=int8",
                                       "trainer.behavior_correction=none"])).behavior_correction == "none"
    for overrides, message in ((["policy.quantize=int4"], "policy.quantize must be one of none, int8"),
                               (["policy.quantize=int8", "policy.dtype=float32"], "needs policy.backend hf"),
                               (["trainer.behavior_correction=magic"],
                                "trainer.behavior_correction must be one of '', none, tis")):
        with pytest.raises(ConfigError, match=message):
            load_config(chat, overrides)


@pytest.mark.parametrize("model", ["tiny-random", "tiny-random-qwen"])
def test_lora_top_layers_name_modules_that_exist_in_the_model(model):
    from peft import LoraConfig, get_peft_model

    from clawgym.inference.models import load_model
    from clawgym.rl.launch.build import lora_targets
    from clawgym.rl.launch.schema import LoraSection
    from clawgym.rl.trainer.megatron_lora import parse_targets

    hf, _ = load_model(model)
    layers = hf.config.num_hidden_layers
    targets = lora_targets(LoraSection(enabled=True, top_layers=1), layers)
    wrapped = get_peft_model(hf, LoraConfig(r=2, lora_alpha=4, target_modules=list(targets)))
    adapted = {name.split(".layers.")[1].split(".lora_A")[0]
               for name, _ in wrapped.named_parameters() if "lora_A" in name}
    top = layers - 1
    assert adapted == {f"{top}.self_attn.{p}" for p in ("q_proj", "k_proj", "v_proj", "o_proj")} | {
        f"{top}.mlp.{p}" for p in ("gate_proj", "up_proj", "down_proj")}  # all seven projections of the top layer only
    assert parse_targets(targets) == {p: {top} for p in LoraSection().target_modules}  # the megatron trainer agrees
