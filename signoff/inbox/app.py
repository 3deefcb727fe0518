"""The inbox's ASGI app: the list, a call, decisions, and the live event stream.

| route | what |
| --- | --- |
| `GET /` | the waiting calls (filters `agent`, `tool`, `run`, `sort=newest|deadline`; `page`) |
| `GET /call?run=RUN&id=CALL` | one call whole: arguments, preview, policy, transcript, actions |
| `POST /call/decide` | approve (maybe edited: a diff to confirm first, maybe granting) or deny one call |
| `POST /decide` | approve or deny a selection, call by call |
| `GET /events` | server-sent events: the state of the waiting calls, on each change |
| `GET /call/text?run=RUN&id=CALL` | server-sent events: the model's text in the call's run, as it comes |
| `GET /rows?key=...` | rows of the list for calls that just arrived (the page's script asks) |
| `GET /favicon.ico`, `GET /static/...`, `GET /healthz` | the inbox's own files; `ok` |
| `POST /ag-ui` | AG-UI 1.0: a `RunAgentInput` drives its thread's session (`signoff.inbox.agui`) |
| `POST /slack/interactions` | the Slack app's clicks and modals (`signoff.inbox.slack`), when it is set up |

Every request first passes the `Host` check (`signoff.runtime.hosts`: 421 for a name the inbox
does not answer for; `/healthz` answers any). `scope` (`signoff.inbox.scope`) limits what each
viewer sees; `opened` (`signoff.inbox.seen`) what they may decide in bulk.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from temporalio.client import Client

from signoff.approval.digest import arguments_digest
from signoff.approval.names import same_name
from signoff.approval.requests import GrantMatch, GrantSpec
from signoff.config.environment import read_duration
from signoff.contract import DEFAULT_TASK_QUEUE
from signoff.errors import CommandError
from signoff.inbox.calls import CallView, Decided, Filters, WaitingCall, call_key, call_view, list_page, run_calls
from signoff.inbox.decide import Choice, InboxDecisions, Result, Screen, SeenCall
from signoff.inbox.guard import CSRF_FIELD, CSRF_HEADER, RequestGuard, SecurityHeaders
from signoff.inbox.live import MAX_STREAMS_PER_VIEWER, HeldStream, StreamSlots, Visible, Watcher, event_stream
from signoff.inbox.live_text import RunTexts, text_stream
from signoff.inbox.scope import Scope, ScopeName
from signoff.inbox.seen import Opened
from signoff.inbox.signer import InboxSigner
from signoff.inbox.slack import SlackInteractions, SlackSettings
from signoff.inbox.view import HERE, arguments_diff, environment
from signoff.inbox.who import Viewer, WhoIsAsking
from signoff.operator.edits import schema_problem, tool_schema
from signoff.runtime.codec_server import read_body
from signoff.runtime.hosts import AllowedHosts, HostCheck
from signoff.signing.derived import ServedRuns
from signoff.views.slack import INTERACTIONS_PATH

MAX_FORM_BYTES = 4 * 1024 * 1024
"""Edited arguments may be large; a form past this is refused unread."""
MAX_SELECTION = 500
_DIGEST = re.compile(r"[0-9a-f]{64}")


@dataclass
class Inbox:
    """What the pages need: Temporal, who is asking, how to decide, what to show."""

    client: Client
    who: WhoIsAsking
    decisions: InboxDecisions
    watcher: Watcher
    guard: RequestGuard
    namespace: str
    ui_root: str | None = None
    scope: Scope = field(default_factory=Scope)
    opened: Opened = field(default_factory=Opened)
    streams: StreamSlots = field(default_factory=StreamSlots)
    texts: RunTexts | None = None
    """One reader of each shown run's stream (`live_text`), made with the app."""


def inbox_app(
    client: Client,
    who: WhoIsAsking,
    signer: InboxSigner | None = None,
    *,
    hosts: AllowedHosts,
    namespace: str = "default",
    public_url: str | None = None,
    ui_root: str | None = None,
    poll_seconds: float = 1.0,
    served: ServedRuns | None = None,
    scope: ScopeName = "all",
    streams_per_viewer: int = MAX_STREAMS_PER_VIEWER,
    slack: SlackSettings | None = None,
    task_queue: str | None = None,
) -> Starlette:
    """The inbox for the runs of `client`'s namespace.

    Args:
        who: how to tell who is asking (trusted proxy headers, or the local user).
        signer: the inbox's signing key: each decision then carries a bound token (None:
            decisions name the viewer as `approver`, and verified policies cannot be met).
        hosts: the `Host` values it answers for (`AllowedHosts.of` its socket, the public
            URL and `SIGNOFF_INBOX_ALLOWED_HOSTS`); a browser's `Origin` must name one too.
        public_url: where people reach the inbox (`SIGNOFF_INBOX_URL`): `https` makes its
            cookie `Secure`.
        ui_root: the Temporal Web UI, for links to runs.
        poll_seconds: how often the waiting calls are listed while a page listens.
        served: the runs the inbox signs for (`AgentRun`s on these task queues; default the
            `signoff` queue; `SIGNOFF_SERVED_TASK_QUEUES`).
        scope: `all` (every waiting call) or `mine` (the calls each viewer may decide).
        streams_per_viewer: event streams one viewer may hold open at once.
        slack: the Slack app (`SIGNOFF_SLACK_*`): serves `POST /slack/interactions`; None: no Slack.
        task_queue: where the AG-UI endpoint starts a thread's session (default the first of
            `served`'s queues).
    """
    inbox = Inbox(
        client,
        who,
        InboxDecisions(client, signer, served),
        Watcher(client, poll_seconds),
        RequestGuard(hosts, public_url),
        namespace,
        ui_root,
        Scope(scope, signer is not None),
        streams=StreamSlots(streams_per_viewer),
        texts=RunTexts(client),
    )
    pages = Pages(inbox)
    routes = [
        Route("/", pages.listing, methods=["GET"]),
        Route("/rows", pages.rows, methods=["GET"]),
        Route("/call", pages.call, methods=["GET"]),
        Route("/call/decide", pages.decide_one, methods=["POST"]),
        Route("/decide", pages.decide_selection, methods=["POST"]),
        Route("/events", pages.events, methods=["GET"]),
        Route("/call/text", pages.call_text, methods=["GET"]),
        Route("/healthz", lambda request: PlainTextResponse("ok\n"), methods=["GET"]),
        Route("/favicon.ico", lambda request: FileResponse(HERE / "static" / "favicon.ico"), methods=["GET"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    queues = [q for q in (served or ServedRuns()).task_queues if q != "*"]
    routes.append(
        Route("/ag-ui", _ag_ui(inbox, pages, task_queue or (queues or [DEFAULT_TASK_QUEUE])[0]), methods=["POST"])
    )
    if slack is not None:
        interactions = SlackInteractions(slack, inbox.decisions, public_url)
        routes.append(Route(INTERACTIONS_PATH, interactions.endpoint, methods=["POST"]))
    middleware = [Middleware(SecurityHeaders), Middleware(HostCheck, hosts=hosts, open_paths=["/healthz"])]
    app = Starlette(routes=routes, middleware=middleware)
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

    def visible(self, viewer: Viewer) -> Visible | None:
        """Which calls `viewer` sees (None: all of them)."""
        scope = self.inbox.scope
        return None if scope.name == "all" else functools.partial(_shown_to, scope, viewer)

    def screen(self, viewer: Viewer, bulk: bool) -> Screen:
        """The inbox's own refusals of a decision: a call the viewer cannot see, and, in bulk,
        a call its list row cuts that they have not opened."""
        scope, opened = self.inbox.scope, self.inbox.opened

        def check(call: WaitingCall) -> str | None:
            return scope.refusal(call, viewer) or (opened.refusal(viewer.name, call) if bulk else None)

        return check

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
        context: dict[str, Any] = {"filters": filters, "listed_at": listed_at, "next_page": None}
        try:
            page = await list_page(self.inbox.client, filters, token)
        except CommandError as exc:
            return self.page(
                request, "list.html", viewer, 503, rows=[], problem=str(exc), silent=[], decided=[], **context
            )
        if page.next_token:
            context["next_page"] = "?" + urlencode(
                {**filters.params(), "page": base64.urlsafe_b64encode(page.next_token)}
            )
        visible = self.visible(viewer)
        calls = [c for c in page.calls if visible is None or visible(c)]
        decided = list(reversed(self.inbox.watcher.recently_decided(visible)))[:20]
        silent = page.silent if visible is None else []  # whose runs they are, nobody can tell
        return self.page(
            request,
            "list.html",
            viewer,
            rows=self._rows(calls, viewer),
            problem=None,
            silent=silent,
            decided=decided,
            **context,
        )

    def _rows(self, calls: list[WaitingCall], viewer: Viewer) -> list[dict[str, Any]]:
        decisions = self.inbox.decisions
        return [
            {
                "call": c,
                "refusal": decisions.refusal(c, viewer),
                "deny_refusal": decisions.refusal(c, viewer, approving=False),
                "cut": self.inbox.opened.unseen(viewer.name, c),
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
        waiting, visible = self.inbox.watcher.waiting or {}, self.visible(viewer)
        calls = [waiting[k] for k in keys if k in waiting and filters.admits(waiting[k])]
        calls = filters.order([c for c in calls if visible is None or visible(c)])
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
        if not self._may_see(view, viewer):
            view = CallView(run, call_id, None, problem=f"no call {call_id!r} waits for you in run {run!r}")
            return self.page(request, "call.html", viewer, 404, **_call_context(view, listed_at))
        decisions = self.inbox.decisions
        context = _call_context(view, listed_at)
        if view.call is not None:
            self.inbox.opened.note(viewer.name, view.call)  # served whole: from now on, seen
            context.update(
                refusal=decisions.refusal(view.call, viewer),
                key=view.call.key,
                deny_refusal=decisions.refusal(view.call, viewer, approving=False),
                may_edit=decisions.may_edit(view.call.request),
                question_fields=question_fields(view.call.request.input_schema),
            )
        return self.page(request, "call.html", viewer, 200 if view.problem is None else 503, **context)

    def _may_see(self, view: CallView, viewer: Viewer) -> bool:
        """Whether the call page may show `view` to `viewer` (under `mine`: a call they may
        decide, or one they could see or decided, once it no longer waits)."""
        visible = self.visible(viewer)
        if visible is None or view.problem is not None:
            return True
        if view.call is not None:
            return visible(view.call)
        known = [
            c
            for c in self.inbox.watcher.known.values()
            if (c.workflow_id, c.request.call_id) == (view.workflow_id, view.call_id)
        ]
        decided_by_them = view.decided is not None and same_name(view.decided.approver, viewer.name)
        return decided_by_them or any(visible(c) for c in known)

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
        if action.arguments is not None:
            if _one(form, "confirmed") != "1":
                return await self._confirm_edit(request, viewer, target, action)
            if _one(form, "edited_digest") != arguments_digest(action.arguments):
                problem = "the edited arguments are not the ones the confirmation showed: nothing was sent; edit again"
                return self._results(request, viewer, [Result(target, "refused", problem)], 400)
        screen = self.screen(viewer, bulk=False)
        return self._results(request, viewer, [await self.inbox.decisions.decide(viewer, target, action, screen)])

    async def _confirm_edit(self, request: Request, viewer: Viewer, target: SeenCall, action: Choice) -> Response:
        """Edited arguments, before anything is sent: the diff against the model's, to confirm
        (or the reason they cannot be sent: the call changed, the schema, the policy)."""
        assert action.arguments is not None
        try:
            calls = await run_calls(self.inbox.client, target.workflow_id)
        except CommandError as exc:
            return self._results(request, viewer, [Result(target, "refused", str(exc))])
        call = next(
            (c for c in calls if (c.request.call_id, c.request.arguments_digest) == (target.call_id, target.digest)),
            None,
        )
        if call is None or (problem := self.screen(viewer, bulk=False)(call)) is not None:
            problem = f"call {target.call_id!r} does not wait as you saw it: nothing was sent; open it again"
            return self._results(request, viewer, [Result(target, "refused", problem)])
        if call.request.arguments == action.arguments:  # nothing edited: the approval of what was shown
            decided = await self.inbox.decisions.decide(viewer, target, action, self.screen(viewer, bulk=False))
            return self._results(request, viewer, [decided])
        decisions = self.inbox.decisions
        schema = await tool_schema(self.inbox.client, target.workflow_id, call.request.name)
        problem = decisions.refusal(call, viewer) or schema_problem(schema, action.arguments)
        if problem is None and not decisions.may_edit(call.request):
            problem = f"call {target.call_id!r}: its arguments cannot be edited (a quorum decides it)"
        if problem is not None:
            return self._results(request, viewer, [Result(target, "refused", problem, call.request.name)])
        return self.page(
            request,
            "confirm.html",
            viewer,
            call=call,
            diff=arguments_diff(call.request.arguments, action.arguments),
            edited=json.dumps(action.arguments, ensure_ascii=True),  # exact, and one line in an attribute
            edited_digest=arguments_digest(action.arguments),
            reason=action.reason or "",
        )

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
        screen = self.screen(viewer, bulk=True)
        return self._results(request, viewer, await self.inbox.decisions.decide_all(viewer, targets, action, screen))

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

    async def call_text(self, request: Request) -> Response:
        return await _call_text(self, request)

    async def events(self, request: Request) -> Response:
        viewer = self.viewer(request)
        if viewer is None or (problem := self.inbox.guard.read_problem(request)) is not None:
            return PlainTextResponse("not for you" if viewer is None else problem, status_code=403)
        slots = self.inbox.streams
        if not slots.take(viewer.name):
            return PlainTextResponse(
                f"{viewer.name} has {slots.per_viewer} live pages of this inbox open already (at most "
                f"{slots.per_viewer} each): close some, then reload this one",
                status_code=429,
            )
        stream = event_stream(self.inbox.watcher, self.visible(viewer))
        return HeldStream(stream, functools.partial(slots.give_back, viewer.name))


async def _call_text(pages: Pages, request: Request) -> Response:
    """The text of the run of a call the viewer may see (`live_text`), in a stream slot."""
    inbox = pages.inbox
    viewer = pages.viewer(request)
    if viewer is None or (problem := inbox.guard.read_problem(request)) is not None:
        return PlainTextResponse("not for you" if viewer is None else problem, status_code=403)
    run, call_id = request.query_params.get("run", ""), request.query_params.get("id", "")
    if not run or not call_id:
        return PlainTextResponse("name the call: /call/text?run=RUN&id=CALL", status_code=400)
    view = await call_view(inbox.client, run, call_id)
    known = view.call is not None or (view.decided is not None and view.decided.approved is not None)
    if view.problem is not None or not known or not pages._may_see(view, viewer):
        return PlainTextResponse(f"no call {call_id!r} waits for you in run {run!r}", status_code=404)
    if not inbox.streams.take(viewer.name):
        return PlainTextResponse(f"{viewer.name} has too many live pages of this inbox open", status_code=429)
    assert inbox.texts is not None
    return HeldStream(text_stream(inbox.texts, run), functools.partial(inbox.streams.give_back, viewer.name))


def _ag_ui(inbox: Inbox, pages: Pages, task_queue: str) -> Any:
    """`POST /ag-ui` (signoff.inbox.agui), or a 501 saying what to install without `signoff[ag-ui]`."""
    try:
        from signoff.inbox.agui import AgUi
    except ImportError as exc:
        problem = f"the AG-UI endpoint needs the ag-ui extra (pip install 'signoff[ag-ui]'): {exc}"
        return lambda request: PlainTextResponse(problem, status_code=501)
    return AgUi(inbox.client, inbox.decisions, inbox.guard, task_queue, pages.viewer).endpoint


def _shown_to(scope: Scope, viewer: Viewer, call: WaitingCall) -> bool:
    return scope.shows(call, viewer)


def _call_context(view: CallView, listed_at: float) -> dict[str, Any]:
    return {
        "view": view,
        "refusal": None,
        "deny_refusal": None,
        "may_edit": False,
        "question_fields": None,
        "key": "",
        "listed_at": listed_at,
        "decided_diff": (
            arguments_diff(view.decided.arguments, view.decided.edited_arguments)
            if view.decided is not None and view.decided.edited_arguments is not None
            else None
        ),
    }


def _one(form: dict[str, list[str]], name: str) -> str:
    return (form.get(name) or [""])[0]


def _json_list(text: str) -> list[Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return []
    return value if isinstance(value, list) else []


def _target(parts: list[Any]) -> SeenCall | None:
    """A call as the page named it: [run, call id, digest], each a non-empty string."""
    if len(parts) != 3 or not all(isinstance(p, str) and p for p in parts) or not _DIGEST.fullmatch(parts[2]):
        return None
    return SeenCall(parts[0], parts[1], parts[2])


def _page_token(text: str) -> bytes | None:
    try:
        return base64.urlsafe_b64decode(text.encode()) if text else None
    except (binascii.Error, ValueError):
        return None


def _action(form: dict[str, list[str]], single: bool) -> Choice:
    """What the form asks for; ValueError says what is wrong with it."""
    verb = _one(form, "action")
    reason = _one(form, "reason").strip() or None
    if single and verb in ("answer", "decline", "cancel"):
        answer = form_answer(form) if verb == "answer" else None
        return Choice(approved=False, reason=reason, answer=answer, decline=verb == "decline", cancel=verb == "cancel")
    if verb not in ("approve", "deny"):
        raise ValueError("choose approve or deny")
    if verb == "deny":
        return Choice(approved=False, reason=reason)
    arguments = None
    if single and _one(form, "edit") == "1":
        try:
            arguments = json.loads(_one(form, "arguments"))
        except ValueError as exc:
            raise ValueError(f"the edited arguments are not valid JSON: {exc}") from None
        if not isinstance(arguments, dict):
            raise ValueError('the edited arguments must be a JSON object, e.g. {"command": "ls"}')
    return Choice(approved=True, reason=reason, arguments=arguments, grant=_grant(form) if single else None)


FORM_TYPES = ("string", "number", "integer", "boolean")


def question_fields(schema: dict[str, Any] | None) -> list[dict[str, Any]] | None:
    """The fields of a form for an MCP server's requested schema: one per property of an
    object whose properties are all strings, numbers, integers, booleans or enums (`name`,
    `type`, `title`, `description`, `enum`, `required`); None: a JSON textarea instead."""
    properties = (schema or {}).get("properties")
    if not isinstance(properties, dict) or not properties:
        return None
    required = set((schema or {}).get("required") or [])
    fields = []
    for name, spec in properties.items():
        if not isinstance(spec, dict) or (spec.get("type") not in FORM_TYPES and not spec.get("enum")):
            return None
        enum = spec.get("enum")
        fields.append(
            {
                "name": str(name),
                "type": spec.get("type") if spec.get("type") in FORM_TYPES else "string",
                "title": str(spec.get("title") or name),
                "description": str(spec.get("description") or ""),
                "enum": [str(v) for v in enum] if isinstance(enum, list) else None,
                "required": name in required,
            }
        )
    return fields


def form_answer(form: dict[str, list[str]]) -> Any:
    """The answer an MCP server's question form gives: the JSON textarea (`answer_json`), else its
    fields (`field.<name>`, typed by `type.<name>`: boolean, number, integer, string); URL mode
    (`consent`): true. ValueError says what is wrong."""
    if _one(form, "consent") == "1":
        return True
    text = _one(form, "answer_json").strip()
    if text:
        try:
            return json.loads(text)
        except ValueError as exc:
            raise ValueError(f"the answer is not valid JSON: {exc}") from None
    answer: dict[str, Any] = {}
    for key in form:
        if not key.startswith("type."):
            continue
        name, kind = key[len("type.") :], _one(form, key)
        value = _one(form, f"field.{name}")
        if kind == "boolean":
            answer[name] = value == "true"
        elif value.strip() == "":
            continue  # left empty: not answered (the schema says whether it must be)
        elif kind in ("number", "integer"):
            try:
                answer[name] = int(value) if kind == "integer" else float(value)
            except ValueError:
                raise ValueError(
                    f"{name}: {value!r} is not {'an integer' if kind == 'integer' else 'a number'}"
                ) from None
        else:
            answer[name] = value
    return answer


def _grant(form: dict[str, list[str]]) -> GrantSpec | None:
    match = _one(form, "grant")
    if not match:
        return None
    ttl, uses = _one(form, "grant_ttl").strip(), _one(form, "grant_uses").strip()
    try:
        seconds = read_duration(ttl).total_seconds() if ttl else None
    except ValueError as exc:
        raise ValueError(f"the grant's lifetime: {exc}") from None
    if uses and not uses.isdigit():
        raise ValueError(f"the grant's uses {uses!r} is not a whole number")
    try:
        pattern = _one(form, "grant_pattern") if match == GrantMatch.SIMILAR.value else ""
        return GrantSpec(
            match=match, ttl_seconds=seconds, max_uses=int(uses) if uses else None, pattern=pattern or None
        )
    except ValueError as exc:
        raise ValueError(f"the grant cannot be made: {exc}") from None
