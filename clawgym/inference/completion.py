"""Completions of a chat prompt for judges that need text rather than a label's probability (the rubric
judge's solver writes ``answer = 29 + 7 * 4``; a wish's check is drafted as code).

On an :class:`~clawgym.inference.hf.HFPolicy` they go through its own engine, batched with the requests it
serves: ``model.generate`` under the weights lock would stop every served reply for as long as a draft takes
(tens of seconds on a CPU). Any other model with ``.model`` / ``.tokenizer`` (a trainer's base weights, a
multi-adapter engine's base) is read directly under its weights lock, if any, so a weight swap never lands in
the middle of it. Blocking: call them from a worker thread, never the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Sequence

import torch

from clawgym.core.messages import Message
from clawgym.core.policy import SamplingParams

TOP_P = 0.95  # of the sampled completions


def _engine(policy: Any) -> Any:
    """The serving engine to complete on, or None (a multi-adapter engine decodes each request with an adapter)."""
    from clawgym.inference.hf import HFPolicy

    return policy if type(policy) is HFPolicy else None


def _on_engine(engine: Any, jobs: Sequence[tuple[list[Message], SamplingParams]]) -> list[str]:
    async def complete() -> list[str]:
        done = await asyncio.gather(*(engine.generate(messages, sampling=s) for messages, s in jobs))
        return [generation.text for generation in done]

    return asyncio.run(complete())  # this thread's own loop; the engine's thread hands the results to it


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


def greedy(max_new_tokens: int) -> SamplingParams:
    return SamplingParams(temperature=0.0, max_tokens=max_new_tokens)


def sampled(max_new_tokens: int, temperature: float = 0.7) -> SamplingParams:
    return SamplingParams(temperature=temperature, top_p=TOP_P, max_tokens=max_new_tokens)


def completions(policy: Any, jobs: Sequence[tuple[list[Message], SamplingParams]]) -> list[str]:
    """Each ``(messages, sampling)`` job's completion, in order (``temperature`` 0: greedy; special tokens dropped).

    On the engine every job decodes in one batch, so a judge that needs a dozen texts shares decoding steps among
    them instead of waiting for one call after another (on 2 CPU cores a wish's twelve texts take 1.3x less time
    than five calls in a row: benchmarks/wish_compile_speed.py; the gain is larger where a decoding step costs
    about the same for one row as for twelve). Directly, runs of the same prompt and sampling are one
    ``generate`` each."""
    if (engine := _engine(policy)) is not None:
        return _on_engine(engine, jobs)
    texts: list[str] = []
    start = 0
    while start < len(jobs):
        end = start + 1
        while end < len(jobs) and jobs[end][0] is jobs[start][0] and jobs[end][1] == jobs[start][1]:
            end += 1
        texts += _direct(policy, jobs[start][0], jobs[start][1], end - start)
        start = end
    return texts


def _direct(policy: Any, messages: list[Message], sampling: SamplingParams, n: int) -> list[str]:
    model, tokenizer, ids, pad, lock = _chat_prompt(policy, messages)
    if sampling.temperature <= 0:
        options: dict[str, Any] = {"do_sample": False, "temperature": None, "top_p": None}
    else:
        options = {"do_sample": True, "temperature": sampling.temperature, "top_p": sampling.top_p}
    with lock, torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=sampling.max_tokens,
                             top_k=None, num_return_sequences=n, pad_token_id=pad, **options)
    return [tokenizer.decode(row[ids.shape[1]:], skip_special_tokens=True) for row in out]


def greedy_completion(policy: Any, messages: list[Message], max_new_tokens: int) -> str:
    """The model's greedy continuation of a chat prompt, up to ``max_new_tokens`` tokens (special tokens dropped)."""
    return completions(policy, [(messages, greedy(max_new_tokens))])[0]


def sampled_completions(policy: Any, messages: list[Message], n: int, max_new_tokens: int,
                        temperature: float = 0.7) -> list[str]:
    """``n`` sampled continuations of a chat prompt (several drafts to choose from; see :func:`completions`)."""
    return completions(policy, [(messages, sampled(max_new_tokens, temperature))] * max(0, n))
