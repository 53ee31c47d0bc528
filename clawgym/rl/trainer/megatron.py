"""The megatron trainer: the same losses on megatron-core (GPTModel, TP/PP, distributed optimizer).

Two halves:

1. **HF <-> Megatron weight conversion** for Llama / Qwen2-style decoders (SmolLM2 is Llama): pure
   tensor code, no megatron import, tested on CPU. Names follow megatron-core's GPTModel with the
   local layer spec (``input_layernorm`` / ``pre_mlp_layernorm``) or the Transformer Engine spec
   (norms fused into ``linear_qkv.layer_norm_weight`` / ``linear_fc1.layer_norm_weight``).

   - QKV: Megatron stores one ``linear_qkv`` whose rows are grouped per KV head (GQA query group):
     ``[q_0 .. q_{h/g-1}, k, v]`` for group 0, then group 1, ... ; tensor parallelism splits that
     tensor into contiguous blocks of whole groups.
   - MLP: ``linear_fc1 = [gate; up]`` (megatron's GLU chunks the output in two: act(first) * second);
     under TP each rank holds ``[gate_r; up_r]``, so TP sharding splits gate and up separately.
   - RoPE: both HF Llama/Qwen2 and megatron use the non-interleaved rotate-half layout, so q/k rows
     need no permutation.
   - Vocab: megatron pads the vocabulary to a multiple of ``make_vocab_size_divisible_by * TP``;
     the padding rows are zeros going in and dropped coming out.

2. **MegatronTrainer**: started under ``torchrun`` on a GPU partition (``python -m
   clawgym.rl.trainer.megatron --help``). Each rank builds its TP/PP shard of a GPTModel, loads its
   slice of the HF weights, wraps it in megatron's DDP with the distributed optimizer, and trains
   with the pipeline schedule from ``get_forward_backward_func``. Log-probs come from
   ``vocab_parallel_cross_entropy`` over vocab-parallel logits. Losses are normalised by the global
   totals of the step (all DP ranks), as in the torch trainer. Not supported here yet: LoRA and the
   ``opd_topk`` method (full-vocabulary teacher logits would need a vocab-parallel top-K).

   Tested on CPU (gloo, with megatron-core's few hard-coded CUDA tensors redirected in the test
   process only): one step equals the torch trainer's step (loss, KL, grad norm, weights) for TP=2
   and for DP=2 with the distributed optimizer. Pipeline parallelism (p2p) and the dist-checkpoint
   writer are CUDA-only in megatron-core and run only on a GPU partition.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import math
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

logger = logging.getLogger(__name__)


# ============================================================================================
# 1. Weight conversion (pure tensor code)
# ============================================================================================


@dataclass(frozen=True)
class ModelShape:
    """What the conversion needs to know about a Llama/Qwen2-style decoder."""

    num_layers: int
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    ffn_hidden_size: int
    vocab_size: int
    tie_embeddings: bool
    qkv_bias: bool = False

    @classmethod
    def from_hf_config(cls, config: Any) -> "ModelShape":
        model_type = getattr(config, "model_type", "")
        if model_type not in ("llama", "qwen2", "mistral"):
            raise ValueError(f"HF <-> Megatron conversion supports llama/qwen2/mistral decoders, not {model_type!r}")
        heads = config.num_attention_heads
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
        return cls(
            num_layers=config.num_hidden_layers,
            hidden_size=config.hidden_size,
            num_heads=heads,
            num_kv_heads=getattr(config, "num_key_value_heads", None) or heads,
            head_dim=head_dim,
            ffn_hidden_size=config.intermediate_size,
            vocab_size=config.vocab_size,
            tie_embeddings=bool(getattr(config, "tie_word_embeddings", False)),
            qkv_bias=model_type == "qwen2" or bool(getattr(config, "attention_bias", False)),
        )


def padded_vocab_size(vocab_size: int, divisible_by: int = 128, tp_size: int = 1) -> int:
    """Megatron's padded vocabulary: the next multiple of ``divisible_by * tp_size``."""
    multiple = divisible_by * tp_size
    return int(math.ceil(vocab_size / multiple) * multiple)


def fuse_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, shape: ModelShape) -> torch.Tensor:
    """HF q/k/v projections (weights ``[out, in]`` or biases ``[out]``) -> megatron ``linear_qkv``."""
    groups, per_group, d = shape.num_kv_heads, shape.num_heads // shape.num_kv_heads, shape.head_dim
    rest = q.shape[1:]
    q = q.reshape(groups, per_group * d, *rest)
    k = k.reshape(groups, d, *rest)
    v = v.reshape(groups, d, *rest)
    return torch.cat([q, k, v], dim=1).reshape(groups * (per_group + 2) * d, *rest)


def split_qkv(qkv: torch.Tensor, shape: ModelShape) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Megatron ``linear_qkv`` -> HF q, k, v (inverse of :func:`fuse_qkv`)."""
    groups, per_group, d = shape.num_kv_heads, shape.num_heads // shape.num_kv_heads, shape.head_dim
    rest = qkv.shape[1:]
    grouped = qkv.reshape(groups, (per_group + 2) * d, *rest)
    q, k, v = torch.split(grouped, [per_group * d, d, d], dim=1)
    return (
        q.reshape(groups * per_group * d, *rest),
        k.reshape(groups * d, *rest),
        v.reshape(groups * d, *rest),
    )


def fuse_gate_up(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """HF gate_proj / up_proj -> megatron ``linear_fc1`` = [gate; up]."""
    return torch.cat([gate, up], dim=0)


def split_gate_up(fc1: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    gate, up = torch.chunk(fc1, 2, dim=0)
    return gate, up


def _pad_rows(weight: torch.Tensor, rows: int) -> torch.Tensor:
    if weight.shape[0] > rows:
        raise ValueError(f"cannot pad {weight.shape[0]} vocabulary rows down to {rows}")
    if weight.shape[0] == rows:
        return weight
    return torch.cat([weight, weight.new_zeros(rows - weight.shape[0], *weight.shape[1:])], dim=0)


def _norm_names(layer: str, te_spec: bool) -> tuple[str, str]:
    if te_spec:
        return f"{layer}.self_attention.linear_qkv.layer_norm_weight", f"{layer}.mlp.linear_fc1.layer_norm_weight"
    return f"{layer}.input_layernorm.weight", f"{layer}.pre_mlp_layernorm.weight"


def hf_to_megatron(
    hf: Mapping[str, torch.Tensor], shape: ModelShape, te_spec: bool = False, padded_vocab: int | None = None
) -> dict[str, torch.Tensor]:
    """A full (unsharded) megatron GPTModel state dict from an HF Llama/Qwen2 state dict."""
    vocab_rows = padded_vocab or shape.vocab_size
    out: dict[str, torch.Tensor] = {
        "embedding.word_embeddings.weight": _pad_rows(hf["model.embed_tokens.weight"], vocab_rows),
        "decoder.final_layernorm.weight": hf["model.norm.weight"],
    }
    if not shape.tie_embeddings:
        out["output_layer.weight"] = _pad_rows(hf["lm_head.weight"], vocab_rows)
    for i in range(shape.num_layers):
        src, dst = f"model.layers.{i}", f"decoder.layers.{i}"
        attn_norm, mlp_norm = _norm_names(dst, te_spec)
        out[attn_norm] = hf[f"{src}.input_layernorm.weight"]
        out[mlp_norm] = hf[f"{src}.post_attention_layernorm.weight"]
        out[f"{dst}.self_attention.linear_qkv.weight"] = fuse_qkv(
            hf[f"{src}.self_attn.q_proj.weight"], hf[f"{src}.self_attn.k_proj.weight"], hf[f"{src}.self_attn.v_proj.weight"], shape
        )
        if shape.qkv_bias:
            out[f"{dst}.self_attention.linear_qkv.bias"] = fuse_qkv(
                hf[f"{src}.self_attn.q_proj.bias"], hf[f"{src}.self_attn.k_proj.bias"], hf[f"{src}.self_attn.v_proj.bias"], shape
            )
        out[f"{dst}.self_attention.linear_proj.weight"] = hf[f"{src}.self_attn.o_proj.weight"]
        out[f"{dst}.mlp.linear_fc1.weight"] = fuse_gate_up(hf[f"{src}.mlp.gate_proj.weight"], hf[f"{src}.mlp.up_proj.weight"])
        out[f"{dst}.mlp.linear_fc2.weight"] = hf[f"{src}.mlp.down_proj.weight"]
    return out


def megatron_to_hf(mg: Mapping[str, torch.Tensor], shape: ModelShape, te_spec: bool = False) -> dict[str, torch.Tensor]:
    """An HF Llama/Qwen2 state dict from a full megatron state dict (vocab padding dropped)."""
    embed = mg["embedding.word_embeddings.weight"][: shape.vocab_size]
    out: dict[str, torch.Tensor] = {"model.embed_tokens.weight": embed, "model.norm.weight": mg["decoder.final_layernorm.weight"]}
    out["lm_head.weight"] = embed if shape.tie_embeddings else mg["output_layer.weight"][: shape.vocab_size]
    for i in range(shape.num_layers):
        src, dst = f"decoder.layers.{i}", f"model.layers.{i}"
        attn_norm, mlp_norm = _norm_names(src, te_spec)
        out[f"{dst}.input_layernorm.weight"] = mg[attn_norm]
        out[f"{dst}.post_attention_layernorm.weight"] = mg[mlp_norm]
        q, k, v = split_qkv(mg[f"{src}.self_attention.linear_qkv.weight"], shape)
        out[f"{dst}.self_attn.q_proj.weight"], out[f"{dst}.self_attn.k_proj.weight"], out[f"{dst}.self_attn.v_proj.weight"] = q, k, v
        if shape.qkv_bias:
            qb, kb, vb = split_qkv(mg[f"{src}.self_attention.linear_qkv.bias"], shape)
            out[f"{dst}.self_attn.q_proj.bias"], out[f"{dst}.self_attn.k_proj.bias"], out[f"{dst}.self_attn.v_proj.bias"] = qb, kb, vb
        out[f"{dst}.self_attn.o_proj.weight"] = mg[f"{src}.self_attention.linear_proj.weight"]
        gate, up = split_gate_up(mg[f"{src}.mlp.linear_fc1.weight"])
        out[f"{dst}.mlp.gate_proj.weight"], out[f"{dst}.mlp.up_proj.weight"] = gate, up
        out[f"{dst}.mlp.down_proj.weight"] = mg[f"{src}.mlp.linear_fc2.weight"]
    return out


# ---- tensor parallelism ---------------------------------------------------------------------

_COLUMN = ("linear_qkv.weight", "linear_qkv.bias", "word_embeddings.weight", "output_layer.weight")
_ROW = ("linear_proj.weight", "linear_fc2.weight")


def _tp_kind(name: str) -> str:
    if name.endswith("linear_fc1.weight"):
        return "fc1"
    if name.endswith(_COLUMN):
        return "column"
    if name.endswith(_ROW):
        return "row"
    return "replicated"  # norms (incl. TE's fused layer_norm_weight)


def tp_shard(name: str, tensor: torch.Tensor, rank: int, size: int, shape: ModelShape) -> torch.Tensor:
    """This TP rank's slice of a full megatron tensor (column-, row-parallel, GLU fc1, or replicated)."""
    kind = _tp_kind(name)
    if size == 1 or kind == "replicated":
        return tensor
    if "linear_qkv" in name and shape.num_kv_heads % size:
        raise ValueError(f"{name}: {shape.num_kv_heads} KV heads (query groups) do not split over TP={size}")
    if kind == "fc1":
        gate, up = split_gate_up(tensor)
        return torch.cat([_even_chunk(gate, rank, size, 0, name), _even_chunk(up, rank, size, 0, name)], dim=0)
    return _even_chunk(tensor, rank, size, 0 if kind == "column" else 1, name)


def tp_merge(name: str, shards: Sequence[torch.Tensor]) -> torch.Tensor:
    """The full tensor from all TP ranks' slices (inverse of :func:`tp_shard`)."""
    kind = _tp_kind(name)
    if len(shards) == 1 or kind == "replicated":
        return shards[0]
    if kind == "fc1":
        parts = [split_gate_up(s) for s in shards]
        return torch.cat([torch.cat([g for g, _ in parts]), torch.cat([u for _, u in parts])], dim=0)
    return torch.cat(list(shards), dim=0 if kind == "column" else 1)


def _even_chunk(tensor: torch.Tensor, rank: int, size: int, dim: int, name: str) -> torch.Tensor:
    if tensor.shape[dim] % size:
        raise ValueError(f"{name}: dimension {dim} of size {tensor.shape[dim]} does not split over TP={size}")
    return torch.chunk(tensor, size, dim=dim)[rank]


# ---- pipeline parallelism -------------------------------------------------------------------

_LAYER = re.compile(r"^decoder\.layers\.(\d+)\.")


def pp_layer_range(num_layers: int, pp_rank: int, pp_size: int) -> range:
    """Global layer indices held by one pipeline stage (megatron's even split)."""
    if num_layers % pp_size:
        raise ValueError(f"{num_layers} layers do not split evenly over PP={pp_size}")
    per_stage = num_layers // pp_size
    return range(pp_rank * per_stage, (pp_rank + 1) * per_stage)


def pp_stage_state(
    full: Mapping[str, torch.Tensor], num_layers: int, pp_rank: int, pp_size: int, tie_embeddings: bool
) -> dict[str, torch.Tensor]:
    """One stage's tensors with layer indices made local; embedding on the first stage, head/norm on the last.

    With tied embeddings and PP > 1 the last stage keeps its own ``output_layer.weight`` copy of the
    embedding (megatron keeps the two in sync through the embedding group).
    """
    layers = pp_layer_range(num_layers, pp_rank, pp_size)
    first, last = pp_rank == 0, pp_rank == pp_size - 1
    out: dict[str, torch.Tensor] = {}
    for name, tensor in full.items():
        match = _LAYER.match(name)
        if match:
            index = int(match.group(1))
            if index in layers:
                out[f"decoder.layers.{index - layers.start}." + name[match.end():]] = tensor
        elif name.startswith("embedding."):
            if first:
                out[name] = tensor
            if last and not first and tie_embeddings:
                out["output_layer.weight"] = tensor
        elif last:
            out[name] = tensor
    return out


def pp_to_global(stage: Mapping[str, torch.Tensor], num_layers: int, pp_rank: int, pp_size: int) -> dict[str, torch.Tensor]:
    """A stage's tensors with global layer indices again (inverse of the renaming in :func:`pp_stage_state`)."""
    offset = pp_layer_range(num_layers, pp_rank, pp_size).start
    out = {}
    for name, tensor in stage.items():
        match = _LAYER.match(name)
        out[f"decoder.layers.{int(match.group(1)) + offset}." + name[match.end():] if match else name] = tensor
    return out


# ============================================================================================
# 2. The trainer (megatron-core + CUDA, under torchrun)
# ============================================================================================


@dataclass
class MegatronConfig:
    """Parallelism and precision; the loss settings are the torch trainer's :class:`TrainerConfig`."""

    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    bf16: bool = True
    transformer_engine: bool = False  # True: TE layer spec (needs transformer_engine); False: local spec
    use_distributed_optimizer: bool = True
    make_vocab_size_divisible_by: int = 128
    max_sequence_length: int = 32768
    seed: int = 1234
    device: str = "cuda"  # "cpu" (gloo) exists for the CPU equivalence tests only; real runs use CUDA
    trainer: Any = None  # TrainerConfig; default built lazily to keep this module import-light

    def __post_init__(self) -> None:
        from clawgym.rl.trainer.torch_trainer import TrainerConfig

        if self.trainer is None:
            self.trainer = TrainerConfig()
        elif isinstance(self.trainer, dict):
            self.trainer = TrainerConfig(**self.trainer)
        if self.trainer.lora is not None:
            raise ValueError("the megatron trainer trains full weights; LoRA is torch-trainer only for now")
        if self.trainer.method == "opd_topk":
            raise ValueError("method 'opd_topk' is torch-trainer only for now (needs a vocab-parallel top-K)")


def megatron_available() -> tuple[bool, str]:
    """Whether this process can run the megatron trainer, and why not (checked without importing it)."""
    import importlib.util

    if not torch.cuda.is_available():
        return False, "no CUDA GPU: the megatron trainer runs on a GPU partition (torchrun)"
    if importlib.util.find_spec("megatron") is None or importlib.util.find_spec("megatron.core") is None:
        return False, "megatron-core is not installed (pip install megatron-core)"
    return True, ""


def initialize_distributed(tensor_parallel: int, pipeline_parallel: int, seed: int = 1234, device: str = "cuda") -> None:
    """torch.distributed (NCCL, env:// from torchrun) + megatron's TP/PP/DP groups + model-parallel RNG."""
    from megatron.core import parallel_state
    from megatron.core.tensor_parallel import model_parallel_cuda_manual_seed

    if not torch.distributed.is_initialized():
        if "RANK" not in os.environ:  # one in-process rank (not under torchrun): a world of one on this host
            import socket

            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                port = sock.getsockname()[1]
            for key, value in (("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1"),
                               ("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", str(port))):
                os.environ.setdefault(key, value)
        if device == "cuda":
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        torch.distributed.init_process_group(backend="nccl" if device == "cuda" else "gloo")
    if not parallel_state.model_parallel_is_initialized():
        parallel_state.initialize_model_parallel(
            tensor_model_parallel_size=tensor_parallel, pipeline_model_parallel_size=pipeline_parallel
        )
    if device == "cuda":
        model_parallel_cuda_manual_seed(seed)


def transformer_config_from_hf(hf_config: Any, cfg: MegatronConfig) -> Any:
    """megatron-core TransformerConfig for a Llama/Qwen2 HF config."""
    import torch.nn.functional as F
    from megatron.core.transformer import TransformerConfig

    shape = ModelShape.from_hf_config(hf_config)
    dtype = torch.bfloat16 if cfg.bf16 else torch.float32
    return TransformerConfig(
        num_layers=shape.num_layers,
        hidden_size=shape.hidden_size,
        num_attention_heads=shape.num_heads,
        num_query_groups=shape.num_kv_heads,
        kv_channels=shape.head_dim,
        ffn_hidden_size=shape.ffn_hidden_size,
        normalization="RMSNorm",
        layernorm_epsilon=float(hf_config.rms_norm_eps),
        gated_linear_unit=True,
        activation_func=F.silu,
        add_bias_linear=False,
        add_qkv_bias=shape.qkv_bias,
        hidden_dropout=0.0,
        attention_dropout=0.0,
        bias_activation_fusion=False,
        bias_dropout_fusion=False,
        masked_softmax_fusion=False,
        apply_rope_fusion=False,
        gradient_accumulation_fusion=False,
        tensor_model_parallel_size=cfg.tensor_parallel,
        pipeline_model_parallel_size=cfg.pipeline_parallel,
        sequence_parallel=False,
        bf16=cfg.bf16,
        params_dtype=dtype,
        use_cpu_initialization=cfg.device == "cpu",
        pipeline_dtype=dtype,
        variable_seq_lengths=False,
    )


def _rope_base(hf_config: Any) -> float:
    params = getattr(hf_config, "rope_parameters", None) or {}
    return float(params.get("rope_theta") or getattr(hf_config, "rope_theta", 10000.0))


class MegatronTrainer:
    """Trains an HF Llama/Qwen2 checkpoint with megatron-core; one instance per torchrun rank."""

    def __init__(self, hf_model_dir: str | Path, tokenizer: Any, config: MegatronConfig | None = None) -> None:
        self.config = config or MegatronConfig()
        ok, why = megatron_available()
        if not ok and self.config.device == "cuda":
            raise RuntimeError(f"MegatronTrainer cannot start: {why}")
        from megatron.core import parallel_state as ps
        from transformers import AutoConfig

        self.device = torch.device(self.config.device)
        self.tokenizer = tokenizer
        self.hf_config = AutoConfig.from_pretrained(str(hf_model_dir))
        self.shape = ModelShape.from_hf_config(self.hf_config)
        initialize_distributed(self.config.tensor_parallel, self.config.pipeline_parallel, self.config.seed, self.config.device)
        self.ps = ps
        self.tp_rank, self.tp_size = ps.get_tensor_model_parallel_rank(), ps.get_tensor_model_parallel_world_size()
        self.pp_rank, self.pp_size = ps.get_pipeline_model_parallel_rank(), ps.get_pipeline_model_parallel_world_size()
        self.dp_rank, self.dp_size = ps.get_data_parallel_rank(), ps.get_data_parallel_world_size()
        self.padded_vocab = padded_vocab_size(self.shape.vocab_size, self.config.make_vocab_size_divisible_by, self.tp_size)
        self.tf_config = transformer_config_from_hf(self.hf_config, self.config)
        self.step = 0
        self.version = 0

        hf_state = _load_hf_state_dict(Path(hf_model_dir))
        self.model = self._build_and_load(hf_state, trainable=True)
        tcfg = self.config.trainer
        needs_frozen = tcfg.kl_coef > 0 or tcfg.method in ("opd", "hybrid")
        # the initial weights serve as OPD teacher and KL reference ("current" reuses the policy)
        self.frozen = self._build_and_load(hf_state, trainable=False) if needs_frozen else None
        del hf_state
        self._wrap_ddp_and_optimizer()

    # ---- construction --------------------------------------------------------------------------

    def _layer_spec(self) -> Any:
        from megatron.core.models.gpt.gpt_layer_specs import (
            get_gpt_layer_local_spec,
            get_gpt_layer_with_transformer_engine_spec,
        )

        if self.config.transformer_engine:
            return get_gpt_layer_with_transformer_engine_spec()
        return get_gpt_layer_local_spec(normalization="RMSNorm")

    def _build_and_load(self, hf_state: Mapping[str, torch.Tensor], trainable: bool) -> torch.nn.Module:
        from megatron.core.models.gpt import GPTModel

        model = GPTModel(
            config=self.tf_config,
            transformer_layer_spec=self._layer_spec(),
            vocab_size=self.padded_vocab,
            max_sequence_length=self.config.max_sequence_length,
            pre_process=self.ps.is_pipeline_first_stage(),
            post_process=self.ps.is_pipeline_last_stage(),
            share_embeddings_and_output_weights=self.shape.tie_embeddings,
            position_embedding_type="rope",
            rotary_base=int(_rope_base(self.hf_config)),
        ).to(self.device)
        if self.config.bf16:
            model = model.to(torch.bfloat16)
        full = hf_to_megatron(hf_state, self.shape, te_spec=self.config.transformer_engine, padded_vocab=self.padded_vocab)
        stage = pp_stage_state(full, self.shape.num_layers, self.pp_rank, self.pp_size, self.shape.tie_embeddings)
        local = {name: tp_shard(name, t, self.tp_rank, self.tp_size, self.shape) for name, t in stage.items()}
        missing, unexpected = model.load_state_dict(local, strict=False)
        missing = [m for m in missing if not m.endswith("_extra_state")]
        if missing or unexpected:
            raise RuntimeError(f"HF -> megatron load mismatch: missing {missing[:5]}, unexpected {unexpected[:5]}")
        if not trainable:
            model.eval().requires_grad_(False)
        return model

    def _wrap_ddp_and_optimizer(self) -> None:
        from megatron.core.distributed import DistributedDataParallel, DistributedDataParallelConfig, finalize_model_grads
        from megatron.core.optimizer import OptimizerConfig, get_megatron_optimizer

        tcfg = self.config.trainer
        ddp_config = DistributedDataParallelConfig(
            grad_reduce_in_fp32=True,
            overlap_grad_reduce=False,
            use_distributed_optimizer=self.config.use_distributed_optimizer,
        )
        self.model = DistributedDataParallel(config=self.tf_config, ddp_config=ddp_config, module=self.model)
        self.tf_config.no_sync_func = self.model.no_sync
        self.tf_config.finalize_model_grads_func = finalize_model_grads
        opt_config = OptimizerConfig(
            optimizer="adam",
            lr=tcfg.lr,
            weight_decay=tcfg.weight_decay,
            adam_beta1=tcfg.betas[0],
            adam_beta2=tcfg.betas[1],
            clip_grad=tcfg.max_grad_norm,
            bf16=self.config.bf16,
            params_dtype=torch.bfloat16 if self.config.bf16 else torch.float32,
            use_distributed_optimizer=self.config.use_distributed_optimizer,
        )
        self.optimizer = get_megatron_optimizer(opt_config, [self.model])

    # ---- batching --------------------------------------------------------------------------------

    def _micro_batches(self, samples: Sequence[Any], extra: Mapping[str, Sequence[torch.Tensor]], width: int) -> list[dict]:
        """Right-padded micro-batches of identical shape (the pipeline schedule needs fixed shapes)."""
        mbs = self.config.trainer.micro_batch_size
        batches = []
        for start in range(0, len(samples), mbs):
            part = list(range(start, min(start + mbs, len(samples))))
            input_ids = torch.full((mbs, width), int(self.tokenizer.pad_token_id or 0), dtype=torch.long)
            mask = torch.zeros((mbs, width), dtype=torch.float32)  # over target positions (p predicts p+1)
            old = torch.zeros((mbs, width))
            named = {k: torch.zeros((mbs, width)) for k in extra}
            for row, i in enumerate(part):
                s = samples[i]
                n_p, n_r = len(s.prompt_ids), len(s.response_ids)
                input_ids[row, : n_p + n_r] = torch.tensor(s.prompt_ids + s.response_ids)
                span = slice(n_p - 1, n_p - 1 + n_r)
                mask[row, span] = torch.tensor(s.loss_mask, dtype=torch.float32)
                old[row, span] = torch.tensor(s.old_logprobs)
                for key, values in extra.items():
                    named[key][row, span] = values[i]
            batch = {"input_ids": input_ids, "loss_mask": mask, "old_logprobs": old, **named}
            batches.append({k: v.to(self.device, non_blocking=True) for k, v in batch.items()})
        return batches

    @staticmethod
    def _forward(model: torch.nn.Module, input_ids: torch.Tensor) -> torch.Tensor:
        """GPTModel forward with a causal mask: vocab-parallel logits [b, s, V/TP] on the last stage,
        the hidden state for the next stage elsewhere (right padding never affects earlier positions)."""
        position_ids = torch.arange(input_ids.shape[1], device=input_ids.device)[None].expand_as(input_ids)
        mask = None  # on CUDA the causal mask is implied by the layer spec
        if input_ids.device.type == "cpu":  # megatron's default mask is built on CUDA; spell it out on CPU
            n = input_ids.shape[1]
            mask = torch.triu(torch.ones(n, n, dtype=torch.bool, device=input_ids.device), 1)[None, None]
        return model(input_ids, position_ids, mask)

    def _run(self, model: torch.nn.Module, batches: list[dict], loss_fn: Any, forward_only: bool) -> list[dict]:
        from megatron.core import tensor_parallel
        from megatron.core.pipeline_parallel import get_forward_backward_func

        temperature = self.config.trainer.temperature

        def forward_step(data_iterator: Iterator[dict], model_chunk: torch.nn.Module):
            batch = next(data_iterator)
            ids = batch["input_ids"]
            output = self._forward(model_chunk, ids)

            def loss_func(logits: torch.Tensor):
                targets = torch.roll(ids, shifts=-1, dims=1)
                logprobs = -tensor_parallel.vocab_parallel_cross_entropy(logits.float() / temperature, targets)
                return loss_fn(batch, logprobs)

            return output, loss_func

        return get_forward_backward_func()(
            forward_step_func=forward_step,
            data_iterator=iter(batches),
            model=model,
            num_microbatches=len(batches),
            seq_length=batches[0]["input_ids"].shape[1],
            micro_batch_size=batches[0]["input_ids"].shape[0],
            forward_only=forward_only,
        )

    @torch.no_grad()
    def _frozen_logprobs(self, batches: list[dict], key: str, input_key: str = "input_ids") -> None:
        """Forward-only pass of the initial (or current) weights; stores per-token logprobs in each batch."""
        model = self.frozen if (self.frozen is not None and (key == "ref_logprobs" or self.config.trainer.teacher == "initial")) else self.model
        collected: list[torch.Tensor] = []

        def keep(batch: dict, logprobs: torch.Tensor):
            collected.append(logprobs.detach())
            return logprobs.new_zeros(()), {}

        swapped = [dict(b, input_ids=b[input_key]) for b in batches]
        self._run(model, swapped, keep, forward_only=True)
        for batch, logprobs in zip(batches, collected):  # only the last stage computes losses
            batch[key] = logprobs

    # ---- the step ------------------------------------------------------------------------------

    def train_step(self, samples: Sequence[Any]) -> dict[str, float]:
        """Advantages over all ``samples``, then one optimiser step per ``micro_batch_size * grad_accum *
        DP`` samples (as in the torch trainer); every rank passes the same list and takes its DP share."""
        from clawgym.rl.trainer.torch_trainer import sample_advantages, validate_samples

        tcfg = self.config.trainer
        validate_samples(samples, self.shape.vocab_size, tcfg.method)
        if len(samples) < self.dp_size:
            raise ValueError(f"{len(samples)} samples cannot feed {self.dp_size} data-parallel ranks")
        adv_rl = sample_advantages(samples, tcfg.advantage)  # over the whole batch, before any split
        per_step = tcfg.micro_batch_size * tcfg.grad_accum * self.dp_size
        starts = list(range(0, len(samples), per_step))
        if len(starts) > 1 and len(samples) - starts[-1] < self.dp_size:
            starts.pop()  # a last chunk too small for every DP rank joins the one before
        bounds = list(zip(starts, starts[1:] + [len(samples)]))
        totals: dict[str, float] = {}
        for lo, hi in bounds:
            for key, value in self._optimizer_step(samples[lo:hi], adv_rl[lo:hi]).items():
                totals[key] = totals.get(key, 0.0) + value
        self.version += 1
        metrics = {key: value / len(bounds) for key, value in totals.items()}
        metrics.update(step=float(self.step), version=float(self.version), samples=float(len(samples)),
                       optimizer_steps=float(len(bounds)))
        return metrics

    def _optimizer_step(self, samples: Sequence[Any], adv_rl: torch.Tensor) -> dict[str, float]:
        from clawgym.rl import losses
        from clawgym.rl.trainer.torch_trainer import teacher_prompt_ids

        tcfg = self.config.trainer
        mine = list(range(self.dp_rank, len(samples), self.dp_size))
        local = [samples[i] for i in mine]
        width = max(len(s.prompt_ids) + len(s.response_ids) for s in samples)
        extra: dict[str, list[torch.Tensor]] = {"rl_adv": [torch.full((len(s.response_ids),), float(adv_rl[i])) for i, s in zip(mine, local)]}
        if tcfg.method in ("opd", "hybrid"):
            teacher_ids = [teacher_prompt_ids(self.tokenizer, s) if s.hint else s.prompt_ids for s in local]
            width = max(width, max(len(t) + len(s.response_ids) for t, s in zip(teacher_ids, local)))
        batches = self._micro_batches(local, extra, width)
        if tcfg.method in ("opd", "hybrid"):
            self._add_teacher_inputs(batches, local, teacher_ids, width)
            self._frozen_logprobs(batches, "teacher_positions_logprobs", input_key="teacher_input_ids")
            for batch in batches:
                if "teacher_positions_logprobs" in batch:
                    batch["teacher_logprobs"] = _realign(batch["teacher_positions_logprobs"], batch["teacher_src"], batch["old_logprobs"])
        if tcfg.kl_coef > 0:
            self._frozen_logprobs(batches, "ref_logprobs")

        counts = torch.tensor([sum(sum(s.loss_mask) for s in local), sum(1 for s in local if sum(s.loss_mask) > 0)], dtype=torch.float64, device=self.device)
        torch.distributed.all_reduce(counts, group=self.ps.get_data_parallel_group())
        num_tokens, num_sequences = float(counts[0]), float(counts[1])
        scale = len(batches) * self.dp_size  # undo the schedule's 1/num_microbatches and DDP's 1/dp averaging

        def loss_fn(batch: dict, logprobs: torch.Tensor):
            mask, old = batch["loss_mask"], batch["old_logprobs"]
            if tcfg.method == "grpo":
                advantages = batch["rl_adv"]
            elif tcfg.method == "opd":
                advantages = losses.opd_advantages(batch["teacher_logprobs"], old)
            else:
                advantages = losses.hybrid_advantages(batch["rl_adv"], batch["teacher_logprobs"], old, tcfg.w_rl, tcfg.w_opd)
            pg, clipped = losses.ppo_clip_loss(logprobs, old, advantages, tcfg.eps_clip, tcfg.eps_clip_high)
            per_token = pg
            kl_value = logprobs.new_zeros(())
            if tcfg.kl_coef > 0:
                kl = losses.kl_k3(logprobs, batch["ref_logprobs"])
                per_token = per_token + tcfg.kl_coef * kl
                kl_value = losses.token_mean(kl.detach(), mask, num_tokens)
            loss = losses.aggregate(per_token, mask, tcfg.aggregation, num_tokens, num_sequences)
            report = {
                "loss": loss.detach().clone(),
                "kl": kl_value,
                "clipped": (clipped * mask).sum().detach() / max(num_tokens, 1.0),
            }
            return loss * scale, report

        self.model.zero_grad_buffer()
        self.optimizer.zero_grad()
        reports = self._run(self.model, batches, loss_fn, forward_only=False)
        success, grad_norm, _ = self.optimizer.step()
        if success:
            self.step += 1
        metrics = {"grad_norm": float(grad_norm) if grad_norm is not None else float("nan"), "skipped": float(not success)}
        if reports:  # last pipeline stage
            for key in ("loss", "kl", "clipped"):
                value = torch.stack([r[key].float() for r in reports]).sum()
                torch.distributed.all_reduce(value, group=self.ps.get_data_parallel_group())
                metrics["clip_frac" if key == "clipped" else key] = float(value)
        return metrics

    def _add_teacher_inputs(self, batches: list[dict], local: Sequence[Any], teacher_ids: Sequence[list[int]], width: int) -> None:
        mbs = self.config.trainer.micro_batch_size
        for b, start in enumerate(range(0, len(local), mbs)):
            ids = torch.full((mbs, width), int(self.tokenizer.pad_token_id or 0), dtype=torch.long)
            src = torch.zeros((mbs, width), dtype=torch.long)  # teacher position feeding each student position
            has = torch.zeros((mbs, width), dtype=torch.float32)
            for row, i in enumerate(range(start, min(start + mbs, len(local)))):
                s, t = local[i], teacher_ids[i]
                ids[row, : len(t) + len(s.response_ids)] = torch.tensor(t + s.response_ids)
                n_r = len(s.response_ids)
                src[row, len(s.prompt_ids) - 1 : len(s.prompt_ids) - 1 + n_r] = torch.arange(len(t) - 1, len(t) - 1 + n_r)
                has[row, len(s.prompt_ids) - 1 : len(s.prompt_ids) - 1 + n_r] = 1.0 if s.hint else 0.0
            batches[b]["teacher_input_ids"] = ids.to(self.device)
            batches[b]["teacher_src"] = torch.stack([src, has.long()]).to(self.device)

    # ---- export and checkpoints --------------------------------------------------------------------

    @torch.no_grad()
    def export_weights(self) -> dict[str, torch.Tensor] | None:
        """The full HF state dict on global rank 0 (None elsewhere): TP shards merged, PP stages gathered."""
        module = self.model.module
        local = {k: v.detach().float().cpu() for k, v in module.state_dict().items() if not k.endswith("_extra_state")}
        tp_group, pp_group = self.ps.get_tensor_model_parallel_group(), self.ps.get_pipeline_model_parallel_group()
        shards: list[dict] = [None] * self.tp_size  # type: ignore[list-item]
        torch.distributed.all_gather_object(shards, local, group=tp_group)
        merged = {name: tp_merge(name, [s[name] for s in shards]) for name in local}
        stage = pp_to_global(merged, self.shape.num_layers, self.pp_rank, self.pp_size)
        stages: list[dict] = [None] * self.pp_size  # type: ignore[list-item]
        torch.distributed.all_gather_object(stages, stage, group=pp_group)
        if torch.distributed.get_rank() != 0:
            return None
        full: dict[str, torch.Tensor] = {}
        for part in stages:
            for name, tensor in part.items():
                full.setdefault(name, tensor)
        return megatron_to_hf(full, self.shape, te_spec=self.config.transformer_engine)

    def save_checkpoint(self, path: str | Path) -> None:
        """megatron dist-checkpoint of model + optimizer, written to a temp dir and renamed by rank 0."""
        from megatron.core import dist_checkpointing

        from clawgym.rl.trainer import checkpoint as ckpt

        target = Path(path).absolute()
        tmp = target.parent / f".{target.name}.tmp-step{self.step}"
        if torch.distributed.get_rank() == 0:
            tmp.mkdir(parents=True, exist_ok=True)
        torch.distributed.barrier()
        model_sd = self.model.module.sharded_state_dict()
        state = {"model": model_sd, "optimizer": self.optimizer.sharded_state_dict(model_sd)}
        dist_checkpointing.save(state, str(tmp))
        torch.distributed.barrier()
        if torch.distributed.get_rank() == 0:
            ckpt.write_json(tmp / "trainer_state.json", {"step": self.step, "version": self.version,
                                                          "config": dataclasses.asdict(self.config)})
            (tmp / ckpt.COMPLETE_MARKER).write_text("ok\n")
            old = target.parent / f".{target.name}.old-step{self.step}"
            if target.exists():
                os.rename(target, old)
            os.rename(tmp, target)
            import shutil

            shutil.rmtree(old, ignore_errors=True)
        torch.distributed.barrier()

    def load_checkpoint(self, path: str | Path) -> None:
        from megatron.core import dist_checkpointing

        from clawgym.rl.trainer import checkpoint as ckpt

        directory = ckpt.resolve(path)
        model_sd = self.model.module.sharded_state_dict()
        state = {"model": model_sd, "optimizer": self.optimizer.sharded_state_dict(model_sd, is_loading=True)}
        loaded = dist_checkpointing.load(state, str(directory))
        self.model.module.load_state_dict(loaded["model"])
        self.optimizer.load_state_dict(loaded["optimizer"])
        meta = ckpt.read_json(directory / "trainer_state.json")
        self.step, self.version = int(meta["step"]), int(meta["version"])


def _realign(teacher_positions: torch.Tensor, src: torch.Tensor, old: torch.Tensor) -> torch.Tensor:
    """Move teacher logprobs (indexed by hinted-prompt positions) onto the student's positions.

    Samples without a hint get teacher := old (no OPD term), as in the torch trainer.
    """
    index, has = src[0], src[1].to(old.dtype)
    moved = teacher_positions.gather(1, index)
    return has * moved + (1.0 - has) * old


def _load_hf_state_dict(directory: Path) -> dict[str, torch.Tensor]:
    """All tensors of an HF checkpoint directory (safetensors shards or pytorch_model.bin), on CPU."""
    from safetensors.torch import load_file

    files = sorted(directory.glob("*.safetensors"))
    state: dict[str, torch.Tensor] = {}
    if files:
        for file in files:
            state.update(load_file(str(file)))
    elif (directory / "pytorch_model.bin").exists():
        state = torch.load(directory / "pytorch_model.bin", map_location="cpu", weights_only=True)
    else:
        raise FileNotFoundError(f"no safetensors or pytorch_model.bin weights in {directory}")
    if "lm_head.weight" not in state and "model.embed_tokens.weight" in state:
        state["lm_head.weight"] = state["model.embed_tokens.weight"]
    return state


# ============================================================================================
# Launcher entry point: torchrun --nproc-per-node N -m clawgym.rl.trainer.megatron ...
# ============================================================================================


def main(argv: Sequence[str] | None = None) -> int:
    """Train on a JSONL of Samples; exports HF weights (rank 0) and a dist checkpoint at the end."""
    from clawgym.rl.trainer.torch_trainer import TrainerConfig
    from clawgym.rl.types import Sample, read_jsonl

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--hf-model", required=True, help="HF checkpoint directory (Llama / Qwen2 family)")
    parser.add_argument("--samples", required=True, help="JSONL of clawgym Sample records")
    parser.add_argument("--tp", type=int, default=1)
    parser.add_argument("--pp", type=int, default=1)
    parser.add_argument("--method", default="grpo", choices=["grpo", "binary", "opd", "hybrid"])
    parser.add_argument("--advantage", default="grpo", choices=["grpo", "raw"])
    parser.add_argument("--lr", type=float, default=1e-6)
    parser.add_argument("--kl-coef", type=float, default=0.0)
    parser.add_argument("--micro-batch-size", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=16, help="samples per optimiser step (all DP ranks)")
    parser.add_argument("--te", action="store_true", help="use the Transformer Engine layer spec")
    parser.add_argument("--save", default=None, help="dist checkpoint directory")
    parser.add_argument("--export", default=None, help="write the trained HF weights (safetensors) here, rank 0")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)

    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(args.hf_model)
    trainer_cfg = TrainerConfig(method=args.method, advantage=args.advantage, lr=args.lr, kl_coef=args.kl_coef,
                                micro_batch_size=args.micro_batch_size)
    trainer = MegatronTrainer(args.hf_model, tokenizer, MegatronConfig(tensor_parallel=args.tp, pipeline_parallel=args.pp,
                                                                       transformer_engine=args.te, trainer=trainer_cfg))
    samples = [s for s in read_jsonl(args.samples, Sample)]
    for start in range(0, len(samples), args.batch_size):
        metrics = trainer.train_step(samples[start : start + args.batch_size])
        if torch.distributed.get_rank() == 0:
            logger.info("step %d: %s", trainer.step, metrics)
    if args.save:
        trainer.save_checkpoint(args.save)
    weights = trainer.export_weights()
    if weights is not None and args.export:
        from safetensors.torch import save_file

        Path(args.export).mkdir(parents=True, exist_ok=True)
        save_file({k: v.contiguous() for k, v in weights.items() if k != "lm_head.weight" or not trainer.shape.tie_embeddings},
                  str(Path(args.export) / "model.safetensors"))
        trainer.hf_config.save_pretrained(args.export)  # a loadable HF checkpoint directory
        tokenizer.save_pretrained(args.export)
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
