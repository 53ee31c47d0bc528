"""A short greedy completion from a policy's HF model, outside the serving engine.

For judges that need a few tokens of text rather than a label's probability (the rubric judge's
solver writes ``answer = 29 + 7 * 4``). Like :mod:`clawgym.inference.scoring` it only reads
``policy.model`` / ``policy.tokenizer`` and holds the policy's weight lock, if any, so a weight swap
never lands in the middle of it; call it from a worker thread, never the event loop.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch

from clawgym.core.messages import Message


def _chat_prompt(policy: Any, messages: list[Message]) -> tuple[Any, Any, "torch.Tensor", int, Any]:
    """(model, tokenizer, prompt ids on the model's device, pad id, the weights lock) for a chat prompt."""
    model, tokenizer = getattr(policy, "model", None), getattr(policy, "tokenizer", None)
    if model is None or tokenizer is None:
        raise TypeError(f"policy {getattr(policy, 'name', policy)!r} has no HF model/tokenizer to generate with")
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    device = next(model.parameters()).device
    ids = torch.tensor([tokenizer.encode(text, add_special_tokens=False)], device=device)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    lock = getattr(policy, "_weights_lock", None) or contextlib.nullcontext()
    return model, tokenizer, ids, pad, lock


def greedy_completion(policy: Any, messages: list[Message], max_new_tokens: int) -> str:
    """The model's greedy continuation of a chat prompt, up to ``max_new_tokens`` tokens (special tokens dropped)."""
    model, tokenizer, ids, pad, lock = _chat_prompt(policy, messages)
    with lock, torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens,
                             do_sample=False, temperature=None, top_p=None, top_k=None, pad_token_id=pad)
    return tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=True)


def sampled_completions(policy: Any, messages: list[Message], n: int, max_new_tokens: int,
                        temperature: float = 0.7) -> list[str]:
    """``n`` sampled continuations of a chat prompt (several drafts to choose from; see greedy_completion)."""
    model, tokenizer, ids, pad, lock = _chat_prompt(policy, messages)
    if n <= 0:
        return []
    with lock, torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens,
                             do_sample=True, temperature=temperature, top_p=0.95, top_k=None,
                             num_return_sequences=n, pad_token_id=pad)
    return [tokenizer.decode(row[ids.shape[1]:], skip_special_tokens=True) for row in out]
