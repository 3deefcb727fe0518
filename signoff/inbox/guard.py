"""What keeps other sites out: CSRF tokens on every action, same-origin reads, strict headers.

- **Actions** (every POST) carry a token tied to this browser and this person: the HMAC,
  under a key the inbox makes at start, of a random per-browser cookie (`HttpOnly`,
  `SameSite=Lax`: sent when a link from chat opens a call's page, so that page keeps the
  browser's id, but never with another site's POST) and the viewer's name. Another site can
  neither read the token nor send the cookie with a form; a token taken from one person's
  page is worthless for another person.
  A POST whose `Origin` names a host the inbox does not answer for, or that the browser marks
  as cross-site (`Sec-Fetch-Site`), is refused as well.
- **Hosts**: a request whose `Host` is not the inbox's own (its listening address, the host of
  `SIGNOFF_INBOX_URL`, `SIGNOFF_INBOX_ALLOWED_HOSTS`) never reaches a route: 421
  (`signoff.runtime.hosts`). `Origin` is checked against that same list, never against the
  request's `Host`, which a DNS-rebinding page chose.
- **Reads** that are not pages (the event stream, row fragments) are refused when the
  browser says another site asks, and carry no CORS headers, so no other origin can read them.
- **Every response** forbids framing (clickjacking), inline and foreign scripts (CSP
  `script-src 'self'`: the page's only script is the inbox's own file), sniffing, caching
  and referrers to other sites (a call's URL names a run).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from signoff.runtime.hosts import AllowedHosts

COOKIE = "signoff_inbox"
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"
SECURITY_HEADERS = {
    "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
}


class RequestGuard:
    """CSRF tokens and origin checks.

    Args:
        hosts: the hosts the inbox answers for: a browser's `Origin` must name one of them.
        public_url: the inbox's address as people reach it (`SIGNOFF_INBOX_URL`): with
            `https`, the browser's cookie is `Secure`.
    """

    def __init__(self, hosts: AllowedHosts, public_url: str | None = None, key: bytes | None = None) -> None:
        self._key = key or secrets.token_bytes(32)
        self.hosts = hosts
        self.secure = urlsplit(public_url or "").scheme == "https"

    def browser(self, request: Request) -> tuple[str, bool]:
        """This browser's id (its cookie), and whether it is new (to be set on the response)."""
        given = request.cookies.get(COOKIE, "")
        if 20 <= len(given) <= 64 and given.replace("-", "").replace("_", "").isalnum():
            return given, False
        return secrets.token_urlsafe(24), True

    def remember(self, response: Response, browser: str) -> None:
        response.set_cookie(COOKIE, browser, httponly=True, samesite="lax", secure=self.secure, path="/")

    def token(self, browser: str, viewer: str) -> str:
        return hmac.new(self._key, f"{browser}\0{viewer}".encode(), hashlib.sha256).hexdigest()

    def action_problem(self, request: Request, viewer: str, given: str | None) -> str | None:
        """Why a POST must be refused (another site sent it, or no valid token), or None."""
        if (problem := self.read_problem(request)) is not None:
            return problem
        browser = request.cookies.get(COOKIE)
        if not browser or not given or not hmac.compare_digest(given, self.token(browser, viewer)):
            return "this form is out of date or was not sent from the inbox's own page (CSRF check): reload the page"
        return None

    def read_problem(self, request: Request) -> str | None:
        """Why a request from the browser is refused as another site's, or None."""
        if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
            return "requests from other sites are refused"
        origin = request.headers.get("origin")
        if origin is not None and not self.hosts.admits_origin(origin):
            return "requests from other sites are refused"
        return None


class SecurityHeaders:
    """ASGI middleware: the headers of `SECURITY_HEADERS` on every response, and no caching."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.decode().lower() not in SECURITY_HEADERS]
                headers += [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
                if not scope["path"].startswith("/static/"):
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, with_headers)
