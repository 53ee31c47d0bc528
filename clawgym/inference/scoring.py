"""Label-token probabilities from a policy's HF model: a verdict in one forward pass, no generation.

Used by :class:`clawgym.rl.judge.prob.ProbJudge`. Kept apart from ``hf.py`` (the serving engine):
it only reads ``policy.model`` / ``policy.tokenizer`` and holds the policy's weight lock, if any, so a
weight swap never lands in the middle of a scoring pass.
"""

from __future__ import annotations

import contextlib
from typing import Any, Sequence

import torch

from clawgym.core.messages import Message
from clawgym.inference.kv_buffer import CACHE_KWARG


def _label_id(tokenizer: Any, label: str) -> int:
    ids = tokenizer.encode(label, add_special_tokens=False)
    if not ids:
        raise ValueError(f"label {label!r} encodes to no token")
    return int(ids[0])  # the first token decides; labels are chosen to be one token


def label_margins(policy: Any, prompts: Sequence[list[Message]], labels: tuple[str, str] = ("No", "Yes"),
                  batch_size: int = 8) -> list[float]:
    """``log p(labels[0]) - log p(labels[1])`` as the next token after each chat prompt (batched)."""
    model, tokenizer = getattr(policy, "model", None), getattr(policy, "tokenizer", None)
    if model is None or tokenizer is None:
        raise TypeError(f"policy {getattr(policy, 'name', policy)!r} has no HF model/tokenizer to score labels with")
    first, second = (_label_id(tokenizer, label) for label in labels)
    texts = [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in prompts]
    device = next(model.parameters()).device
    lock = getattr(policy, "_weights_lock", None) or contextlib.nullcontext()
    margins: list[float] = []
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    for start in range(0, len(texts), batch_size):
        encoded = [tokenizer.encode(t, add_special_tokens=False) for t in texts[start:start + batch_size]]
        width = max(len(e) for e in encoded)
        ids = torch.tensor([[pad] * (width - len(e)) + e for e in encoded], device=device)  # left padding
        mask = torch.tensor([[0] * (width - len(e)) + [1] * len(e) for e in encoded], device=device)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        with lock, torch.no_grad():
            # the last position's logits only: all of them would be [rows, tokens, vocab] (GBs for a judge's prompt)
            logits = model(input_ids=ids, attention_mask=mask, position_ids=positions,
                           logits_to_keep=1).logits[:, -1, :].float()
        logp = torch.log_softmax(logits, dim=-1)
        margins += (logp[:, first] - logp[:, second]).tolist()
    return margins


def _common_prefix(rows: Sequence[list[int]]) -> int:
    shortest = min(len(r) for r in rows)
    for i in range(shortest):
        if any(r[i] != rows[0][i] for r in rows[1:]):
            return i
    return shortest


def _label_direction(model: Any, first: int, second: int) -> tuple[Any, Any, float]:
    """The decoder, and ``(w, b)`` with ``logit(first) - logit(second) = h @ w + b`` in float32."""
    head = model.get_output_embeddings()
    weight = head.weight.detach()
    direction = (weight[first].float() - weight[second].float())
    bias = getattr(head, "bias", None)
    offset = float(bias[first] - bias[second]) if bias is not None else 0.0
    return model.get_decoder(), direction, offset


def grouped_label_margins(policy: Any, groups: Sequence[Sequence[list[Message]]],
                          labels: tuple[str, str] = ("No", "Yes"), min_shared: int = 32) -> list[list[float]]:
    """:func:`label_margins` for groups of prompts that share a long beginning (one reply, several questions).

    Each group's shared token prefix is read once; only what differs (the last few dozen tokens) is run
    per prompt, batched, on a copy of the prefix's keys and values. The prompts are tokenized whole, so
    the tokens are exactly those of :func:`label_margins`. The margin is ``logit(first) - logit(second)``
    (the softmax's normaliser cancels) taken from the last hidden state in float32: a bfloat16 model's
    rounded logits would only resolve margins to about 0.1. A group whose prompts share fewer than
    ``min_shared`` tokens is scored the plain way.
    """
    model, tokenizer = getattr(policy, "model", None), getattr(policy, "tokenizer", None)
    if model is None or tokenizer is None:
        raise TypeError(f"policy {getattr(policy, 'name', policy)!r} has no HF model/tokenizer to score labels with")
    first, second = (_label_id(tokenizer, label) for label in labels)
    decoder, direction, offset = _label_direction(model, first, second)
    device = next(model.parameters()).device
    lock = getattr(policy, "_weights_lock", None) or contextlib.nullcontext()
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    results: list[list[float]] = []
    for group in groups:
        if not group:
            results.append([])
            continue
        encoded = [tokenizer.encode(tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True),
                                    add_special_tokens=False) for p in group]
        shared = min(_common_prefix(encoded), min(len(e) for e in encoded) - 1)  # every prompt keeps a token of its own
        if shared < min_shared:
            results.append(label_margins(policy, group, labels, batch_size=len(group)))
            continue
        rest = [e[shared:] for e in encoded]
        width = max(len(r) for r in rest)
        ids = torch.tensor([r + [pad] * (width - len(r)) for r in rest], device=device)  # right padding
        mask = torch.tensor([[1] * (shared + len(r)) + [0] * (width - len(r)) for r in rest], device=device)
        positions = torch.arange(shared, shared + width, device=device).expand(len(rest), width)
        with lock, torch.no_grad():
            out = decoder(input_ids=torch.tensor([encoded[0][:shared]], device=device), use_cache=True)
            cache = getattr(out, CACHE_KWARG)
            cache.batch_repeat_interleave(len(rest))
            hidden = decoder(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True,
                             **{CACHE_KWARG: cache}).last_hidden_state
            last = hidden[torch.arange(len(rest)), torch.tensor([len(r) - 1 for r in rest])].float()
            results.append((last @ direction.to(last.device) + offset).tolist())
    return results


def reply_logprobs(policy: Any, pairs: Sequence[tuple[list[Message], str]], max_reply_tokens: int = 256) -> list[float]:
    """``log p(reply | prompt)`` summed over the reply's tokens (at most ``max_reply_tokens``), the reply read as
    the assistant's answer to each chat prompt; one forward pass a pair."""
    model, tokenizer = getattr(policy, "model", None), getattr(policy, "tokenizer", None)
    if model is None or tokenizer is None:
        raise TypeError(f"policy {getattr(policy, 'name', policy)!r} has no HF model/tokenizer to score replies with")
    device = next(model.parameters()).device
    lock = getattr(policy, "_weights_lock", None) or contextlib.nullcontext()
    totals: list[float] = []
    for messages, reply in pairs:
        prompt = tokenizer.encode(tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True),
                                  add_special_tokens=False)
        answer = tokenizer.encode(reply, add_special_tokens=False)[:max_reply_tokens]
        if not answer:
            totals.append(0.0)
            continue
        ids = torch.tensor([prompt + answer], device=device)
        with lock, torch.no_grad():  # the logits that predict the reply's tokens only
            logits = model(input_ids=ids, logits_to_keep=len(answer) + 1).logits[0, :-1, :].float()
        logp = torch.log_softmax(logits, dim=-1)
        totals.append(float(logp.gather(-1, torch.tensor(answer, device=device)[:, None]).sum()))
    return totals
