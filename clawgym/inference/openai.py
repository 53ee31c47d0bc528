"""A policy behind any OpenAI-compatible ``/v1/chat/completions`` endpoint (httpx, no SDK needed).

Tools go in the request's ``tools`` field; structured ``tool_calls`` in the answer (or
``<tool_call>`` blocks in its text) become the Generation's tool calls.

Tokens: a generic server returns text only, so ``prompt_ids``/``response_ids``/``response_logprobs``
stay empty and the trainer refuses such turns (it never re-tokenises). With ``logprobs=True`` the
standard per-token logprobs are kept in ``metadata["logprobs"]`` (useful for judging, not training).
Against clawgym's own server (:mod:`clawgym.inference.server`) set ``return_tokens=True``: the server's
``"clawgym"`` extension carries the exact token ids, logprobs and policy version.
"""

from __future__ import annotations

from typing import Any

import httpx

from clawgym.core.messages import Message, parse_action
from clawgym.core.policy import Generation, SamplingParams, VersionedPolicy


class OpenAIError(RuntimeError):
    """The server answered with an error status or an unreadable body."""


def request_body(
    model: str,
    messages: list[Message],
    tools: list[dict[str, Any]] | None,
    sampling: SamplingParams,
    logprobs: bool = False,
    return_tokens: bool = False,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "max_tokens": sampling.max_tokens,
    }
    if tools:
        body["tools"] = tools
    if sampling.stop:
        body["stop"] = list(sampling.stop)
    if sampling.seed is not None:
        body["seed"] = sampling.seed
    if logprobs:
        body["logprobs"] = True
    if return_tokens:
        body["return_tokens"] = True
    return body


def generation_from_response(data: dict[str, Any], default_version: int = 0) -> Generation:
    """Map a chat-completion response (with or without the clawgym extension) to a Generation."""
    try:
        choice = data["choices"][0]
        raw_message = dict(choice["message"])
    except (KeyError, IndexError, TypeError) as exc:
        raise OpenAIError(f"not a chat completion response: {str(data)[:300]}") from exc
    raw_message["role"] = "assistant"
    message, calls = parse_action(raw_message)
    text = raw_message.get("content") or ""
    reason = choice.get("finish_reason") or "stop"
    reason = {"function_call": "tool_calls"}.get(reason, reason)
    if reason not in ("stop", "length", "tool_calls"):
        reason = "stop"
    if calls and reason == "stop":
        reason = "tool_calls"
    extension = data.get("clawgym") or {}
    metadata: dict[str, Any] = {"id": data.get("id"), "model": data.get("model"), "usage": data.get("usage")}
    logprob_items = (choice.get("logprobs") or {}).get("content")
    if logprob_items:
        metadata["logprobs"] = [item.get("logprob") for item in logprob_items]
    return Generation(
        text=text,
        message=message,
        tool_calls=calls,
        prompt_ids=list(extension.get("prompt_ids") or []),
        response_ids=list(extension.get("response_ids") or []),
        response_logprobs=list(extension.get("response_logprobs") or []),
        policy_version=int(extension.get("policy_version", default_version)),
        finish_reason=reason,
        metadata=metadata,
    )


class OpenAIPolicy(VersionedPolicy):
    """Any OpenAI-compatible server; ``version`` follows the server's clawgym extension when present."""

    def __init__(
        self,
        model: str,
        base_url: str = "http://127.0.0.1:8000/v1",
        api_key: str | None = None,
        timeout: float = 600.0,
        logprobs: bool = False,
        return_tokens: bool = False,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        self.name = model
        self.base_url = base_url.rstrip("/")
        self.logprobs = logprobs
        self.return_tokens = return_tokens
        self.extra_body = dict(extra_body or {})
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(base_url=self.base_url, timeout=timeout, headers=headers)
        self._version = 0


    async def generate(self, messages: list[Message], tools: list[dict[str, Any]] | None = None,
                       sampling: SamplingParams | None = None) -> Generation:
        body = request_body(self.name, messages, tools, sampling or SamplingParams(), self.logprobs, self.return_tokens)
        body.update(self.extra_body)
        try:
            response = await self._client.post("/chat/completions", json=body)
        except httpx.HTTPError as exc:
            raise OpenAIError(f"request to {self.base_url}/chat/completions failed: {exc!r}") from exc
        if response.status_code != 200:
            raise OpenAIError(f"{self.base_url}/chat/completions returned HTTP {response.status_code}: "
                              f"{response.text[:500]}")
        try:
            data = response.json()
        except ValueError as exc:
            raise OpenAIError(f"response is not JSON: {response.text[:300]!r}") from exc
        generation = generation_from_response(data, self._version)
        self._version = max(self._version, generation.policy_version)
        return generation

    async def close(self) -> None:
        await self._client.aclose()
