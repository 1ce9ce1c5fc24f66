"""What the API declares it answers: every route's error statuses, each with the one error body.

A client generated from ``/openapi.json`` must find every status a route can
answer. The statuses that follow from a route's shape are derived from its
operation here (a body can be unparseable, too large or off the schema; a path
names something that may not exist; a bearer token may be missing or wrong, and
wrong ones are throttled; the store may be briefly unreachable); those a route
adds for a rule of its own (``400 invalid-url``, ``403`` for the admin's routes,
``409``) it declares itself, with :func:`errors`.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel, Field

__all__ = ["ErrorOut", "allowed_methods", "declare_errors", "errors"]


class ErrorOut(BaseModel):
    """Every error the API answers: a sentence for people and a stable code for programs."""

    error: str = Field(description="What went wrong, in a sentence.")
    code: str = Field(description="A stable slug, e.g. not-found, invalid-url, unauthorized.")


_MEANING = {
    400: "The request cannot be read, or breaks a rule the schema cannot state.",
    401: "The credentials are missing or wrong.",
    403: "This caller may not do this.",
    404: "Nothing of that id, or nothing the caller may see.",
    409: "The request conflicts with the resource's current state.",
    413: "The body is larger than the server takes.",
    422: "The request does not match the schema.",
    429: "Too many requests: try again after Retry-After seconds.",
    500: "An internal error; the details are in the server's log, never in the answer.",
    503: "The store is unavailable for a moment: try again after Retry-After seconds.",
}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` entry of a route that can answer ``statuses``."""
    return {status: {"model": ErrorOut, "description": _MEANING[status]} for status in statuses}


def statuses_of(operation: dict[str, Any]) -> set[int]:
    """The error statuses that follow from an operation's shape in the OpenAPI document."""
    found = {500, 503}
    parameters = operation.get("parameters", [])
    if "requestBody" in operation:
        found |= {400, 413, 422}
    if parameters:
        found.add(422)
    if any(p["in"] == "query" and p["name"] == "cursor" for p in parameters):
        found.add(400)  # a cursor that is not one of ours
    if any(p["in"] == "path" for p in parameters):
        found.add(404)
    if any(p["in"] == "header" and p["name"].lower() == "authorization" for p in parameters):
        found |= {401, 429}  # a wrong token, and too many of them from one address
    return found


#: An extension key marking a document whose errors are declared (FastAPI caches it).
_DECLARED = "x-palaestra-errors-declared"


def _error_entry(status: int) -> dict[str, Any]:
    schema = {"$ref": "#/components/schemas/ErrorOut"}
    return {"description": _MEANING[status], "content": {"application/json": {"schema": schema}}}


def declare_errors(app: FastAPI) -> None:
    """Make the app's OpenAPI document declare, on every route, the errors its shape
    implies beside those it declared itself, all with the error body (which replaces
    FastAPI's own 422 body: the API never answers that one)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        document = build()
        if document.get(_DECLARED):
            return document  # built and declared already
        document[_DECLARED] = True
        schemas = document.setdefault("components", {}).setdefault("schemas", {})
        schemas["ErrorOut"] = ErrorOut.model_json_schema()
        for operations in document["paths"].values():
            for operation in operations.values():
                responses = operation["responses"]
                declared = {int(s) for s in responses if s.isdigit() and int(s) >= 400}
                for status in sorted(statuses_of(operation) | declared):
                    responses[str(status)] = _error_entry(status)
        for unused in ("HTTPValidationError", "ValidationError"):
            schemas.pop(unused, None)
        return document

    app.openapi = openapi  # type: ignore[method-assign]


def allowed_methods(app: FastAPI, path: str) -> list[str]:
    """The methods the API documents for ``path`` (for a 405's ``Allow``): every route on
    that path, where the router only knows the first one that matched."""
    for pattern, methods in _path_methods(app):
        if pattern.fullmatch(path):
            return methods
    return []


def _path_methods(app: FastAPI) -> list[tuple[re.Pattern[str], list[str]]]:
    found: list[tuple[re.Pattern[str], list[str]]] | None = getattr(app.state, "methods", None)
    if found is None:
        found = []
        for template, operations in app.openapi()["paths"].items():
            pattern = re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template))
            found.append((re.compile(pattern), sorted(m.upper() for m in operations)))
        app.state.methods = found
    return found
