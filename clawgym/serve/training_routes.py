"""The training controls over HTTP: see what the personal trainer serves, roll back, resume after an alarm.

- ``GET /v1/training``: the served version, the kept versions, the publish gate's last verdict, the alarms
  that fired and whether training is paused (:meth:`~clawgym.personal.learner.Learner.status`);
- ``POST /v1/rollback`` ``{"version": N}``: serve kept version N again (404 if it is not kept);
- ``POST /v1/training/resume``: train again after an alarm paused training.

The shared weights serve everyone, so with a user table (``serve.users``) only the admin key may roll them
back or resume; on a server of one key (``serve.api_key``, or none) that key may. With per-user adapters
(``serve.adapters: per_user``) each person controls their own: their key reads, rolls back and resumes their
adapter; naming another user (``"user": ...`` in the body, ``?user=`` for the status) needs the admin key, which
must name one to change anything (its status without one lists everyone). Without a user table the request's
``user`` names the person, as in a chat request. Reading the status needs what a chat request needs.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from clawgym.inference.server import error_response
from clawgym.personal.publishing import UnknownVersion
from clawgym.personal.user_adapters import check_user_id
from clawgym.serve.users import AccessDenied, UserDirectory

if TYPE_CHECKING:
    from clawgym.personal.learner import Learner
    from clawgym.rl.types import JSONObject


def training_router(learner: Learner, users: UserDirectory) -> APIRouter:
    router = APIRouter()

    def whose(request: Request, named: object, control: bool) -> str | None:
        """The user whose weights the caller reads or (``control``) changes; None: everyone's (the shared
        weights, or an admin's status of every user). Raises :class:`AccessDenied`."""
        if named is not None and not isinstance(named, str):
            raise AccessDenied(400, "'user' must be a user id")
        admin = users.is_admin(request.headers)
        if not learner.per_user:
            if not admin:
                users.identify(request.headers, {})
                if control and users.keys:
                    raise AccessDenied(403, "the weights are shared by every user: rolling them back or resuming "
                                            "training needs the admin key")
            return None
        if admin and named:
            try:
                return check_user_id(named)
            except ValueError as exc:
                raise AccessDenied(400, str(exc)) from None
        if admin and users.keys:
            if control:
                raise AccessDenied(400, "with the admin key, name the user whose adapter to change: "
                                        "{\"user\": \"<id>\", ...}")
            return None
        own = users.identify(request.headers, {"user": named} if named and not users.keys else {})
        if named and named != own:
            raise AccessDenied(403, f"the adapter of user {named!r} is not yours: reading, rolling back or resuming "
                                    "another user's training needs the admin key")
        return own

    def refused(exc: AccessDenied) -> Response:
        return error_response(exc.status, str(exc), "invalid_request_error",
                              "invalid_api_key" if exc.status == 401 else None)

    async def body_of(request: Request) -> JSONObject:
        """The request's JSON object, once the caller's key is known to be good (a bad key is 401 first)."""
        if not users.is_admin(request.headers):
            users.identify(request.headers, {})
        try:
            body = json.loads(await request.body() or b"{}")
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise AccessDenied(400, "the body is not valid JSON") from None
        if not isinstance(body, dict):
            raise AccessDenied(400, "the body must be a JSON object")
        return body

    @router.get("/v1/training")
    async def status(request: Request) -> Response:
        try:
            user = whose(request, request.query_params.get("user"), control=False)
        except AccessDenied as exc:
            return refused(exc)
        return JSONResponse(learner.status(user))

    @router.post("/v1/training/resume")
    async def resume(request: Request) -> Response:
        try:
            user = whose(request, (await body_of(request)).get("user"), control=True)
        except AccessDenied as exc:
            return refused(exc)
        return JSONResponse(learner.resume(user))

    @router.post("/v1/rollback")
    async def rollback(request: Request) -> Response:
        try:
            body = await body_of(request)
            user = whose(request, body.get("user"), control=True)
        except AccessDenied as exc:
            return refused(exc)
        version = body.get("version")
        if not isinstance(version, int) or isinstance(version, bool):
            return error_response(400, "send {\"version\": N} with N one of GET /v1/training's versions",
                                  "invalid_request_error", param="version")
        try:
            return JSONResponse(await learner.rollback(version, user))
        except UnknownVersion:
            kept = [v["version"] for v in learner.status(user).get("versions", [])]
            return error_response(404, f"version {version} is not kept; kept: {kept}", "invalid_request_error",
                                  param="version")

    return router
