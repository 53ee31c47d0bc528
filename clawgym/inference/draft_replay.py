"""Greedy decoding that starts from a draft: the reply earlier weights gave to the same prompt.

The publish gate replays the same held-back requests greedily on every step's new weights. One step moves
the weights little, so the new greedy reply mostly repeats the serving weights' reply to the same request.
Decoding it token by token costs one forward pass a token; checking the old reply costs one forward pass
over prompt + old reply. :func:`replay_greedy` keeps the longest prefix of the draft that the new weights
choose greedily at every position and decodes only the rest, on the policy's own engine (batched with
whatever else it decodes), which starts from the checked prefix's keys and values (the policy's prefix
cache; prompts shorter than its ``min_prefix`` are simply prefilled again). This is speculative decoding
with the old reply as the draft: the result is the new weights' greedy reply, up to floating-point ties
between two tokens' logits (a batched forward over many positions and one token at a time round
differently).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import torch
from transformers import DynamicCache

from clawgym.core.policy import Generation, SamplingParams
from clawgym.inference.kv_buffer import CACHE_KWARG

if TYPE_CHECKING:
    from clawgym.inference.hf import HFPolicy

PREFILL_CHUNK = 2048  # prompt tokens per forward pass of the check (bounds its activations on long prompts)


@dataclass
class Replayed:
    generation: Generation
    accepted: int  # tokens of the reply taken from the draft without a decoding step


def accepted_prefix(model: torch.nn.Module, prompt_ids: Sequence[int], draft_ids: Sequence[int],
                    chunk: int | None = None) -> tuple[int, list[torch.Tensor], list[torch.Tensor]]:
    """How many leading draft tokens the model chooses greedily, and the keys and values (per layer) of prompt
    + those.

    One pass over the prompt (in chunks of ``chunk`` tokens) and the draft; ``draft_ids`` must be non-empty.
    """
    chunk = chunk or PREFILL_CHUNK
    ids = list(prompt_ids) + list(draft_ids)
    device = next(model.parameters()).device
    cache = DynamicCache()
    start, verify_from = 0, len(prompt_ids) - 1  # the logits at the last prompt token choose the first reply token
    with torch.no_grad():
        while verify_from - start > chunk:
            piece = torch.tensor([ids[start:start + chunk]], dtype=torch.long, device=device)
            cache = getattr(model(input_ids=piece, use_cache=True, logits_to_keep=1, **{CACHE_KWARG: cache}),
                            CACHE_KWARG)
            start += chunk
        piece = torch.tensor([ids[start:]], dtype=torch.long, device=device)
        keep = len(ids) - verify_from
        out = model(input_ids=piece, use_cache=True, logits_to_keep=keep, **{CACHE_KWARG: cache})
    chosen = out.logits[0, -keep:].argmax(dim=-1).tolist()  # chosen[i]: the greedy token at draft position i
    accepted = 0
    while accepted < len(draft_ids) and chosen[accepted] == draft_ids[accepted]:
        accepted += 1
    layers, length = getattr(out, CACHE_KWARG).layers, len(prompt_ids) + accepted
    return accepted, [layer.keys[:, :, :length] for layer in layers], [layer.values[:, :, :length] for layer in layers]


def _finished(ids: Sequence[int], stop_ids: set[int], max_tokens: int) -> str | None:
    if ids and ids[-1] in stop_ids:
        return "stop"
    return "length" if len(ids) >= max_tokens else None


async def replay_many(policy: HFPolicy, requests: Sequence[tuple[Sequence[int], Sequence[int], SamplingParams]]
                      ) -> list[Replayed]:
    """:func:`replay_greedy` for each (prompt ids, draft ids, sampling): one check at a time (each takes the
    cores for one long forward pass), the remaining tokens decoded together on the policy's engine."""
    one_check_at_a_time = asyncio.Lock()
    return list(await asyncio.gather(*(replay_greedy(policy, prompt, draft, sampling, one_check_at_a_time)
                                       for prompt, draft, sampling in requests)))


async def replay_greedy(policy: HFPolicy, prompt_ids: Sequence[int], draft_ids: Sequence[int],
                        sampling: SamplingParams, check_lock: asyncio.Lock | None = None) -> Replayed:
    """``policy``'s greedy reply to ``prompt_ids`` (``sampling``: temperature 0, its ``max_tokens``), checked
    against ``draft_ids`` first. The policy must not take new weights meanwhile (the gate's candidate: only the
    gate updates it, before it replays)."""
    if sampling.temperature != 0.0 or sampling.stop:
        raise ValueError("replay_greedy decodes greedily without stop strings")
    max_tokens = min(sampling.max_tokens, policy.max_positions - len(prompt_ids))
    draft = list(draft_ids[:max_tokens])
    stop_ids = set(policy.stop_ids)
    first_stop = next((i for i, t in enumerate(draft) if t in stop_ids), None)
    if first_stop is not None:
        draft = draft[:first_stop + 1]
    if not draft:
        return Replayed(await policy.generate_ids(list(prompt_ids), sampling), 0)
    async with check_lock or contextlib.nullcontext():
        accepted, keys, values = await asyncio.to_thread(accepted_prefix, policy.model, prompt_ids, draft)
    kept = draft[:accepted]
    finish = _finished(kept, stop_ids, max_tokens)
    if finish is not None:  # the whole reply was the draft's: no decoding step at all
        return Replayed(_generation(policy, prompt_ids, kept, finish), accepted)
    prefix = list(prompt_ids) + kept
    policy.prefix_cache.store(prefix, keys, values, policy.version)  # the engine's tag: the weights' version
    rest = await policy.generate_ids(prefix, SamplingParams(temperature=0.0, max_tokens=max_tokens - accepted))
    ids = kept + list(rest.response_ids)
    return Replayed(_generation(policy, prompt_ids, ids, rest.finish_reason or "stop"), accepted)


def _generation(policy: HFPolicy, prompt_ids: Sequence[int], ids: list[int], finish: str) -> Generation:
    """The reply as the engine reports one: text without a final stop token (no logprobs: the gate reads text)."""
    body = ids[:-1] if ids and ids[-1] in set(policy.stop_ids) else ids
    text = policy.tokenizer.decode(body, skip_special_tokens=False)
    return Generation(text=text, message={"role": "assistant", "content": text}, prompt_ids=list(prompt_ids),
                      response_ids=list(ids), response_logprobs=[], policy_version=policy.version,
                      finish_reason="length" if finish == "length" else "stop")
