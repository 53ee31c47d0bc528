"""Samples as both trainers read them: hinted teacher prompts, validation, per-sample advantages."""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from clawgym.rl import losses
from clawgym.rl.types import JSONObject, Message, Sample

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

HINT_HEADER = "[user's hint / instruction]"
# header: OpenClaw-RL's format, the hint under HINT_HEADER on lines of its own; inline: the hint
# appended to the user's own words, as if they had said it in the first place. Which one a 135M teacher
# follows better depends on the task (``benchmarks/hint_teacher.py``; docs/benchmarks.md).
HINT_FORMATS = ("header", "inline")


def hinted_messages(messages: Sequence[Message], hint: str, hint_format: str = "header",
                    at: int | None = None) -> list[Message]:
    """Copy of ``messages`` with the hint appended to the last user message (see ``HINT_FORMATS``), or to
    message ``at``: the person's own words when a client sends user messages of its own after them."""
    if hint_format not in HINT_FORMATS:
        raise ValueError(f"unknown hint_format {hint_format!r}; expected one of {HINT_FORMATS}")
    out = copy.deepcopy(list(messages))
    for message in reversed(out) if at is None else out[at:at + 1]:
        if message.get("role") != "user":
            continue
        addition = f"\n\n{HINT_HEADER}\n{hint.strip()}" if hint_format == "header" else f" {hint.strip()}"
        content = message.get("content")
        if isinstance(content, list):
            message["content"] = content + [{"type": "text", "text": addition}]
        else:
            message["content"] = (content or "") + addition
        return out
    raise ValueError("cannot place the hint: the context has no user message" if at is None
                     else f"cannot place the hint: message {at} of the context is not a user message")


def render_prompt_ids(tokenizer: PreTrainedTokenizerBase, messages: Sequence[Message],
                      tools: list[JSONObject] | None = None) -> list[int]:
    """The prompt ids exactly as the policy renders them: the chat template, with its tool fallback
    (templates without tool support get the schemas as text, so the teacher sees the tools too)."""
    from clawgym.inference.chat_template import encode_prompt

    return encode_prompt(tokenizer, list(messages), tools or None)


def teacher_prompt_ids(tokenizer: PreTrainedTokenizerBase, sample: Sample, hint_format: str = "header") -> list[int]:
    """The hinted prompt of an OPD sample: its context (``hint_messages``) + hint, re-rendered with the
    tools the student saw (``metadata["tools"]``); ``metadata["hint_at"]`` says which message takes the hint."""
    if not sample.hint:
        raise ValueError(f"sample {sample.sample_id} has no hint")
    if not sample.hint_messages:
        raise ValueError(f"sample {sample.sample_id} has a hint but no hint_messages (its context) to place it in")
    return render_prompt_ids(tokenizer, hinted_messages(sample.hint_messages, sample.hint, hint_format,
                                                        sample.metadata.get("hint_at")), sample.metadata.get("tools"))


def validate_samples(samples: Sequence[Sample], vocab_size: int, method: str) -> None:
    """Refuse a batch with a clear error before anything is computed (nothing is half-applied)."""
    if not samples:
        raise ValueError("train_step needs at least one sample")
    for s in samples:
        problem = None
        if not s.response_ids:
            problem = "empty response"
        elif not s.prompt_ids:
            problem = "empty prompt"
        elif len(s.loss_mask) != len(s.response_ids):
            problem = f"loss_mask has {len(s.loss_mask)} entries for {len(s.response_ids)} response tokens"
        elif any(t < 0 or t >= vocab_size for t in (*s.prompt_ids, *s.response_ids)):
            problem = f"token id outside the vocabulary [0, {vocab_size})"
        elif not all(math.isfinite(x) for x in s.old_logprobs):
            problem = "non-finite old_logprobs"
        elif s.teacher_logprobs is not None and len(s.teacher_logprobs) != len(s.response_ids):
            problem = f"teacher_logprobs has {len(s.teacher_logprobs)} entries for {len(s.response_ids)} tokens"
        elif method in ("opd", "opd_topk") and not s.hint and (method == "opd_topk" or s.teacher_logprobs is None):
            problem = f"method {method!r} needs a hint on every sample"
        if problem:
            raise ValueError(f"sample {s.sample_id}: {problem}")


def sample_advantages(samples: Sequence[Sample], mode: str = "grpo") -> torch.Tensor:
    """Per-sample A from rewards: ``Sample.advantage`` when given, else GRPO over group_id, or raw.

    Samples with an empty ``group_id`` are singleton groups (GRPO gives them 0: use ``raw`` for
    personal chat, where every turn is its own group).
    """
    rewards = torch.tensor([float(s.reward) for s in samples])
    if mode == "grpo":
        computed = losses.grpo_advantages(rewards, [s.group_id or f"solo:{s.sample_id}" for s in samples])
    elif mode == "raw":
        computed = losses.raw_advantages(rewards)
    else:
        raise ValueError(f"unknown advantage mode {mode!r}; expected 'grpo' or 'raw'")
    given = [s.advantage for s in samples]
    return torch.tensor([float(g) if g is not None else float(c) for g, c in zip(given, computed.tolist())])
