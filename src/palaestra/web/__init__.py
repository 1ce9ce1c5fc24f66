"""The web UI: server-rendered pages (Jinja2), a little htmx, one stylesheet, no build step.

:func:`mount` adds the pages, the static files and HTML error pages to the
API's application; the API's own routes and JSON errors are unchanged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from palaestra.web import (
    challenges,
    edits,
    fighters,
    history,
    owner_work,
    pages,
    register,
    signin,
    tokens,
)
from palaestra.web.docs import mount_docs
from palaestra.web.rendering import STATIC_DIR, render, wants_html
from palaestra.web.session import load_session

__all__ = ["mount"]


def mount(app: FastAPI, guide_dir: Path | None = None) -> None:
    """Serve the pages beside the API. Call it after the API's error handlers are installed.

    ``guide_dir``, a built documentation site, is served at ``/guide`` when it has been built.
    """
    app.state.web_jobs = set()
    # Every page knows the browser's session: "signed in as" in its header, and its forms.
    signed = [Depends(load_session)]
    # owner_work and fighters first: /runs/new and /fighters/new are not ids.
    routers = (owner_work, fighters, pages, history, register, edits, challenges, tokens, signin)
    for module in routers:
        app.include_router(module.router, dependencies=signed)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    mount_docs(app)
    app.state.guide = guide_dir is not None and (guide_dir / "index.html").is_file()
    if app.state.guide:
        app.mount("/guide", StaticFiles(directory=guide_dir, html=True), name="guide")
    json_errors: Any = app.exception_handlers.get(StarletteHTTPException)

    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if json_errors is None or wants_html(request):
            await load_session(request)
            title = "Not found" if exc.status_code == 404 else f"Error {exc.status_code}"
            return render(request, "error.html", exc.status_code, title=title, message=exc.detail)
        response: Response = await json_errors(request, exc)
        return response

    app.add_exception_handler(StarletteHTTPException, http_error)  # type: ignore[arg-type]
