"""Setting up the megatron trainer: its config, torch.distributed + megatron's groups, the TransformerConfig."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from clawgym.rl.trainer.megatron_convert import ModelShape

if TYPE_CHECKING:
    from megatron.core.transformer import TransformerConfig
    from transformers import PretrainedConfig

    from clawgym.rl.trainer.config import TrainerConfig
    from clawgym.rl.types import JSONObject


@dataclass
class MegatronConfig:
    """Parallelism and precision; the loss settings are the torch trainer's :class:`TrainerConfig`."""

    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    bf16: bool = True
    # fp64 params and grads (bf16 off): the CPU parity tests, where fp32 summation order would hide a 1e-6 gap
    float64: bool = False
    transformer_engine: bool = False  # True: TE layer spec (needs transformer_engine); False: local spec
    use_distributed_optimizer: bool = True
    make_vocab_size_divisible_by: int = 128
    max_sequence_length: int = 32768
    seed: int = 1234
    device: str = "cuda"  # "cpu" (gloo) exists for the CPU equivalence tests only; real runs use CUDA
    trainer: TrainerConfig | JSONObject | None = None  # a TrainerConfig after __post_init__ (None: the default)

    @property
    def method(self) -> str:
        """The loss's method: the loop and the personal trainer read ``trainer.config.method`` of any trainer."""
        return self.trainer.method

    @property
    def temperature(self) -> float:
        """The temperature logprobs are computed at (the loop checks it against the rollouts')."""
        return self.trainer.temperature

    def __post_init__(self) -> None:
        from clawgym.rl.trainer.torch_trainer import TrainerConfig

        if self.trainer is None:
            self.trainer = TrainerConfig()
        elif isinstance(self.trainer, dict):
            self.trainer = TrainerConfig(**self.trainer)
        if self.trainer.lora is not None:
            from clawgym.rl.trainer.megatron_lora import check_lora_settings

            check_lora_settings(self.trainer.lora, self.transformer_engine)
        if self.bf16 and self.float64:
            raise ValueError("bf16 and float64 exclude each other: set bf16=False for float64")
        if self.trainer.method == "opd_topk":
            raise ValueError("method 'opd_topk' is torch-trainer only for now (needs a vocab-parallel top-K)")

    @property
    def params_dtype(self) -> torch.dtype:
        return torch.bfloat16 if self.bf16 else torch.float64 if self.float64 else torch.float32


def megatron_available() -> tuple[bool, str]:
    """Whether this process can run the megatron trainer, and why not (checked without importing it)."""
    import importlib.util

    if not torch.cuda.is_available():
        return False, "no CUDA GPU: the megatron trainer runs on a GPU partition (torchrun)"
    if importlib.util.find_spec("megatron") is None or importlib.util.find_spec("megatron.core") is None:
        return False, "megatron-core is not installed (pip install megatron-core)"
    return True, ""


def initialize_distributed(tensor_parallel: int, pipeline_parallel: int, seed: int = 1234,
                           device: str = "cuda") -> None:
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


def transformer_config_from_hf(hf_config: PretrainedConfig, cfg: MegatronConfig) -> TransformerConfig:
    """megatron-core TransformerConfig for a Llama/Qwen2 HF config."""
    import torch.nn.functional as F
    from megatron.core.transformer import TransformerConfig

    shape = ModelShape.from_hf_config(hf_config)
    dtype = cfg.params_dtype
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
        # gloo (CPU tests) has no batched isend/irecv and no CUDA sync: plain isend/irecv pairs there
        batch_p2p_comm=cfg.device != "cpu",
    )


def _rope_base(hf_config: PretrainedConfig) -> float:
    params = getattr(hf_config, "rope_parameters", None) or {}
    return float(params.get("rope_theta") or getattr(hf_config, "rope_theta", 10000.0))


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
