"""Templates, their filters, and HTML error pages for the browser (the API keeps JSON errors)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from fastapi import Request
from fastapi.templating import Jinja2Templates
from jinja2 import pass_context
from jinja2.runtime import Context
from starlette.responses import HTMLResponse, Response

from palaestra import __version__
from palaestra.engine.agents.wizard import WIZARD_CHECKS, WizardProgress
from palaestra.http.deps import services_of
from palaestra.web.charts import duration, interval_axis, interval_bar
from palaestra.web.grid_chart import LEGEND as HEAD_TO_HEAD_LEGEND
from palaestra.web.grid_chart import head_to_head_grid
from palaestra.web.pictures import hourly_chart, rating_chart, score_bars

__all__ = [
    "CHECK_ABOUT",
    "STATIC_DIR",
    "TEMPLATE_DIR",
    "render",
    "render_part",
    "templates",
    "wants_html",
    "wizard_rows",
]

HERE: Final = Path(__file__).parent
TEMPLATE_DIR: Final = HERE / "templates"
STATIC_DIR: Final = HERE / "static"

templates = Jinja2Templates(directory=TEMPLATE_DIR)
templates.env.globals["version"] = __version__
#: Entries of the navigation bar: (path, label).
templates.env.globals["nav"] = (
    ("/", "Overview"),
    ("/agents", "Agents"),
    ("/runs", "Runs"),
    ("/matches", "Matches"),
    ("/leaderboard", "Leaderboard"),
    ("/register", "Register"),
)


@pass_context
def _ago(context: Context, at: float | None) -> str:
    if at is None:
        return "never"
    seconds = float(context["now"]) - at
    if seconds <= -5:
        return "in " + duration(-seconds)
    if seconds < 5:
        return "just now"
    return duration(seconds) + " ago"


def _clock(at: float | None) -> str:
    if at is None:
        return ""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value / 1000:.1f} s" if value >= 1000 else f"{value:.0f} ms"


def _signed(value: float | None, digits: int = 2) -> str:
    """A number with its sign (a true minus), as differences and log-odds read best."""
    if value is None:
        return "–"
    return f"{value:+.{digits}f}".replace("-", "\u2212")


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.0f}%"


#: One line on what each wizard check asks of the agent.
CHECK_ABOUT: Final = {
    "handshake": "answers the handshake with a JSON object",
    "reachable": "the request reaches the endpoint",
    "accepts-post": "answers the POST with a 2xx",
    "returns-json": "the body is a JSON object",
    "required-fields": "the output has every field the role requires",
    "timing": "answers within the role's deadline",
    "tampered-signature": "advisory: refuses a dispatch with a forged signature with a 4xx",
    "size": "advisory: a reply within the production cap of 262,144 bytes",
}


def wizard_rows(progress: WizardProgress) -> list[dict[str, Any]]:
    """Every planned check with its state: pass, warn (an advisory check that did not pass),
    fail, run (its step is under way) or wait."""
    done = {check.name: check for check in progress.checks}
    waiting = progress.waiting
    current = waiting[0].split(":")[0] if waiting and progress.running else None
    rows = []
    for name in WIZARD_CHECKS:
        check = done.get(name)
        if check is not None:
            state = str(check.verdict)
        else:
            state = "run" if name.split(":")[0] == current else "wait"
        about = CHECK_ABOUT.get(name.rsplit(":", 1)[-1], "")
        if name.startswith("signed-"):
            about += ", signed with the key"
        rows.append({"name": name, "state": state, "check": check, "about": about})
    for check in progress.checks:  # a step's own advisory findings (a simulation's size)
        if check.name not in WIZARD_CHECKS:
            about = CHECK_ABOUT.get(check.name.rsplit(":", 1)[-1], "")
            rows.append(
                {"name": check.name, "state": str(check.verdict), "check": check, "about": about}
            )
    return rows


templates.env.globals["wizard_rows"] = wizard_rows
templates.env.globals["interval_bar"] = interval_bar
templates.env.globals["head_to_head_grid"] = head_to_head_grid
templates.env.globals["head_to_head_legend"] = HEAD_TO_HEAD_LEGEND
templates.env.globals["interval_axis"] = interval_axis
templates.env.globals["score_bars"] = score_bars
templates.env.globals["hourly_chart"] = hourly_chart
templates.env.globals["rating_chart"] = rating_chart
templates.env.filters["signed"] = _signed
templates.env.filters["pct"] = _pct
templates.env.filters["ago"] = _ago
templates.env.filters["clock"] = _clock
templates.env.filters["ms"] = _ms
templates.env.filters["duration"] = duration


def render(
    request: Request,
    name: str,
    status_code: int = 200,
    *,
    private: bool = False,
    **context: Any,
) -> Response:
    """Render a template with ``now`` (the platform's clock) and the current path.

    ``private`` pages (a key shown once, a form holding a token) are never stored
    by the browser or a proxy, nor is any page shown to a signed-in browser (it names
    the owner, and its forms carry the session's form token).
    """
    context = _page_context(request, context)
    response = templates.TemplateResponse(request, name, context, status_code=status_code)
    if private or context["signed_in"] is not None:
        response.headers["Cache-Control"] = "no-store"
    return response


def render_part(request: Request, name: str, block: str, **context: Any) -> Response:
    """Only the block ``block`` of the template ``name`` (a page's live part), rendered
    with the page's context. The block imports the macros it calls itself."""
    context = _page_context(request, context)
    template = templates.env.get_template(name)
    html = "".join(template.blocks[block](template.new_context(context)))
    response = HTMLResponse(html)
    if context["signed_in"] is not None:
        response.headers["Cache-Control"] = "no-store"
    return response


def _page_context(request: Request, context: dict[str, Any]) -> dict[str, Any]:
    platform = services_of(request).platform
    context.setdefault("request", request)
    context.setdefault("signed_in", getattr(request.state, "signed_in", None))
    context.setdefault("now", platform.clock.now())
    context.setdefault("path", request.url.path)
    context.setdefault("guide", getattr(request.app.state, "guide", False))
    return context


_NOT_PAGES: Final = (
    "/api/",
    "/static/",
    "/healthz",
    "/metrics",
    "/openapi.json",
    "/docs",
    "/redoc",
)


def wants_html(request: Request) -> bool:
    """A browser asking for a page (not the API, and not a client that wants JSON)."""
    path = request.url.path
    if path.startswith(_NOT_PAGES):
        return False
    return "text/html" in request.headers.get("accept", "")
