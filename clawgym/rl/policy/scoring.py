"""Label-token probabilities from a policy's HF model: a verdict in one forward pass, no generation.

Used by :class:`clawgym.rl.judge.probe.ProbJudge`. Kept apart from ``hf.py`` (the serving engine):
it only reads ``policy.model`` / ``policy.tokenizer`` and holds the policy's weight lock, if any, so a
weight swap never lands in the middle of a scoring pass.
"""

from __future__ import annotations

import contextlib
from typing import Any, Sequence

import torch

from clawgym.core.messages import Message


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
            logits = model(input_ids=ids, attention_mask=mask, position_ids=positions).logits[:, -1, :].float()
        logp = torch.log_softmax(logits, dim=-1)
        margins += (logp[:, first] - logp[:, second]).tolist()
    return margins
