"""The inbox's ASGI app: the list, a call, decisions, and the live event stream.

| route | what |
| --- | --- |
| `GET /` | the waiting calls (filters `agent`, `tool`, `run`, `sort=newest|deadline`; `page`) |
| `GET /call?run=RUN&id=CALL` | one call whole: arguments, preview, policy, transcript, actions |
| `POST /call/decide` | approve (maybe edited, maybe granting) or deny one call |
| `POST /decide` | approve or deny a selection, call by call |
| `GET /events` | server-sent events: the state of the waiting calls, on each change |
| `GET /rows?key=...` | rows of the list for calls that just arrived (the page's script asks) |
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
from argparse import ArgumentTypeError
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from temporalio.client import Client

from signoff.approval.derived import ServedRuns
from signoff.approval.requests import GrantSpec
from signoff.cli.talk import CommandError
from signoff.cli.token import parse_duration
from signoff.inbox.calls import Decided, Filters, WaitingCall, call_key, call_view, list_page
from signoff.inbox.decide import Action, Decisions, Result, Target
from signoff.inbox.guard import CSRF_FIELD, CSRF_HEADER, Guard, SecurityHeaders
from signoff.inbox.live import Watcher, event_stream
from signoff.inbox.signer import InboxSigner
from signoff.inbox.view import HERE, environment
from signoff.inbox.who import Viewer, WhoIsAsking
from signoff.runtime.codec_server import read_body

MAX_FORM_BYTES = 4 * 1024 * 1024
"""Edited arguments may be large; a form past this is refused unread."""
MAX_SELECTION = 500
_DIGEST = re.compile(r"[0-9a-f]{64}")


@dataclass
class Inbox:
    """What the pages need: Temporal, who is asking, how to decide, what to show."""

    client: Client
    who: WhoIsAsking
    decisions: Decisions
    watcher: Watcher
    guard: Guard
    namespace: str
    ui_root: str | None = None


def inbox_app(
    client: Client,
    who: WhoIsAsking,
    signer: InboxSigner | None = None,
    *,
    namespace: str = "default",
    public_url: str | None = None,
    ui_root: str | None = None,
    poll_seconds: float = 1.0,
    served: ServedRuns | None = None,
) -> Starlette:
    """The inbox for the runs of `client`'s namespace.

    Args:
        who: how to tell who is asking (trusted proxy headers, or the local user).
        signer: the inbox's signing key: each decision then carries a bound token (None:
            decisions name the viewer as `approver`, and verified policies cannot be met).
        public_url: where people reach the inbox (`SIGNOFF_INBOX_URL`), for origin checks.
        ui_root: the Temporal Web UI, for links to runs.
        poll_seconds: how often the waiting calls are listed while a page listens.
        served: the runs the inbox signs for (`AgentRun`s on these task queues; default the
            `signoff` queue; `SIGNOFF_SERVED_TASK_QUEUES`).
    """
    inbox = Inbox(
        client,
        who,
        Decisions(client, signer, served),
        Watcher(client, poll_seconds),
        Guard(public_url),
        namespace,
        ui_root,
    )
    pages = Pages(inbox)
    routes = [
        Route("/", pages.listing, methods=["GET"]),
        Route("/rows", pages.rows, methods=["GET"]),
        Route("/call", pages.call, methods=["GET"]),
        Route("/call/decide", pages.decide_one, methods=["POST"]),
        Route("/decide", pages.decide_selection, methods=["POST"]),
        Route("/events", pages.events, methods=["GET"]),
        Route("/healthz", lambda request: PlainTextResponse("ok\n"), methods=["GET"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(routes=routes, middleware=[Middleware(SecurityHeaders)])
    app.state.inbox = inbox
    return app


class Pages:
    """The handlers; each finds out who is asking first, and refuses strangers."""

    def __init__(self, inbox: Inbox) -> None:
        self.inbox = inbox
        self.env = environment()

    def viewer(self, request: Request) -> Viewer | None:
        who = self.inbox.who
        headers = {name: request.headers.getlist(name) for name in (who.user_header, who.groups_header)}
        return who.viewer(request.client.host if request.client else None, headers)

    def page(
        self, request: Request, template: str, viewer: Viewer | None, status: int = 200, **context: Any
    ) -> Response:
        browser, new = self.inbox.guard.browser(request)
        token = self.inbox.guard.token(browser, viewer.name) if viewer else ""
        html = self.env.get_template(template).render(
            viewer=viewer,
            csrf=token,
            csrf_field=CSRF_FIELD,
            namespace=self.inbox.namespace,
            signing=self.inbox.decisions.signer is not None,
            ui_root=self.inbox.ui_root,
            **context,
        )
        response = HTMLResponse(html, status_code=status)
        if new:
            self.inbox.guard.remember(response, browser)
        return response

    def stranger(self, request: Request) -> Response:
        return self.page(request, "who.html", None, 401, why=self.inbox.who.describe())

    async def listing(self, request: Request) -> Response:
        viewer = self.viewer(request)
        if viewer is None:
            return self.stranger(request)
        filters = Filters.of(**{k: request.query_params.get(k, "") for k in ("agent", "tool", "run", "sort")})
        token = _page_token(request.query_params.get("page", ""))
        listed_at = time.time()
        try:
            page = await list_page(self.inbox.client, filters, token)
        except CommandError as exc:
            return self.page(
                request,
                "list.html",
                viewer,
                503,
                rows=[],
                filters=filters,
                problem=str(exc),
                next_page=None,
                silent=[],
                decided=[],
                listed_at=listed_at,
            )
        next_page = None
        if page.next_token:
            next_page = "?" + urlencode({**filters.params(), "page": base64.urlsafe_b64encode(page.next_token)})
        watcher = self.inbox.watcher
        decided = [(key, d) for key, d in reversed(watcher.decided.items())][:20]
        return self.page(
            request,
            "list.html",
            viewer,
            rows=self._rows(page.calls, viewer),
            filters=filters,
            problem=None,
            next_page=next_page,
            silent=page.silent,
            decided=decided,
            listed_at=listed_at,
        )

    def _rows(self, calls: list[WaitingCall], viewer: Viewer) -> list[dict[str, Any]]:
        decisions = self.inbox.decisions
        return [
            {
                "call": c,
                "refusal": decisions.refusal(c, viewer),
                "deny_refusal": decisions.refusal(c, viewer, approving=False),
                "target": json.dumps([c.workflow_id, c.request.call_id, c.request.arguments_digest]),
            }
            for c in calls
        ]

    async def rows(self, request: Request) -> Response:
        """The list's rows of the calls named by `key` (the ones that arrived), under the filters."""
        viewer = self.viewer(request)
        if viewer is None or (problem := self.inbox.guard.read_problem(request)) is not None:
            return PlainTextResponse("not for you" if viewer is None else problem, status_code=403)
        keys = set(request.query_params.getlist("key")[:200])
        filters = Filters.of(**{k: request.query_params.get(k, "") for k in ("agent", "tool", "run", "sort")})
        waiting = self.inbox.watcher.waiting or {}
        calls = filters.order([waiting[k] for k in keys if k in waiting and filters.admits(waiting[k])])
        return self.page(request, "rows.html", viewer, rows=self._rows(calls, viewer))

    async def call(self, request: Request) -> Response:
        viewer = self.viewer(request)
        if viewer is None:
            return self.stranger(request)
        run, call_id = request.query_params.get("run", ""), request.query_params.get("id", "")
        if not run or not call_id:
            return PlainTextResponse("name the call: /call?run=RUN&id=CALL", status_code=400)
        listed_at = time.time()
        view = await call_view(self.inbox.client, run, call_id)
        decisions = self.inbox.decisions
        context: dict[str, Any] = {
            "view": view,
            "refusal": None,
            "deny_refusal": None,
            "may_edit": False,
            "key": "",
            "listed_at": listed_at,
        }
        if view.call is not None:
            context.update(
                refusal=decisions.refusal(view.call, viewer),
                key=view.call.key,
                deny_refusal=decisions.refusal(view.call, viewer, approving=False),
                may_edit=decisions.may_edit(view.call.request),
            )
        return self.page(request, "call.html", viewer, 200 if view.problem is None else 503, **context)

    async def _form(self, request: Request) -> tuple[Viewer, dict[str, list[str]]] | Response:
        viewer = self.viewer(request)
        if viewer is None:
            return PlainTextResponse(
                "the inbox does not know who you are: " + self.inbox.who.describe(), status_code=401
            )
        body = await read_body(request, MAX_FORM_BYTES)
        if body is None:
            return PlainTextResponse(f"at most {MAX_FORM_BYTES} bytes in one form", status_code=413)
        form = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True, max_num_fields=MAX_SELECTION + 20)
        given = (form.get(CSRF_FIELD) or [request.headers.get(CSRF_HEADER, "")])[0]
        if (problem := self.inbox.guard.action_problem(request, viewer.name, given)) is not None:
            return PlainTextResponse(problem, status_code=403)
        return viewer, form

    async def decide_one(self, request: Request) -> Response:
        got = await self._form(request)
        if isinstance(got, Response):
            return got
        viewer, form = got
        target = _target([_one(form, "run"), _one(form, "id"), _one(form, "digest")])
        try:
            action = _action(form, single=True)
        except ValueError as exc:
            return self._results(request, viewer, [Result(target, "refused", str(exc))] if target else [], 400)
        if target is None:
            return PlainTextResponse("name the call: run, id and digest", status_code=400)
        return self._results(request, viewer, [await self.inbox.decisions.decide(viewer, target, action)])

    async def decide_selection(self, request: Request) -> Response:
        got = await self._form(request)
        if isinstance(got, Response):
            return got
        viewer, form = got
        targets = [t for t in (_target(_json_list(v)) for v in form.get("call", [])[:MAX_SELECTION]) if t]
        if not targets:
            return PlainTextResponse("select at least one call", status_code=400)
        try:
            action = _action(form, single=False)
        except ValueError as exc:
            return self._results(request, viewer, [Result(t, "refused", str(exc)) for t in targets], 400)
        return self._results(request, viewer, await self.inbox.decisions.decide_all(viewer, targets, action))

    def _results(self, request: Request, viewer: Viewer, results: list[Result], status: int = 200) -> Response:
        verified = " (verified)" if self.inbox.decisions.signer is not None else ""
        if any(result.conflict for result in results):  # the run's request is not what it shows: 409
            status = 409
        for result in results:  # known here before the next scan: other pages show it at once
            if result.outcome in ("approved", "denied"):
                t = result.target
                decided = Decided(f"{result.outcome} by {viewer.name}{verified}", result.outcome == "approved")
                self.inbox.watcher.note(call_key(t.workflow_id, t.call_id, t.digest), decided)
        return self.page(request, "results.html", viewer, status, results=results)

    async def events(self, request: Request) -> Response:
        viewer = self.viewer(request)
        if viewer is None or (problem := self.inbox.guard.read_problem(request)) is not None:
            return PlainTextResponse("not for you" if viewer is None else problem, status_code=403)
        return StreamingResponse(
            event_stream(self.inbox.watcher), media_type="text/event-stream", headers={"x-accel-buffering": "no"}
        )


def _one(form: dict[str, list[str]], name: str) -> str:
    return (form.get(name) or [""])[0]


def _json_list(text: str) -> list[Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return []
    return value if isinstance(value, list) else []


def _target(parts: list[Any]) -> Target | None:
    """A call as the page named it: [run, call id, digest], each a non-empty string."""
    if len(parts) != 3 or not all(isinstance(p, str) and p for p in parts) or not _DIGEST.fullmatch(parts[2]):
        return None
    return Target(parts[0], parts[1], parts[2])


def _page_token(text: str) -> bytes | None:
    try:
        return base64.urlsafe_b64decode(text.encode()) if text else None
    except (binascii.Error, ValueError):
        return None


def _action(form: dict[str, list[str]], single: bool) -> Action:
    """What the form asks for; ValueError says what is wrong with it."""
    verb = _one(form, "action")
    if verb not in ("approve", "deny"):
        raise ValueError("choose approve or deny")
    reason = _one(form, "reason").strip() or None
    if verb == "deny":
        return Action(approved=False, reason=reason)
    arguments = None
    if single and _one(form, "edit") == "1":
        try:
            arguments = json.loads(_one(form, "arguments"))
        except ValueError as exc:
            raise ValueError(f"the edited arguments are not valid JSON: {exc}") from None
        if not isinstance(arguments, dict):
            raise ValueError('the edited arguments must be a JSON object, e.g. {"command": "ls"}')
    return Action(approved=True, reason=reason, arguments=arguments, grant=_grant(form) if single else None)


def _grant(form: dict[str, list[str]]) -> GrantSpec | None:
    match = _one(form, "grant")
    if not match:
        return None
    ttl, uses = _one(form, "grant_ttl").strip(), _one(form, "grant_uses").strip()
    try:
        seconds = parse_duration(ttl).total_seconds() if ttl else None
    except ArgumentTypeError as exc:
        raise ValueError(f"the grant's lifetime: {exc}") from None
    if uses and not uses.isdigit():
        raise ValueError(f"the grant's uses {uses!r} is not a whole number")
    try:
        return GrantSpec(match=match, ttl_seconds=seconds, max_uses=int(uses) if uses else None)
    except ValueError as exc:
        raise ValueError(f"the grant cannot be made: {exc}") from None
