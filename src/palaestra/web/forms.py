"""Forms that carry the owner's token: where they may come from, and the page that refuses them.

The token is posted with each form and never put in a cookie, so a forged
cross-site form has nothing to ride on; a POST whose ``Origin`` is another
site is refused as well.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlsplit

from fastapi import Form, Request
from starlette.responses import Response

from palaestra.errors import Forbidden, NotFound, PalaestraError, TooManyRequests, Unauthorized
from palaestra.http.deps import guarded
from palaestra.platform import Platform
from palaestra.web.reasons import Audience, audience_of
from palaestra.web.rendering import render

__all__ = ["FormText", "cross_site", "htmx", "owner_view", "refused", "same_origin"]

FormText = Annotated[str, Form(max_length=4000)]


def same_origin(request: Request) -> bool:
    """True unless the browser says the form came from another site.

    The arena's own origin is its configured public URL (a proxy in front may rewrite
    ``Host``); a page opened at the address the request itself names is the arena's too.
    """
    origin = request.headers.get("origin")
    if origin is None:
        return True  # not sent by every client; the token is required all the same
    sent = urlsplit(origin)
    platform: Platform = request.app.state.platform
    public = urlsplit(platform.settings.public_url)
    if (sent.scheme, sent.netloc) == (public.scheme, public.netloc):
        return True
    return sent.netloc == request.headers.get("host")


def cross_site(request: Request) -> Response:
    return render(
        request,
        "error.html",
        403,
        title="Refused",
        message="This form was sent from another site. Open the page here and submit it again.",
    )


def htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


def refused(request: Request, exc: PalaestraError) -> Response:
    """The page for a token that does not open the owner's view, or for an agent not there."""
    if isinstance(exc, TooManyRequests):
        page = render(request, "error.html", 429, title="Too many attempts", message=exc.message)
        page.headers["Retry-After"] = str(exc.retry_after)
        return page
    status = 404 if isinstance(exc, NotFound) else 401 if isinstance(exc, Unauthorized) else 403
    if not isinstance(exc, NotFound | Unauthorized | Forbidden):
        status = 400
    return render(request, "error.html", status, title="Refused", message=exc.message)


async def owner_view(
    request: Request, platform: Platform, agent_id: str, token: str
) -> Audience | Response:
    """The audience a posted ``token`` opens for the agent's pages, or the page refusing it."""
    if not same_origin(request):
        return cross_site(request)
    try:
        async with guarded(request):
            return await audience_of(platform, token, agent_id)
    except PalaestraError as exc:
        return refused(request, exc)
