"""The ONE error hierarchy of the project's Kubernetes API client, by HTTP status.

Pure (no I/O, no client imports), so code that only handles errors - or simulates a
cluster in tests - can raise and catch the same classes as ``exporter.kubeclient``.
Callers catch the narrow class: :class:`NotFound` (the object is gone), :class:`Conflict`
(re-read), :class:`Gone` (list again), :class:`Transient` (back off and retry); anything
else (:class:`Unauthorized`, :class:`Forbidden`, :class:`Invalid`, other 4xx) is a
refusal that retrying will not fix.
"""

from __future__ import annotations

import json


class ApiError(RuntimeError):
    """An API call failed; ``status`` is the HTTP status (0: no answer was received)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class NotFound(ApiError):
    """404: the object (or its kind: a CRD that is not installed) does not exist."""


class Conflict(ApiError):
    """409: the object changed since it was read, or already exists."""


class Gone(ApiError):
    """410: a watch's resourceVersion is too old; list again."""


class Unauthorized(ApiError):
    """401: the credentials were not accepted (an expired or wrong token)."""


class Forbidden(ApiError):
    """403: RBAC or an admission policy refused the request."""


class Invalid(ApiError):
    """422: the request failed validation (e.g. a uid precondition in a patch)."""


class Transient(ApiError):
    """429, 5xx, a timeout or no connection: worth retrying after a backoff."""


_BY_STATUS: dict[int, type[ApiError]] = {
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Invalid,
}


def error_class(status: int) -> type[ApiError]:
    """The class for an HTTP error status. Pure."""
    if status == 429 or status >= 500 or status == 0:
        return Transient
    return _BY_STATUS.get(status, ApiError)


def error_for_status(status: int, what: str, body: bytes) -> ApiError:
    """The exception for an error answer: ``"<what>: HTTP <status>: <Status.message>"``
    (the body's first 300 bytes when it is not a Status object). Pure."""
    message = body[:300].decode(errors="replace")
    try:
        parsed = json.loads(body)
        if isinstance(parsed, dict) and parsed.get("message"):
            message = str(parsed["message"])
    except ValueError:
        pass
    return error_class(status)(status, f"{what}: HTTP {status}: {message}")
