"""Who is asking: the user a request belongs to, from its API key or its ``user`` field.

With ``serve.users`` (a table ``api key -> user id``) every request must carry one of those keys as a
bearer token, else HTTP 401; the key decides the user. Without a table, the body's ``user`` field
does (OpenAI's own field for end-user ids), and requests without one belong to ``default``.

A request may name an adapter explicitly with ``"model": "adapter:<user>"``; naming someone else's is
HTTP 403 unless the request carries the admin key (``serve.admin_key``), which is also what
``DELETE /v1/users/{id}`` needs.
"""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING, Mapping

from clawgym.personal.user_adapters import check_user_id

if TYPE_CHECKING:
    from clawgym.rl.types import JSONValue

DEFAULT_USER = "default"
ADAPTER_PREFIX = "adapter:"


class AccessDenied(Exception):
    """Carries the HTTP status (401 or 403) and a message for the client."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def bearer(headers: Mapping[str, str]) -> str | None:
    value = next((v for k, v in headers.items() if k.lower() == "authorization"), "")
    return value[7:].strip() if value.lower().startswith("bearer ") else None


class UserDirectory:
    def __init__(self, keys: Mapping[str, str] | None = None, admin_key: str | None = None,
                 shared_key: str | None = None) -> None:
        self.keys = {key: check_user_id(user) for key, user in (keys or {}).items()}
        self.admin_key = admin_key
        self.shared_key = shared_key  # without a table: the one key every client uses (serve.api_key)

    def is_admin(self, headers: Mapping[str, str]) -> bool:
        key = bearer(headers)
        return bool(self.admin_key) and key is not None and hmac.compare_digest(key, self.admin_key)

    def identify(self, headers: Mapping[str, str], body: Mapping[str, JSONValue]) -> str:
        """The request's user; raises :class:`AccessDenied` (401 unknown key, 403 someone else's adapter)."""
        admin = self.is_admin(headers)
        if self.keys:
            key = bearer(headers)
            user = next((u for k, u in self.keys.items() if key is not None and hmac.compare_digest(k, key)), None)
            if user is None and not admin:
                raise AccessDenied(401, "unknown API key: use the key the server's owner gave you")
        else:
            key = bearer(headers)
            if self.shared_key and not admin and not (key is not None and hmac.compare_digest(key, self.shared_key)):
                raise AccessDenied(401, "missing or incorrect API key: send 'Authorization: Bearer <key>'")
            user = body.get("user") or DEFAULT_USER
            if not isinstance(user, str):
                raise AccessDenied(400, "'user' must be a string")
        model = body.get("model")
        if isinstance(model, str) and model.startswith(ADAPTER_PREFIX):
            named = model[len(ADAPTER_PREFIX):]
            if named != user and not admin:
                raise AccessDenied(403, f"the adapter of user {named!r} is not yours")
            user = named
        try:
            return check_user_id(user or DEFAULT_USER)
        except ValueError as exc:
            raise AccessDenied(400, str(exc)) from None
