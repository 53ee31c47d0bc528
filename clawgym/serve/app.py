"""The gateway over HTTP: the OpenAI-compatible surface real clients (OpenClaw, the openai SDK, curl) use.

``/v1/chat/completions`` (SSE streaming and not, tools and ``tool_calls``), ``/v1/models``,
``/health``, an optional bearer key. Request validation and OpenAI rendering are the policy
server's (:mod:`clawgym.inference.server`); this module adds the gateway's rules: a body-size limit, a
``max_tokens`` above the advertised ``max_output_tokens`` clamped to it (not refused: OpenClaw sends its own
configured ``maxTokens``), and recording only what was fully delivered (a client that disconnects mid-stream
leaves no turn).

With a :class:`~clawgym.serve.users.UserDirectory` the request's user comes from its API key (or its
``user`` field), unknown keys get 401 and someone else's adapter 403; ``DELETE /v1/users/{id}`` (admin
key) forgets a user; ``/dashboard`` shows each user's agent learning (:mod:`clawgym.serve.dashboard`).
``GET /v1/wishes`` lists the caller's remembered wishes and ``DELETE /v1/wishes/{id}`` takes one back
(:mod:`clawgym.personal.wish_memory`): the caller is identified like a chat request (the admin key may
name anyone with ``?user=``), another user's wish is 403, an unknown id 404; ``DELETE /v1/wishes/{id}/check``
takes back only the wish's compiled check (:mod:`clawgym.personal.wish_checks`; 404 when it has none). With a learner,
``GET /v1/training``, ``POST /v1/rollback`` and ``POST /v1/training/resume`` (:mod:`clawgym.serve.training_routes`)
show and steer what it serves, and ``/health`` says whether training is paused and why.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, Any, AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse

from clawgym.core.policy import Generation
from clawgym.inference.server import BadRequest, PolicyServer, error_response, parse_chat_request, require_bearer_key
from clawgym.inference.streaming import StreamItem
from clawgym.personal.user_adapters import check_user_id
from clawgym.personal.wish_memory import WishMemory
from clawgym.rl.types import JSONValue, new_id
from clawgym.serve.dashboard import Dashboard
from clawgym.serve.feedback import FeedbackError, parse_feedback
from clawgym.serve.gateway import ChatGateway
from clawgym.serve.training_routes import training_router
from clawgym.serve.users import AccessDenied, UserDirectory, bearer

if TYPE_CHECKING:
    from clawgym.personal.learner import Learner

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 8 * 1024 * 1024  # OpenClaw's requests are ~60 kB; a long session stays far below this


def build_gateway_app(gateway: ChatGateway, api_key: str | None = None, max_body_bytes: int = MAX_BODY_BYTES,
                      default_max_tokens: int = 512, default_temperature: float = 1.0,
                      users: UserDirectory | None = None, dashboard: Dashboard | None = None,
                      forget: Callable[[str], Awaitable[Mapping[str, object]]] | None = None,
                      wishes: WishMemory | None = None, max_output_tokens: int | None = None,
                      learner: Learner | None = None) -> FastAPI:
    renderer = PolicyServer(getattr(gateway.responder, "policy", None), gateway.model_name, default_max_tokens)
    app = FastAPI(title="clawgym chat gateway")
    app.state.gateway = gateway
    started = asyncio.Lock()
    state = {"started": False}

    async def ensure_started() -> None:
        # started on the server's own loop, on first use (works under any server and lifespan setting)
        async with started:
            if not state["started"]:
                await gateway.start()
                state["started"] = True

    # who is calling: a user table checks its own keys; without one, one shared key (or none) guards /v1/*
    keyed = users is not None and bool(users.keys or users.admin_key)
    users = users or UserDirectory(shared_key=api_key)

    def caller(request: Request, body: Mapping[str, JSONValue]) -> str:
        """The request's user, by the chat request's rules (raises :class:`AccessDenied`)."""
        return users.identify(request.headers, body)

    def wish_owner(request: Request) -> str:
        named = request.query_params.get("user")
        if named and users.is_admin(request.headers):
            try:
                return check_user_id(named)
            except ValueError as exc:
                raise AccessDenied(400, str(exc)) from None
        return caller(request, {"user": named} if named else {})

    def access_error(exc: AccessDenied) -> JSONResponse:
        return error_response(exc.status, str(exc), "invalid_request_error",
                              "invalid_api_key" if exc.status == 401 else None)

    def wish_caller(request: Request) -> tuple[str | None, JSONResponse | None]:
        """(the caller's user id, None), or (None, the error response: no wish memory, or access denied)."""
        if wishes is None:
            return None, error_response(404, "this gateway keeps no wish memory", "invalid_request_error")
        try:
            return wish_owner(request), None
        except AccessDenied as exc:
            return None, access_error(exc)

    @app.get("/v1/wishes")
    async def list_wishes(request: Request) -> Response:
        """The caller's remembered wishes, oldest first."""
        user, error = wish_caller(request)
        if error is not None:
            return error
        return JSONResponse({"user": user, "wishes": [w.to_json() for w in wishes.wishes(user)]})

    def own_wish(request: Request, wish_id: str) -> tuple[str | None, Response | None]:
        """(the caller's user id, None) when the caller owns the wish, else (None, the error: no wish memory or
        access denied as :func:`wish_caller` says, 404 for an unknown wish, 403 for another user's)."""
        user, error = wish_caller(request)
        if error is not None:
            return None, error
        owner = wishes.owner(wish_id)
        if owner is None:
            return None, error_response(404, f"no remembered wish with id {wish_id!r}",
                                        "invalid_request_error", param="wish_id")
        if owner != user:
            return None, error_response(403, "that wish belongs to another user", "invalid_request_error")
        return user, None

    @app.delete("/v1/wishes/{wish_id}")
    async def remove_wish(wish_id: str, request: Request) -> Response:
        """The caller takes one of their wishes back (on disk before the answer)."""
        user, error = own_wish(request, wish_id)
        if error is not None:
            return error
        removed = wishes.remove(user, wish_id)
        if wishes.log is not None:
            await asyncio.to_thread(wishes.log.flush)
        return JSONResponse({"user": user, "removed": removed.to_json()})

    @app.delete("/v1/wishes/{wish_id}/check")
    async def remove_wish_check(wish_id: str, request: Request) -> Response:
        """The caller takes a wish's compiled check back: the wish stays, judged by the model's question again,
        and is not compiled again (on disk before the answer)."""
        user, error = own_wish(request, wish_id)
        if error is not None:
            return error
        try:
            wish = wishes.remove_check(user, wish_id)
        except KeyError:
            return error_response(404, f"the wish {wish_id!r} has no compiled check", "invalid_request_error",
                                  param="wish_id")
        if wishes.log is not None:
            await asyncio.to_thread(wishes.log.flush)
        return JSONResponse({"user": user, "wish": wish.to_json()})

    @app.delete("/v1/users/{user_id}")
    async def forget_user(user_id: str, request: Request) -> Response:
        if not users.is_admin(request.headers):
            return error_response(403 if bearer(request.headers) else 401, "forgetting a user needs the admin key",
                                  "invalid_request_error", "invalid_api_key")
        if forget is None:
            return error_response(404, "this gateway keeps no per-user data to forget", "invalid_request_error")
        try:
            check_user_id(user_id)
        except ValueError as exc:
            return error_response(400, str(exc), "invalid_request_error", param="user_id")
        await ensure_started()
        return JSONResponse({"user": user_id, "forgotten": True, **await forget(user_id)})

    @app.post("/v1/feedback")
    async def feedback(request: Request) -> Response:
        """Explicit feedback on a response (its id) or on a session's last turn: a thumb and/or a correction."""
        try:
            body = json.loads(await request.body())
            user = caller(request, body if isinstance(body, dict) else {})
            result = await gateway.add_feedback(parse_feedback(body), user)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return error_response(400, "the feedback body is not valid JSON", "invalid_request_error")
        except AccessDenied as exc:
            return error_response(exc.status, str(exc), "invalid_request_error")
        except FeedbackError as exc:
            return error_response(exc.status, str(exc), "invalid_request_error", param=exc.param)
        if dashboard is not None and result.get("thumb"):
            dashboard.observe_feedback(result["user"], result["thumb"])
        return JSONResponse(result)

    if not keyed:
        require_bearer_key(app, api_key)  # registered before the dashboard's guard, which therefore runs first

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > max_body_bytes:
            return error_response(413, f"request body of {declared} bytes exceeds the limit of {max_body_bytes}",
                                  "invalid_request_error")
        raw = await request.body()
        if len(raw) > max_body_bytes:
            return error_response(413, f"request body of {len(raw)} bytes exceeds the limit of {max_body_bytes}",
                                  "invalid_request_error")
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return error_response(400, f"the request body is not valid JSON: {exc}", "invalid_request_error")
        try:
            chat = parse_chat_request(body, default_max_tokens, default_temperature)
        except BadRequest as exc:
            return error_response(400, str(exc), "invalid_request_error", param=exc.param)
        if max_output_tokens is not None and chat.sampling.max_tokens > max_output_tokens:
            # clamped, not refused: OpenClaw sends its configured maxTokens as max_completion_tokens, and one
            # person's request for the whole window must not hold the engine while others wait
            chat.sampling.max_tokens = max_output_tokens
        try:
            user = caller(request, body)
        except AccessDenied as exc:
            return error_response(exc.status, str(exc), "invalid_request_error",
                                  "invalid_api_key" if exc.status == 401 else None)
        await ensure_started()
        turn_id = new_id()  # the response id the client sees is the recorded turn's id (for /v1/feedback)
        response_id = f"chatcmpl-{turn_id}"
        items = gateway.complete(dict(request.headers), body, chat.sampling, user=user, turn_id=turn_id)
        try:
            if not chat.stream:
                generation = None
                async for item in items:  # runs the generator to its end: the turn is recorded
                    if isinstance(item, Generation):
                        generation = item
                assert generation is not None
                return JSONResponse(renderer.completion(chat, generation, response_id))
            first = await items.__anext__()
        except ValueError as exc:
            return error_response(400, str(exc), "invalid_request_error")
        except Exception as exc:
            logger.exception("answering failed")
            return error_response(500, f"generation failed: {exc}", "server_error")
        return StreamingResponse(_deliver_then_record(gateway, renderer.chunks(chat, items, first, response_id), items),
                                 media_type="text/event-stream", headers={"Cache-Control": "no-cache"})

    @app.get("/health")
    async def health() -> dict[str, Any]:
        stats = gateway.stats
        health = {"status": "ok", "model": gateway.model_name, "open_sessions": len(gateway.tracker.sessions),
                  "main_turns": stats.main_turns, "side_turns": stats.side_turns, "judged": stats.judged}
        if learner is not None:
            training = learner.status()
            health["training"] = {"version": training.get("version"), "paused": training.get("paused", False),
                                  "reason": training.get("reason", "")}
        return health

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        info = gateway.model_info  # the real limits (vLLM calls the window max_model_len)
        limits = {"context_window": info["context_window"], "max_model_len": info["context_window"],
                  "max_output_tokens": info["max_output_tokens"]} if info else {}
        return {"object": "list", "data": [{"id": gateway.model_name, "object": "model",
                                            "created": 0, "owned_by": "clawgym", **limits}]}

    if dashboard is not None:
        dashboard_router = dashboard.router()

        @app.middleware("http")
        async def guard_dashboard_data(request: Request,
                                       call_next: Callable[[Request], Awaitable[Response]]) -> Response:
            # the page itself holds no data; its data needs the admin (or shared) key once keys exist
            protected = users.keys or users.admin_key or api_key
            if request.url.path == "/dashboard/data" and protected:
                key = bearer(request.headers)
                if not (users.is_admin(request.headers) or (api_key and key == api_key)):
                    return error_response(401,
                                          "the dashboard's data needs the admin key (open /dashboard?key=<admin key>)",
                                          "invalid_request_error", "invalid_api_key")
            return await call_next(request)

        app.include_router(dashboard_router)

    if learner is not None:
        app.include_router(training_router(learner, users))

    return app


async def _deliver_then_record(gateway: ChatGateway, lines: AsyncIterator[str],
                               items: AsyncGenerator[StreamItem, None]) -> AsyncIterator[str]:
    """Send every SSE line; once ``[DONE]`` went out, let the turn be recorded.

    The rest of ``gateway.complete`` (recording) runs in its own task: the server cancels this
    generator when the client hangs up, and a client that hangs up right after ``[DONE]`` still got
    the whole answer, so its turn must be recorded anyway.
    """
    delivered = False
    try:
        async for line in lines:
            if line.startswith("data: [DONE]"):
                delivered = True
            yield line
    finally:
        if not delivered:
            gateway.abort()
        gateway.spawn(_finish(items, delivered))


async def _finish(items: AsyncGenerator[StreamItem, None], delivered: bool) -> None:
    if delivered:
        async for _ in items:  # runs gateway.complete to its end: the turn is recorded
            pass
    else:
        await items.aclose()  # nothing past the generation runs: nothing is recorded
