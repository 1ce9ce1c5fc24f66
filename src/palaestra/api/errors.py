"""Every error is ``{"error": "<message>", "code": "<slug>"}``: never HTML, never a stack trace."""

from __future__ import annotations

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import InterfaceError, OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException

from palaestra.api.contract import allowed_methods
from palaestra.errors import (
    Conflict,
    Forbidden,
    InvalidRequest,
    NotFound,
    PalaestraError,
    StoreClosed,
    TooManyRequests,
    Unauthorized,
)
from palaestra.http.headers import security_headers

__all__ = ["ApiError", "error_response", "install_error_handlers"]

log = structlog.get_logger(__name__)

_STATUS: dict[type[PalaestraError], int] = {
    NotFound: 404,
    Unauthorized: 401,
    Forbidden: 403,
    InvalidRequest: 400,
    Conflict: 409,
}


class ApiError(PalaestraError):
    """An error with an explicit HTTP status and code."""

    def __init__(self, status: int, message: str, code: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


def error_response(status: int, message: str, code: str) -> JSONResponse:
    return JSONResponse({"error": message, "code": code}, status_code=status)


_HTTP_CODES = {
    400: "bad-request",
    401: "unauthorized",
    403: "forbidden",
    404: "not-found",
    405: "method-not-allowed",
    409: "conflict",
    413: "payload-too-large",
    415: "unsupported-media-type",
    422: "invalid-request",
    429: "too-many-requests",
    503: "unavailable",
}

#: The store's connection was lost (a database restart, a dropped connection) or the
#: store is shutting down: nothing was done, and the same request can be sent again.
_STORE_LOST = (OperationalError, InterfaceError, StoreClosed)


def _unavailable(exc: Exception) -> JSONResponse:
    log.warning("the store is unavailable", error=type(exc).__name__)
    response = error_response(503, "The store is unavailable; try again", "unavailable")
    response.headers["Retry-After"] = "1"
    return response


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.message, exc.code)

    @app.exception_handler(TooManyRequests)
    async def _too_many(_request: Request, exc: TooManyRequests) -> JSONResponse:
        response = error_response(429, exc.message, exc.code)
        response.headers["Retry-After"] = str(exc.retry_after)
        return response

    @app.exception_handler(PalaestraError)
    async def _palaestra_error(_request: Request, exc: PalaestraError) -> JSONResponse:
        status = next((s for cls, s in _STATUS.items() if isinstance(exc, cls)), None)
        if isinstance(exc, StoreClosed):
            return _unavailable(exc)
        if status is None:
            log.error("unhandled platform error", error=str(exc), type=type(exc).__name__)
            return error_response(500, "Internal error", "internal")
        return error_response(status, exc.message, exc.code)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
        where = ".".join(str(part) for part in first.get("loc", ()) if part != "body")
        message = f"{where}: {first.get('msg')}" if where else str(first.get("msg"))
        if first.get("type") == "json_invalid":
            message = "Malformed JSON body"
        return error_response(422, message, "invalid-request")

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _HTTP_CODES.get(exc.status_code, "error")
        response = error_response(exc.status_code, str(exc.detail), code)
        response.headers.update(exc.headers or {})  # 405's Allow, 401's WWW-Authenticate
        if exc.status_code == 405 and (allowed := allowed_methods(app, request.url.path)):
            response.headers["Allow"] = ", ".join(allowed)
        return response

    @app.exception_handler(Exception)
    async def _crash(request: Request, exc: Exception) -> JSONResponse:
        if isinstance(exc, _STORE_LOST):
            response = _unavailable(exc)
        else:
            log.exception("unhandled error", type=type(exc).__name__)
            response = error_response(500, "Internal error", "internal")
        # Answered outside the middleware stack, so the headers are added here.
        https = bool(getattr(request.app.state, "https", False))
        response.headers.update(security_headers(html=False, https=https))
        return response
