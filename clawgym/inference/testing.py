"""Test helpers: a tiny model taught to give one fixed answer, so tests see real generated tokens.

A random-init model emits random tokens; tests of tool-call parsing, streaming or the rollout loop
need a model that *actually generates* ``<tool_call>...</tool_call>`` (or any chosen text) with
greedy decoding. :func:`teach` overfits a model to answer ``target`` after the given prompts.
Nothing here is mocked: the text comes out of the model's forward passes.

To stay cheap on a busy CPU, teaching unties the output layer and trains only the transformer
layers plus the output rows of the tokens the answer uses; every other token's output row is zero
(logit 0). The loss is still the exact full-vocabulary cross-entropy: all the zero-logit tokens
together form one class with logit ``log(V - k)``. The input embeddings stay frozen.

:func:`random_lora_state` makes the other thing tests and benchmarks of per-user adapters need: an
adapter that changes the model's answers, as a peft state dict.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from clawgym.core.messages import Message
from clawgym.inference.chat_template import encode_prompt


def teach(
    model: Any,
    tokenizer: Any,
    prompts: list[list[Message]],
    target: str,
    tools: list[dict[str, Any]] | None = None,
    steps: int = 150,
    lr: float = 1e-2,
    seed: int = 0,
    end_token: str = "<|im_end|>",
) -> float:
    """Train ``model`` in place to answer every prompt with ``target`` + end token; return the final loss."""
    end = tokenizer.convert_tokens_to_ids(end_token)
    target_ids = list(tokenizer(target, add_special_tokens=False)["input_ids"]) + [end]
    keep = sorted(set(target_ids))
    lookup = {token: index for index, token in enumerate(keep)}
    rows = [(encode_prompt(tokenizer, messages, tools), target_ids) for messages in prompts]
    device = next(model.parameters()).device

    embeddings = model.get_input_embeddings().weight
    head = torch.nn.Linear(embeddings.shape[1], embeddings.shape[0], bias=False, device=device, dtype=embeddings.dtype)
    with torch.no_grad():
        head.weight.zero_()
    model.lm_head = head
    model.config.tie_word_embeddings = False
    if hasattr(model.config, "get_text_config"):
        model.config.get_text_config().tie_word_embeddings = False
    rows_param = torch.nn.Parameter(embeddings.detach()[keep].clone())
    others = math.log(embeddings.shape[0] - len(keep))  # logsumexp of the zero logits of all other tokens

    embeddings.requires_grad_(False)
    trainable = [p for n, p in model.named_parameters() if p.requires_grad and not n.startswith("lm_head")]
    was_training = model.training
    model.train()
    loss = torch.tensor(float("nan"))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        optimizer = torch.optim.Adam(trainable + [rows_param], lr=lr)
        for _ in range(steps):
            losses = []
            for prompt_ids, answer in rows:
                ids = torch.tensor([prompt_ids + answer[:-1]], device=device)
                hidden = model.model(input_ids=ids).last_hidden_state[0, len(prompt_ids) - 1 :]
                logits = hidden @ rows_param.T
                logits = torch.cat([logits, torch.full_like(logits[:, :1], others)], dim=1).float()
                labels = torch.tensor([lookup[t] for t in answer], device=device)
                losses.append(torch.nn.functional.cross_entropy(logits, labels))
            loss = torch.stack(losses).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    with torch.no_grad():
        head.weight[keep] = rows_param.detach()
    embeddings.requires_grad_(True)
    model.train(was_training)
    return float(loss.detach())


def random_lora_state(model: torch.nn.Module, targets: tuple[str, ...], seed: int, r: int,
                      scale: float) -> dict[str, torch.Tensor]:
    """A peft-style LoRA state dict with random non-zero A and B (``* scale``) on ``model``'s ``targets``
    projections: what a trained adapter looks like, without training one. A projection already wrapped
    for serving (a ``base`` linear inside) counts as its base linear."""
    gen = torch.Generator().manual_seed(seed)
    state = {}
    for name, module in model.named_modules():
        base = getattr(module, "base", module)
        if name.rsplit(".", 1)[-1] in targets and isinstance(base, torch.nn.Linear):
            state[f"base_model.model.{name}.lora_A.default.weight"] = torch.randn(
                r, base.in_features, generator=gen) * scale
            state[f"base_model.model.{name}.lora_B.default.weight"] = torch.randn(
                base.out_features, r, generator=gen) * scale
    return state
