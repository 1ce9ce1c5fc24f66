"""The pages' forms: where they may come from, who sends them, and the pages that refuse them.

A form acts for the browser's session (``session``) and then must carry the session's form
token (CSRF); or, from a browser not signed in, it carries the owner's or the admin's
token itself, which needs no form token: it holds no ambient credential a forged form
could ride on. A POST whose ``Origin`` is another site than the configured public URL
is refused either way.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, TypeVar
from urllib.parse import urlsplit

from fastapi import Depends, Form, Request
from pydantic import BaseModel, ConfigDict
from starlette.responses import Response

from palaestra.engine.accounts import Caller, authenticate
from palaestra.engine.web_sessions import form_token_matches
from palaestra.errors import Forbidden, NotFound, PalaestraError, TooManyRequests, Unauthorized
from palaestra.http.deps import PlatformDep, guarded, services_of
from palaestra.platform import Platform
from palaestra.web.reasons import Audience, audience_of
from palaestra.web.rendering import render
from palaestra.web.session import current, load_session, session_id

__all__ = [
    "FormFields",
    "FormSender",
    "FormText",
    "SenderDep",
    "cross_site",
    "htmx",
    "refused",
    "same_origin",
    "wrong_form_token",
]

#: The most characters a form's text field may hold.
_MAX_TEXT = 4000

FormText = Annotated[str, Form(max_length=_MAX_TEXT)]


class FormFields(BaseModel):
    """A form's own fields, read as ``Annotated[TheFields, Form()]``: text as
    :data:`FormText` is (at most 4000 characters, "" when not sent)."""

    model_config = ConfigDict(str_max_length=_MAX_TEXT, frozen=True)


Done = TypeVar("Done")


def same_origin(request: Request) -> bool:
    """True unless the browser says the form came from another site.

    The arena's own origin is its configured public URL (a proxy in front may rewrite
    ``Host``); a page opened at the address the request itself names is the arena's too.
    """
    origin = request.headers.get("origin")
    if origin is None:
        return True  # not sent by every client; a token or a form token is required all the same
    sent = urlsplit(origin)
    platform = services_of(request).platform
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


@dataclass(frozen=True)
class FormSender:
    """A form posted to the pages, with the credential it carries: the owner's or the admin's
    token (``token``), else the browser's session with its form token (``csrf_token``)."""

    request: Request
    platform: Platform
    token: str
    form_token: str

    @property
    def shown_token(self) -> str | None:
        """The token the next page posts again (a browser signed in needs none)."""
        return self.token.strip() or None

    async def caller(self) -> Caller | Response:
        """Who sends the form: the token posted with it (a wrong one raises, counted against
        the guessing throttle), else the browser's session with its form token; or the page
        refusing the form (from another site, with no session, or without the session's
        form token)."""
        request = self.request
        if not same_origin(request):
            return cross_site(request)
        if token := self.token.strip():
            async with guarded(request):
                return await authenticate(self.platform, token)
        await load_session(request)
        signed = current(request)
        if signed is None:
            return render(
                request,
                "error.html",
                401,
                title="Sign in first",
                message="Your session has ended. Sign in again, then send the form again."
                if request.state.session_ended
                else "Sign in with your owner token (or the admin's), then send the form again.",
                sign_in_link=True,
            )
        if not form_token_matches(session_id(request), self.form_token):
            return wrong_form_token(request, "send the form again")
        return signed.caller

    async def act(
        self,
        action: Callable[[Caller], Awaitable[Done]],
        *,
        invalid: Callable[[str], Awaitable[Response]] | None = None,
        refuse: tuple[type[PalaestraError], ...] = (TooManyRequests,),
    ) -> Done | Response:
        """What ``action`` gives for the form's sender (see :meth:`caller`), or the page
        refusing the form or the action; ``invalid`` shows the form again with the error's
        message instead, but for the errors in ``refuse`` (too many attempts, by default),
        which are always refused."""
        try:
            caller = await self.caller()
            if isinstance(caller, Response):
                return caller
            return await action(caller)
        except PalaestraError as exc:
            if invalid is None or isinstance(exc, refuse):
                return refused(self.request, exc)
            return await invalid(exc.message)

    async def owner_view(self, agent_id: str) -> Audience | Response:
        """The audience the sender is shown on the agent's pages, or the page refusing it."""
        return await self.act(lambda caller: audience_of(self.platform, caller, agent_id))


async def _form_sender(
    request: Request, platform: PlatformDep, token: FormText = "", csrf_token: FormText = ""
) -> FormSender:
    return FormSender(request, platform, token, csrf_token)


#: The sender of a form posted with ``token`` or ``csrf_token`` (see :class:`FormSender`).
SenderDep = Annotated[FormSender, Depends(_form_sender)]


def wrong_form_token(request: Request, again: str) -> Response:
    """The page refusing a form sent without the session's form token."""
    return render(
        request,
        "error.html",
        403,
        title="Form token missing or wrong",
        message="This form did not carry the form token of your session, so it may not "
        f"come from this arena's page. Reload the page and {again}.",
    )
