"""The preallocated KV buffer decodes exactly like transformers' growing DynamicCache."""

from __future__ import annotations

import torch

from clawgym.inference import kv_buffer
from clawgym.inference.kv_buffer import CACHE_KWARG, KVBuffer
from clawgym.inference.models import load_model

torch.set_num_threads(1)


def _prefill(model, ids: torch.Tensor):
    out = model(input_ids=ids, use_cache=True)
    cache = getattr(out, CACHE_KWARG)
    return [layer.keys for layer in cache.layers], [layer.values for layer in cache.layers], cache


def test_decoding_past_the_spare_room_matches_the_dynamic_cache(monkeypatch):
    monkeypatch.setattr(kv_buffer, "SPARE_COLUMNS", 3)  # force several reallocations in a few steps
    model, _ = load_model("tiny-random")
    ids = torch.randint(5, 1000, (2, 9), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        keys, values, reference = _prefill(model, ids)
        buffer = KVBuffer(keys, values, torch.ones(2, 9, dtype=torch.long))
        for step in range(8):
            token = torch.full((2, 1), 7 + step)
            expected = model(input_ids=token, use_cache=True, **{CACHE_KWARG: reference}).logits
            mask = torch.cat([buffer.mask, torch.ones(2, 1, dtype=torch.long)], dim=1)
            got = model(input_ids=token, attention_mask=mask, position_ids=torch.full((2, 1), 9 + step),
                        use_cache=True, **{CACHE_KWARG: buffer.cache(1)}).logits
            buffer.advance(1, mask)
            assert torch.allclose(got, expected, atol=1e-5), step
    assert buffer.width == 17
    assert torch.equal(buffer.keys(0), reference.layers[0].keys)


def test_merge_left_pads_and_select_drops_shared_padding():
    a = [torch.ones(1, 2, 5, 4)]
    b = [torch.full((2, 2, 3, 4), 2.0)]
    buffer = KVBuffer(a, [x.clone() for x in a], torch.ones(1, 5, dtype=torch.long))
    merged = buffer.merge(b, [x.clone() for x in b], torch.ones(2, 3, dtype=torch.long))
    assert merged.rows == 3 and merged.width == 5
    assert merged.mask.tolist() == [[1] * 5, [0, 0, 1, 1, 1], [0, 0, 1, 1, 1]]
    assert torch.equal(merged.keys(0)[1, :, :2], torch.zeros(2, 2, 4))  # padding is zeros, hidden by the mask
    assert torch.equal(merged.keys(0)[1, :, 2:], torch.full((2, 3, 4), 2.0))
    kept = merged.select(torch.tensor([1, 2]))  # the long row left: its padding columns go too
    assert kept.width == 3 and kept.mask.tolist() == [[1, 1, 1], [1, 1, 1]]
    assert torch.equal(kept.values(0), torch.full((2, 2, 3, 4), 2.0))


def test_gqa_decode_attention_equals_transformers_sdpa_with_padding():
    from clawgym.inference.attention import GQA_DECODE, use_gqa_decode

    model, _ = load_model("tiny-random")
    assert model.config.num_key_value_heads < model.config.num_attention_heads  # the grouped case is exercised
    ids = torch.randint(5, 1000, (2, 6), generator=torch.Generator().manual_seed(1))
    mask = torch.tensor([[0, 0, 1, 1, 1, 1, 1], [1] * 7])  # row 0 is left-padded

    def step():
        with torch.inference_mode():
            cache = getattr(model(input_ids=ids, attention_mask=mask[:, :6], use_cache=True), CACHE_KWARG)
            return model(input_ids=torch.tensor([[9], [9]]), attention_mask=mask, position_ids=torch.tensor([[4], [6]]),
                         use_cache=True, **{CACHE_KWARG: cache}).logits

    expected = step()
    assert use_gqa_decode(model) and model.config._attn_implementation == GQA_DECODE
    assert torch.allclose(step(), expected, atol=1e-5)
    assert not use_gqa_decode(model)  # already switched: a no-op


def test_the_cache_is_passed_by_the_name_this_transformers_uses():
    """Newer transformers renamed ``past_key_values`` to ``cache`` and warn on the old name (to be removed):
    a decoding step through HFPolicy's keyword raises no such warning and reuses the cache it is given."""
    import warnings

    model, _ = load_model("tiny-random")
    ids = torch.randint(5, 1000, (1, 4), generator=torch.Generator().manual_seed(1))
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        _, _, cache = _prefill(model, ids)
        model(input_ids=ids[:, :1], use_cache=True, **{CACHE_KWARG: cache})
    assert cache.get_seq_length() == 5
