"""clawgym's own OpenAI-compatible server over any policy (FastAPI, real SSE token streaming).

``build_app(policy, api_key=None)`` returns the app; ``serve(policy, host, port, api_key)`` runs it
with uvicorn (``clawgym serve-policy``, :mod:`clawgym.commands.serve_policy`, calls it).

Endpoints: ``POST /v1/chat/completions`` (streaming and not, ``tools`` in, ``tool_calls`` out),
``GET /v1/models``, ``GET /health``. An optional bearer key guards ``/v1/*`` (401 with an OpenAI-style
error body). Malformed bodies get a 400 that says what is wrong.

Streaming sends each piece of text as soon as its tokens are sampled (for policies with a ``stream``
method; others answer in one chunk). Text from a ``<tool_call>`` tag on is held back and sent as
structured ``tool_calls`` at the end, so streaming clients see the same answer as non-streaming ones.

clawgym extensions (ignored by ordinary clients):

- request ``"return_tokens": true`` -> response field ``"clawgym": {"prompt_ids", "response_ids",
  "response_logprobs", "policy_version", "finish_reason"}`` (in the last chunk when streaming);
- standard ``"logprobs": true`` -> OpenAI-format ``choices[0].logprobs.content`` (the sampled tokens'
  logprobs at the sampling temperature, as SGLang returns them; ``top_logprobs`` lists are left empty).
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, AsyncIterator

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

from clawgym.core.messages import ROLES, ToolCall, offered_tool_names, parse_bare_json_calls
from clawgym.core.policy import Generation, Policy, SamplingParams
from clawgym.inference.streaming import TextDelta, stream_or_generate

logger = logging.getLogger(__name__)

TOOL_TAG = "<tool_call>"


class BadRequest(ValueError):
    """The request body is malformed; the message says which field and why."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


def error_response(status: int, message: str, kind: str, code: str | None = None,
                   param: str | None = None) -> JSONResponse:
    """An OpenAI-style error body: ``{"error": {"message", "type", "param", "code"}}``."""
    return JSONResponse({"error": {"message": message, "type": kind, "param": param, "code": code}}, status_code=status)


@dataclass
class ChatRequest:
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    sampling: SamplingParams
    stream: bool
    include_usage: bool
    logprobs: bool
    return_tokens: bool


def _number(body: dict[str, Any], key: str, default: float, low: float, high: float, low_open: bool = False) -> float:
    value = body.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadRequest(f"'{key}' must be a number, got {type(value).__name__}", key)
    if value < low or value > high or (low_open and value == low):
        bound = f"({low}, {high}]" if low_open else f"[{low}, {high}]"
        raise BadRequest(f"'{key}' must be in {bound}, got {value}", key)
    return float(value)


def parse_chat_request(body: Any, default_max_tokens: int = 256, default_temperature: float = 1.0) -> ChatRequest:
    """Validate a ``/v1/chat/completions`` body; raise :class:`BadRequest` naming the bad field.

    Why by hand: the ``openai`` package's request types are TypedDicts written for clients; their
    ``Iterable`` fields are validated lazily by pydantic (``messages: "x"`` and a ``role: "wizard"``
    pass a TypeAdapter over ``CompletionCreateParams``), so they cannot check a server's input.
    """
    if not isinstance(body, dict):
        raise BadRequest(f"the request body must be a JSON object, got {type(body).__name__}")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("'messages' must be a non-empty list of message objects", "messages")
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise BadRequest(f"messages[{index}] must be an object, got {type(message).__name__}", "messages")
        role = message.get("role")
        if role == "developer":  # newer OpenAI clients send this for system instructions
            message = messages[index] = {**message, "role": "system"}
            role = "system"
        if role not in ROLES:
            raise BadRequest(f"messages[{index}].role must be one of {list(ROLES)}, got {role!r}", "messages")
        content = message.get("content")
        if content is not None and not isinstance(content, (str, list)):
            raise BadRequest(f"messages[{index}].content must be a string, a list of parts or null", "messages")
    tools = body.get("tools")
    if tools is not None:
        if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
            raise BadRequest("'tools' must be a list of tool objects", "tools")
        for index, tool in enumerate(tools):
            function = tool.get("function")
            if not isinstance(function, dict) or not isinstance(function.get("name"), str):
                raise BadRequest(f"tools[{index}] must be {{'type': 'function', 'function': {{'name': ...}}}}", "tools")
    if body.get("tool_choice") == "none":
        tools = None
    n = body.get("n", 1)
    if n != 1:
        raise BadRequest("only n=1 is supported", "n")
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    if max_tokens is None:
        max_tokens = default_max_tokens
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise BadRequest(f"'max_tokens' must be a positive integer, got {max_tokens!r}", "max_tokens")
    stop = body.get("stop")
    if stop is None:
        stop = []
    elif isinstance(stop, str):
        stop = [stop]
    elif not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
        raise BadRequest("'stop' must be a string or a list of strings", "stop")
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise BadRequest(f"'seed' must be an integer, got {seed!r}", "seed")
    flags = {}
    for key in ("stream", "logprobs", "return_tokens"):
        value = body.get(key, False)
        if value is None:
            value = False
        if not isinstance(value, bool):
            raise BadRequest(f"'{key}' must be a boolean, got {value!r}", key)
        flags[key] = value
    options = body.get("stream_options") or {}
    if not isinstance(options, dict):
        raise BadRequest("'stream_options' must be an object", "stream_options")
    sampling = SamplingParams(
        temperature=_number(body, "temperature", default_temperature, 0.0, 2.0),
        top_p=_number(body, "top_p", 1.0, 0.0, 1.0, low_open=True),
        max_tokens=max_tokens,
        stop=stop,
        seed=seed,
    )
    return ChatRequest(
        messages=messages,
        tools=tools or None,
        sampling=sampling,
        stream=flags["stream"],
        include_usage=bool(options.get("include_usage", False)),
        logprobs=flags["logprobs"],
        return_tokens=flags["return_tokens"],
    )


def _tool_calls_json(calls: list[ToolCall]) -> list[dict[str, Any]]:
    out = []
    for call in calls:
        item = call.to_openai()
        item["id"] = f"call_{uuid.uuid4().hex[:24]}"
        out.append(item)
    return out


def _answer(generation: Generation,
            tools: list[dict[str, Any]] | None = None) -> tuple[str | None, list[ToolCall], str]:
    """(content, valid tool calls, finish_reason) for the response.

    If any ``<tool_call>`` block could not be parsed, the whole raw text is returned as content with
    no tool calls: a client should never receive a half-understood call. A reply that is only a bare
    or fenced JSON call (the lenient reading of :mod:`clawgym.core.messages`) is that call when every
    name in it is one of the request's tools.
    """
    calls = generation.tool_calls
    if calls and all(call.error is None for call in calls):
        content = generation.message.get("content") or None
        return content, calls, "tool_calls"
    offered = offered_tool_names(tools)
    bare = parse_bare_json_calls(generation.text) if offered else []
    if bare and all(call.name in offered for call in bare):
        return None, bare, "tool_calls"
    finish = "length" if generation.finish_reason == "length" else "stop"
    return generation.text, [], finish


class _ContentFilter:
    """Streams text, holding back everything from ``<tool_call>`` on (and a partial tag at the end).

    With ``hold_json`` (the request offers tools), a reply that so far could be a bare or fenced JSON
    call (it starts with ``{``, ``[`` or a code fence) is held back whole, until the end tells.
    """

    def __init__(self, hold_json: bool = False) -> None:
        self.text = ""
        self.sent = 0
        self.hold_json = hold_json

    def push(self, piece: str) -> str:
        self.text += piece
        head = self.text.lstrip()
        if self.hold_json and self.sent == 0 and (not head or head.startswith(("{", "[", "```"))
                                                  or "```".startswith(head)):
            return ""
        cut = self.text.find(TOOL_TAG)
        if cut < 0:
            cut = len(self.text)
            for size in range(min(len(TOOL_TAG) - 1, len(self.text)), 0, -1):
                if self.text.endswith(TOOL_TAG[:size]):
                    cut -= size
                    break
        out = self.text[self.sent : cut] if cut > self.sent else ""
        self.sent = max(self.sent, cut)
        return out


class PolicyServer:
    """Request handling shared by the routes; holds the policy and renders OpenAI responses."""

    def __init__(self, policy: Policy, model_name: str | None = None, default_max_tokens: int = 256) -> None:
        self.policy = policy
        self.model_name = model_name or getattr(policy, "name", "clawgym-policy")
        self.default_max_tokens = default_max_tokens
        self.tokenizer = getattr(policy, "tokenizer", None)

    def _token_text(self, token_id: int) -> str:
        if self.tokenizer is None:
            return str(token_id)
        return self.tokenizer.decode([token_id], skip_special_tokens=False)

    def logprobs_json(self, token_ids: list[int], logprobs: list[float]) -> dict[str, Any]:
        content = []
        for token_id, logprob in zip(token_ids, logprobs):
            text = self._token_text(token_id)
            content.append({"token": text, "logprob": logprob, "bytes": list(text.encode("utf-8")), "top_logprobs": []})
        return {"content": content}

    def extension(self, generation: Generation) -> dict[str, Any]:
        return {
            "prompt_ids": generation.prompt_ids,
            "response_ids": generation.response_ids,
            "response_logprobs": generation.response_logprobs,
            "policy_version": generation.policy_version,
            "finish_reason": generation.finish_reason,
        }

    @staticmethod
    def usage(generation: Generation) -> dict[str, int]:
        prompt, completion = len(generation.prompt_ids), len(generation.response_ids)
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    def completion(self, request: ChatRequest, generation: Generation,
                   response_id: str | None = None) -> dict[str, Any]:
        content, calls, finish = _answer(generation, request.tools)
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = _tool_calls_json(calls)
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
        if request.logprobs and generation.response_ids:
            choice["logprobs"] = self.logprobs_json(generation.response_ids, generation.response_logprobs)
        body: dict[str, Any] = {
            "id": response_id or f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model_name,
            "choices": [choice],
            "usage": self.usage(generation),
        }
        if request.return_tokens:
            body["clawgym"] = self.extension(generation)
        return body

    async def chunks(self, request: ChatRequest, items: AsyncIterator[Any], first: Any,
                     response_id: str | None = None) -> AsyncIterator[str]:
        """SSE lines for one streamed answer: role, text deltas, tool calls, finish, [usage], [DONE]."""
        base = {"id": response_id or f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion.chunk",
                "created": int(time.time()), "model": self.model_name}

        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
            choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": finish,
                                      "logprobs": extra.pop("logprobs", None)}
            return "data: " + json.dumps({**base, "choices": [choice], **extra}) + "\n\n"

        yield chunk({"role": "assistant", "content": ""})
        filter_ = _ContentFilter(hold_json=bool(offered_tool_names(request.tools)))
        item = first
        try:
            while not isinstance(item, Generation):
                if isinstance(item, TextDelta):
                    visible = filter_.push(item.text)
                    logprobs = (self.logprobs_json(item.token_ids, item.logprobs)
                                if request.logprobs and item.token_ids else None)
                    if visible or logprobs:
                        yield chunk({"content": visible}, logprobs=logprobs)
                item = await items.__anext__()
        except Exception as exc:  # the policy failed mid-answer: tell the client in-band, then stop
            logger.exception("streaming generation failed")
            yield "data: " + json.dumps(
                {"error": {"message": f"generation failed: {exc}", "type": "server_error", "param": None,
                           "code": None}}) + "\n\n"
            yield "data: [DONE]\n\n"
            return
        finally:  # also on client disconnect: lets the policy free the request's batch row at once
            if not isinstance(item, Generation):
                await items.aclose()
        generation = item
        content, calls, finish = _answer(generation, request.tools)
        if calls:
            deltas = [{"index": i, **call} for i, call in enumerate(_tool_calls_json(calls))]
            yield chunk({"tool_calls": deltas})
        else:
            rest = generation.text[filter_.sent :] if generation.text.startswith(filter_.text[: filter_.sent]) else ""
            if rest:
                yield chunk({"content": rest})
        extra: dict[str, Any] = {}
        if request.return_tokens:
            extra["clawgym"] = self.extension(generation)
        yield chunk({}, finish, **extra)
        if request.include_usage:
            yield "data: " + json.dumps({**base, "choices": [], "usage": self.usage(generation)}) + "\n\n"
        yield "data: [DONE]\n\n"


def require_bearer_key(app: FastAPI, api_key: str | None) -> None:
    """Guard ``/v1/*`` with ``Authorization: Bearer <api_key>`` (a 401 in OpenAI's error shape otherwise)."""
    if not api_key:
        return

    @app.middleware("http")
    async def check_key(request: Request, call_next: Any) -> Any:
        if request.url.path.startswith("/v1/"):
            header = request.headers.get("authorization", "")
            if header != f"Bearer {api_key}":
                reason = "missing" if not header else "incorrect"
                return error_response(401, f"{reason} API key: send 'Authorization: Bearer <key>'",
                                      "invalid_request_error", "invalid_api_key")
        return await call_next(request)


def build_app(policy: Policy, api_key: str | None = None, model_name: str | None = None,
              default_max_tokens: int = 256) -> FastAPI:
    """The FastAPI app serving ``policy``; ``api_key`` (if set) is required as a bearer token on /v1/*."""
    server = PolicyServer(policy, model_name, default_max_tokens)
    app = FastAPI(title="clawgym policy server")
    app.state.policy_server = server

    require_bearer_key(app, api_key)

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "model": server.model_name, "policy_version": policy.version}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list",
                "data": [{"id": server.model_name, "object": "model", "created": 0, "owned_by": "clawgym"}]}

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Any:
        try:
            body = json.loads(await request.body())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return error_response(400, f"the request body is not valid JSON: {exc}", "invalid_request_error")
        try:
            chat = parse_chat_request(body, server.default_max_tokens)
        except BadRequest as exc:
            return error_response(400, str(exc), "invalid_request_error", param=exc.param)
        try:
            if not chat.stream:
                generation = await policy.generate(chat.messages, chat.tools, chat.sampling)
                return JSONResponse(server.completion(chat, generation))
            items = stream_or_generate(policy, chat.messages, chat.tools, chat.sampling)
            first = await items.__anext__()  # errors before the first token still get a proper status
        except ValueError as exc:  # e.g. the prompt does not fit the context
            return error_response(400, str(exc), "invalid_request_error")
        except Exception as exc:
            logger.exception("generation failed")
            return error_response(500, f"generation failed: {exc}", "server_error")
        return StreamingResponse(server.chunks(chat, items, first), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache"})

    return app


def serve(policy: Policy, host: str = "127.0.0.1", port: int = 8000, api_key: str | None = None, **kwargs: Any) -> None:
    """Run the server in the foreground (blocks until interrupted)."""
    import uvicorn

    uvicorn.run(build_app(policy, api_key, **kwargs), host=host, port=port, log_level="info")


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


class BackgroundServer:
    """Serve an ASGI app with uvicorn in a daemon thread (tests, notebooks, in-process gateways).

    ``with BackgroundServer(app) as url: ...`` -> ``url`` is ``http://127.0.0.1:<free port>``.
    """

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int | None = None) -> None:
        import uvicorn

        self.host, self.port = host, port or free_port(host)
        self.server = uvicorn.Server(uvicorn.Config(app, host=host, port=self.port,
                                                    log_level="warning", lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, name="clawgym-server", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout: float = 30.0) -> str:
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"server on {self.url} did not start")
            time.sleep(0.02)
        return self.url

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
