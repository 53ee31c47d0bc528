"""The training controls over HTTP: see what the personal trainer serves, roll back, resume after an alarm.

- ``GET /v1/training``: the served version, the kept versions, the publish gate's last verdict, the alarms
  that fired and whether training is paused (:meth:`~clawgym.personal.learner.Learner.status`);
- ``POST /v1/rollback`` ``{"version": N}``: serve kept version N again (404 if it is not kept);
- ``POST /v1/training/resume``: train again after an alarm paused training.

The shared weights serve everyone, so with a user table (``serve.users``) only the admin key may roll them
back or resume; on a server of one key (``serve.api_key``, or none) that key may. Reading the status needs
what a chat request needs.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from clawgym.inference.server import error_response
from clawgym.personal.publishing import UnknownVersion
from clawgym.serve.users import AccessDenied, UserDirectory

if TYPE_CHECKING:
    from clawgym.personal.learner import Learner


def training_router(learner: Learner, users: UserDirectory) -> APIRouter:
    router = APIRouter()

    def denied(request: Request, control: bool) -> Response | None:
        """The error response for a caller who may not read (or, ``control``, change) the training; else None."""
        if users.is_admin(request.headers):
            return None
        try:
            users.identify(request.headers, {})
        except AccessDenied as exc:
            return error_response(exc.status, str(exc), "invalid_request_error",
                                  "invalid_api_key" if exc.status == 401 else None)
        if control and users.keys:
            return error_response(403, "the weights are shared by every user: rolling them back or resuming "
                                       "training needs the admin key", "invalid_request_error")
        return None

    @router.get("/v1/training")
    async def status(request: Request) -> Response:
        return denied(request, control=False) or JSONResponse(learner.status())

    @router.post("/v1/training/resume")
    async def resume(request: Request) -> Response:
        return denied(request, control=True) or JSONResponse(learner.resume())

    @router.post("/v1/rollback")
    async def rollback(request: Request) -> Response:
        error = denied(request, control=True)
        if error is not None:
            return error
        try:
            body = json.loads(await request.body() or b"{}")
        except (json.JSONDecodeError, UnicodeDecodeError):
            return error_response(400, "the rollback body is not valid JSON", "invalid_request_error")
        version = body.get("version") if isinstance(body, dict) else None
        if not isinstance(version, int) or isinstance(version, bool):
            return error_response(400, "send {\"version\": N} with N one of GET /v1/training's versions",
                                  "invalid_request_error", param="version")
        try:
            return JSONResponse(await learner.rollback(version))
        except UnknownVersion:
            kept = [v["version"] for v in learner.status().get("versions", [])]
            return error_response(404, f"version {version} is not kept; kept: {kept}", "invalid_request_error",
                                  param="version")

    return router
