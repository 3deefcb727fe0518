"""The Slack app in the inbox's server: `POST /slack/interactions`, where Slack sends the clicks.

With `SIGNOFF_SLACK_SIGNING_SECRET_FILE` and `SIGNOFF_SLACK_BOT_TOKEN_FILE` set, the inbox's
server takes the clicks on the buttons of the messages the workers post (`signoff.views.slack`,
`signoff.activities.slack`), with Slack's own framework (`slack_bolt`, its Web API client
pointed at `SIGNOFF_SLACK_API_URL`):

| what Slack sends | what happens |
| --- | --- |
| *Approve* / *Deny* (`block_actions`) | that person's decision on the one request the button names |
| *Review* (`block_actions`) | `views.open`: a modal for that person: the whole call, preview, policy, votes |
| the modal's submission (`view_submission`) | their decision: approve (maybe edited) or deny, with a reason |

**Who clicked.** Nothing in a request counts before its signature does: `X-Slack-Signature`
is the HMAC-SHA256 (`v0`) of `v0:<X-Slack-Request-Timestamp>:<body>` with the app's signing
secret, the timestamp within 5 minutes of now, and a signature seen before (a replayed
request) is refused: all with HTTP 401, before Slack's framework or any Temporal call. Then
only the user *id* in the payload counts, mapped through `SIGNOFF_SLACK_USERS`
(`signoff.inbox.slack_users`) to a signoff subject and groups; a display name never does.

**What is decided.** The button names a request (run, call, arguments digest, request
instance); the server reads the call as it waits now, and decides it only if it is that one,
its deadline has not passed, and the person may decide it (the call's policy: approvers,
quorum, `separate_requester`, as the run applies it). Otherwise the person gets a private
(`chat.postEphemeral`) message saying why, and nothing is sent to the run. The decision goes
through the inbox's own `InboxDecisions` (`signoff.inbox.decide`): signed for that subject with the
inbox's signing key (`SIGNOFF_INBOX_SIGNING_KEY_FILE`) by the same signer, with the claim
derived from the call as shown and the server's facts (`signoff.signing.derived`). So the
tool's activity verifies it as any signed decision, and a quorum counts a Slack approval, an
inbox approval and a CLI approval alike (one per subject).

**The message** is updated (`chat.update`) at once with what came of the click; the workers'
notices update it too when the call is settled anywhere else.
"""

from __future__ import annotations

import hmac
import json
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from signoff.config.environment import (
    SLACK_API_URL_ENV,
    SLACK_BOT_TOKEN_FILE_ENV,
    SLACK_SIGNING_SECRET_FILE_ENV,
    SLACK_USERS_ENV,
    Environment,
)
from signoff.config.smallfile import read_secret_line
from signoff.errors import CommandError, ConfigError
from signoff.inbox.calls import WaitingCall, how_decided, run_calls
from signoff.inbox.decide import Choice, InboxDecisions, Result, SeenCall
from signoff.inbox.slack_users import SlackUsers
from signoff.inbox.view import arguments_diff
from signoff.operator import run_client
from signoff.runtime.codec_server import read_body
from signoff.views.links import inbox_link
from signoff.views.notices import NoticeKind
from signoff.views.slack import (
    ACTION_APPROVE,
    ACTION_DENY,
    ACTION_REVIEW,
    CONFIRM_VIEW,
    INSTALL,
    INTERACTIONS_PATH,
    REASON_CHARS,
    REVIEW_VIEW,
    CallRef,
    confirm_view,
    request_message,
    result_view,
    review_view,
    settled_message,
)

if TYPE_CHECKING:
    from slack_bolt.async_app import AsyncApp

WINDOW_SECONDS = 300
"""Slack's: a request signed longer ago than this (or ahead of now by as much) is refused."""
MAX_INTERACTION_BYTES = 1024 * 1024
MAX_REMEMBERED = 100_000


@dataclass(frozen=True)
class SlackSettings:
    """The Slack app's settings on the inbox's server (`SIGNOFF_SLACK_*`)."""

    token: str = field(repr=False)
    signing_secret: str = field(repr=False)
    users: SlackUsers
    api_url: str

    @classmethod
    def from_env(cls, env: Environment) -> SlackSettings | None:
        """The settings, or None when neither the token nor the signing secret is set.

        Raises:
            ConfigError: only one of them is set, a file cannot be read, there is no users
                file, or Slack's framework is not installed.
        """
        token_file, secret_file = env.read(SLACK_BOT_TOKEN_FILE_ENV), env.read(SLACK_SIGNING_SECRET_FILE_ENV)
        if token_file is None and secret_file is None:
            return None
        if token_file is None or secret_file is None:
            missing = SLACK_BOT_TOKEN_FILE_ENV if token_file is None else SLACK_SIGNING_SECRET_FILE_ENV
            raise ConfigError(
                f"the Slack app needs both {SLACK_BOT_TOKEN_FILE_ENV} and {SLACK_SIGNING_SECRET_FILE_ENV}: "
                f"set {missing} too"
            )
        users_file = env.read(SLACK_USERS_ENV)
        if users_file is None:
            raise ConfigError(
                f"the Slack app needs {SLACK_USERS_ENV}: a JSON or TOML file mapping Slack user ids to "
                'signoff subjects, e.g. {"U012ABCDEF": {"sub": "alice", "groups": ["sre"]}}'
            )
        try:
            import slack_bolt  # noqa: F401
        except ImportError:
            raise ConfigError(f"the Slack app needs Slack's framework: {INSTALL}") from None
        return cls(
            read_secret_line(token_file, SLACK_BOT_TOKEN_FILE_ENV),
            read_secret_line(secret_file, SLACK_SIGNING_SECRET_FILE_ENV),
            SlackUsers(users_file),
            env.read(SLACK_API_URL_ENV),
        )

    def describe(self) -> str:
        return f"Slack app on {INTERACTIONS_PATH} ({len(self.users)} mapped Slack users)"


class Replays:
    """Signatures seen within the window: a request seen once is never taken again."""

    def __init__(self, window: float = WINDOW_SECONDS, most: int = MAX_REMEMBERED) -> None:
        self.window, self.most = window, most
        self._seen: OrderedDict[str, float] = OrderedDict()

    def first(self, signature: str, now: float) -> bool:
        """Whether `signature` is seen for the first time (and remember it)."""
        while self._seen and next(iter(self._seen.values())) < now:
            self._seen.popitem(last=False)
        if signature in self._seen:
            return False
        if len(self._seen) >= self.most:  # full of live entries: refuse rather than forget one
            return False
        self._seen[signature] = now + 2 * self.window + 1
        return True


@dataclass(frozen=True)
class Edit:
    """Edited arguments waiting for their author's confirmation, kept here (never sent back to Slack)."""

    user: str
    ref: CallRef
    arguments: dict[str, Any]
    reason: str | None
    until: float


class Edits:
    """The edits shown for confirmation, by a random id, for 10 minutes; each is taken once."""

    def __init__(self, ttl: float = 600, most: int = 10_000) -> None:
        self.ttl, self.most = ttl, most
        self._kept: OrderedDict[str, Edit] = OrderedDict()

    def keep(self, user: str, ref: CallRef, arguments: dict[str, Any], reason: str | None) -> str:
        now = time.time()
        while self._kept and (len(self._kept) >= self.most or next(iter(self._kept.values())).until < now):
            self._kept.popitem(last=False)
        key = secrets.token_urlsafe(18)
        self._kept[key] = Edit(user, ref, arguments, reason, now + self.ttl)
        return key

    def take(self, key: str, user: str, ref: CallRef | None, now: float) -> Edit | None:
        """The edit `key`, if `user` made it for `ref` and it is still fresh (None otherwise)."""
        edit = self._kept.get(key)
        if edit is None or edit.user != user or edit.ref != ref or edit.until < now:
            return None
        del self._kept[key]
        return edit


def slack_signature_problem(secret: str, body: bytes, timestamp: str, signature: str, now: float) -> str | None:
    """Why a request is not one Slack signed just now with `secret` (None: it is)."""
    if not timestamp.isdigit() or len(timestamp) > 12:
        return "no X-Slack-Request-Timestamp"
    if abs(now - int(timestamp)) > WINDOW_SECONDS:
        return "X-Slack-Request-Timestamp is not within 5 minutes of now"
    base = b"v0:" + timestamp.encode() + b":" + body
    expected = "v0=" + hmac.new(secret.encode(), base, "sha256").hexdigest()
    if not hmac.compare_digest(expected.encode(), signature.encode("utf-8", "replace")):
        return "X-Slack-Signature does not match"
    return None


class SlackInteractions:
    """The Slack app: verifies each request, then lets `slack_bolt` route it to the handlers."""

    def __init__(self, settings: SlackSettings, decisions: InboxDecisions, inbox_root: str | None = None) -> None:
        from slack_bolt.async_app import AsyncApp
        from slack_sdk.web.async_client import AsyncWebClient

        self.settings, self.decisions, self.inbox_root = settings, decisions, inbox_root
        self.replays = Replays()
        self.edits = Edits()
        self.client = AsyncWebClient(token=settings.token, base_url=settings.api_url, timeout=10)
        self.app: AsyncApp = AsyncApp(
            client=self.client,
            signing_secret=settings.signing_secret,
            process_before_response=True,  # answered once decided: the message and the modal say what came of it
            url_verification_enabled=False,
            ssl_check_enabled=False,
        )
        self._register()

    async def endpoint(self, request: Request) -> Response:
        """`POST /slack/interactions`."""
        from slack_bolt.adapter.starlette.async_handler import to_async_bolt_request, to_starlette_response

        body = await read_body(request, MAX_INTERACTION_BYTES)
        if body is None:
            return PlainTextResponse(f"at most {MAX_INTERACTION_BYTES} bytes", status_code=413)
        timestamp = request.headers.get("x-slack-request-timestamp", "")
        signature = request.headers.get("x-slack-signature", "")
        now = time.time()
        problem = slack_signature_problem(self.settings.signing_secret, body, timestamp, signature, now)
        if problem is None and not self.replays.first(signature, now):
            problem = "this request was taken already (a replay)"
        if problem is not None:
            return PlainTextResponse(f"not a request Slack signed for this app: {problem}", status_code=401)
        if (problem := _payload_problem(body)) is not None:
            return PlainTextResponse(problem, status_code=400)
        answer = await self.app.async_dispatch(to_async_bolt_request(request, body))
        return to_starlette_response(answer)

    # --- the handlers ----------------------------------------------------------------------

    def _register(self) -> None:
        async def approve(ack: Any, body: dict[str, Any]) -> None:
            await ack()
            await self._decide_click(body, Choice(approved=True))

        async def deny(ack: Any, body: dict[str, Any]) -> None:
            await ack()
            await self._decide_click(body, Choice(approved=False))

        async def review(ack: Any, body: dict[str, Any]) -> None:
            await ack()
            await self._review(body)

        async def submitted(ack: Any, body: dict[str, Any]) -> None:
            await self._submitted(ack, body)

        async def confirmed(ack: Any, body: dict[str, Any]) -> None:
            await self._confirmed(ack, body)

        self.app.action(ACTION_APPROVE)(approve)
        self.app.action(ACTION_DENY)(deny)
        self.app.action(ACTION_REVIEW)(review)
        self.app.view(REVIEW_VIEW)(submitted)
        self.app.view(CONFIRM_VIEW)(confirmed)

    async def _decide_click(self, body: dict[str, Any], action: Choice) -> None:
        click = Click.of(body)
        if click.ref is None:
            await self._tell(click, "This button names no call signoff knows: nothing was decided.")
            return
        person = self.settings.users.person(click.user)
        if person is None:
            await self._tell(click, _unmapped(click.user))
            return
        result = await self.decisions.decide(person.viewer(), click.target, action, _screen(click.ref))
        await self._tell(click, _result_text(result))
        if result.outcome != "refused":
            await self.refresh(click.ref, click.channel, click.ts)

    async def _review(self, body: dict[str, Any]) -> None:
        click = Click.of(body)
        if click.ref is None:
            await self._tell(click, "This button names no call signoff knows.")
            return
        person = self.settings.users.person(click.user)
        if person is None:
            await self._tell(click, _unmapped(click.user))
            return
        call = await self._current(click.ref)
        if isinstance(call, str):
            await self._tell(click, call)
            return
        viewer = person.viewer()
        approving = self.decisions.refusal(call, viewer)
        if approving is not None and self.decisions.refusal(call, viewer, approving=False) is not None:
            await self._tell(click, f"You cannot decide this call: {approving}")
            return
        view = review_view(
            click.ref,
            {"channel": click.channel or "", "ts": click.ts or ""},
            call.request.model_dump(mode="json"),
            may_edit=approving is None and self.decisions.may_edit(call.request),
            requested_by=call.requested_by,
        )
        await _quietly(self.client.views_open(trigger_id=str(body.get("trigger_id", "")), view=view))

    async def _submitted(self, ack: Any, body: dict[str, Any]) -> None:
        view = body.get("view") or {}
        meta = _metadata(view)
        ref = CallRef.parse(meta.get("ref"))
        user = str((body.get("user") or {}).get("id", ""))
        person = self.settings.users.person(user)
        if ref is None or person is None:
            why = _unmapped(user) if person is None else "This view names no call signoff knows."
            await ack(response_action="errors", errors={"decision": why[:150]})
            if person is None and meta.get("channel"):
                await self._ephemeral(str(meta["channel"]), user, why)
            return
        values = (view.get("state") or {}).get("values") or {}
        choice = _field(values, "decision", "selected_option")
        reason = _field(values, "reason", "value")
        edited = _field(values, "arguments", "value")
        if choice not in ("approve", "deny"):
            await ack(response_action="errors", errors={"decision": "choose approve or deny"})
            return
        if isinstance(reason, str) and len(reason) > REASON_CHARS:
            await ack(response_action="errors", errors={"reason": f"at most {REASON_CHARS} characters"})
            return
        arguments: dict[str, Any] | None = None
        if choice == "approve" and isinstance(edited, str) and edited.strip():
            try:
                parsed = json.loads(edited)
            except ValueError as exc:
                await ack(response_action="errors", errors={"arguments": f"not valid JSON: {exc}"[:150]})
                return
            if not isinstance(parsed, dict):
                await ack(response_action="errors", errors={"arguments": "must be a JSON object"})
                return
            arguments = parsed
        action = Choice(approved=choice == "approve", reason=(reason or "").strip() or None, arguments=arguments)
        where = {"channel": str(meta.get("channel") or ""), "ts": str(meta.get("ts") or "")}
        if arguments is not None:  # an edit: shown as a diff to confirm before anything is sent
            call = await self._current(ref)
            if isinstance(call, str):
                await ack(response_action="update", view=result_view(f"Nothing was decided: {call}"))
                return
            if call.request.arguments != arguments:
                problem = self.decisions.refusal(call, person.viewer())
                if problem is None and not self.decisions.may_edit(call.request):
                    problem = f"call {ref.call_id!r}: its arguments cannot be edited (a quorum decides it)"
                if problem is not None:
                    await ack(response_action="update", view=result_view(f"Nothing was decided: {problem}"))
                    return
                edit = self.edits.keep(user, ref, arguments, action.reason)
                diff = "\n".join(line for _, line in arguments_diff(call.request.arguments, arguments))
                await ack(response_action="update", view=confirm_view(ref, where, diff, edit, action.reason))
                return
            action = Choice(approved=True, reason=action.reason)  # nothing edited: the approval of what was shown
        await self._send(ack, user, ref, action, where)

    async def _confirmed(self, ack: Any, body: dict[str, Any]) -> None:
        view = body.get("view") or {}
        meta = _metadata(view)
        user = str((body.get("user") or {}).get("id", ""))
        ref = CallRef.parse(meta.get("ref"))
        edit = self.edits.take(str(meta.get("edit", "")), user, ref, time.time())
        if ref is None or edit is None:
            text = (
                "Nothing was decided: this edit is not one you made here in the last 10 minutes; review the call again."
            )
            await ack(response_action="update", view=result_view(text))
            return
        action = Choice(approved=True, reason=edit.reason, arguments=edit.arguments)
        await self._send(
            ack, user, ref, action, {"channel": str(meta.get("channel") or ""), "ts": str(meta.get("ts") or "")}
        )

    async def _send(self, ack: Any, user: str, ref: CallRef, action: Choice, where: dict[str, str]) -> None:
        """Decide `ref` for the Slack `user` (mapped again: a mapping may have gone), answer the modal."""
        person = self.settings.users.person(user)
        if person is None:
            await ack(response_action="update", view=result_view(_unmapped(user)))
            return
        target = SeenCall(ref.workflow_id, ref.call_id, ref.digest)
        result = await self.decisions.decide(person.viewer(), target, action, _screen(ref))
        await ack(response_action="update", view=result_view(_result_text(result)))
        if result.outcome != "refused":
            await self.refresh(ref, where.get("channel") or None, where.get("ts") or None)

    # --- what it reads and says -------------------------------------------------------------

    async def _current(self, ref: CallRef) -> WaitingCall | str:
        """The call `ref` names as it waits now, or why it cannot be reviewed."""
        try:
            calls = await run_calls(self.decisions.client, ref.workflow_id)
        except CommandError as exc:
            return f"signoff cannot read that run: {exc}"
        call = next((c for c in calls if c.request.call_id == ref.call_id), None)
        if call is None:
            decided = await how_decided(self.decisions.client, ref.workflow_id, ref.call_id, ref.digest)
            return f"This call no longer waits: {decided.text}."
        return _screen(ref)(call) or call

    async def refresh(self, ref: CallRef, channel: str | None, ts: str | None) -> None:
        """Update the message of `ref` to what the call is now (waiting with its votes, or settled)."""
        if not channel or not ts:
            return
        client = self.decisions.client
        try:
            calls = await run_calls(client, ref.workflow_id)
            call = next((c for c in calls if c.request.call_id == ref.call_id), None)
            if call is not None and call.request.arguments_digest == ref.digest:
                inbox = inbox_link(ref.workflow_id, ref.call_id, self.inbox_root)
                message = request_message(
                    ref.workflow_id, call.agent, call.request.model_dump(mode="json"), inbox_url=inbox
                )
            else:
                handle = client.get_workflow_handle(ref.workflow_id)
                trail = await run_client.audit_trail(handle)
                record = next(
                    (
                        r
                        for r in reversed(trail.records)
                        if r.call_id == ref.call_id and r.arguments_digest in ("", ref.digest)
                    ),
                    None,
                )
                if record is None:
                    return
                agent = (await run_client.status(handle)).agent
                kind: NoticeKind = "approval_timed_out" if record.timed_out else "approval_decided"
                message = settled_message(ref.workflow_id, agent, record.model_dump(mode="json"), kind, ref)
        except CommandError:
            return
        await _quietly(self.client.chat_update(channel=channel, ts=ts, **message))

    async def _tell(self, click: Click, text: str) -> None:
        if click.channel:
            await self._ephemeral(click.channel, click.user, text)

    async def _ephemeral(self, channel: str, user: str, text: str) -> None:
        await _quietly(self.client.chat_postEphemeral(channel=channel, user=user, text=text))


@dataclass(frozen=True)
class Click:
    """A click on one of the message's buttons: who, where, and the request it names."""

    user: str
    channel: str | None
    ts: str | None
    ref: CallRef | None

    @classmethod
    def of(cls, body: dict[str, Any]) -> Click:
        container = body.get("container") or {}
        channel = (body.get("channel") or {}).get("id") or container.get("channel_id")
        ts = container.get("message_ts") or (body.get("message") or {}).get("ts")
        actions = body.get("actions") or [{}]
        value = actions[0].get("value") if isinstance(actions[0], dict) else None
        user = str((body.get("user") or {}).get("id", ""))
        return cls(user, channel, ts, CallRef.parse(value))

    @property
    def target(self) -> SeenCall:
        assert self.ref is not None
        return SeenCall(self.ref.workflow_id, self.ref.call_id, self.ref.digest)


def _screen(ref: CallRef) -> Any:
    """The Slack app's own refusals of a call as it waits now: another request of that call
    (asked again since the message was posted), or a deadline that passed."""

    def check(call: WaitingCall) -> str | None:
        request = call.request
        if request.arguments_digest != ref.digest:
            return (
                "This call changed since the message was posted (its arguments are not the ones it names): "
                "nothing was decided."
            )
        instance = request.binding.request if request.binding else None
        if ref.request and instance and instance != ref.request:
            return "This message is for an earlier request of that call: nothing was decided."
        if request.expires_at is not None and request.expires_at <= datetime.now(UTC):
            return f"This call's deadline passed ({request.expires_at.isoformat()}): nothing was decided."
        return None

    return check


def _metadata(view: dict[str, Any]) -> dict[str, Any]:
    """A modal's `private_metadata` (what signoff put there), or {} when it is not an object."""
    try:
        meta = json.loads(str(view.get("private_metadata") or "{}"))
    except ValueError:
        return {}
    return meta if isinstance(meta, dict) else {}


def _payload_problem(body: bytes) -> str | None:
    """Why a signed body is not an interaction Slack's framework can route (None: it is one)."""
    try:
        form = parse_qs(body.decode("utf-8"), strict_parsing=False, max_num_fields=10)
        payload = json.loads(form.get("payload", [""])[0])
    except (UnicodeDecodeError, ValueError):
        return "not an interaction: a form with one field, payload, holding a JSON object"
    if not isinstance(payload, dict) or not isinstance(payload.get("type"), str):
        return "not an interaction: its payload names no type"
    user = payload.get("user")
    if payload["type"] in ("block_actions", "view_submission") and not (
        isinstance(user, dict) and isinstance(user.get("id"), str)
    ):
        return f"a {payload['type']} names no user"
    if payload["type"] == "block_actions":
        actions = payload.get("actions")
        if not isinstance(actions, list) or not actions:
            return "a block_actions names no action"
        if not all(isinstance(a, dict) and isinstance(a.get("action_id"), str) for a in actions):
            return "an action names no action_id"
        for key in ("container", "channel", "message"):
            if payload.get(key) is not None and not isinstance(payload.get(key), dict):
                return f"a block_actions' {key} is not an object"
    if payload["type"] == "view_submission":
        view = payload.get("view")
        if not isinstance(view, dict) or not all(isinstance(view.get(k), str) for k in ("callback_id", "type")):
            return "a view_submission names no view"
        if view.get("state") is not None and not isinstance(view.get("state"), dict):
            return "a view_submission's state is not an object"
    return None


def _unmapped(user: str) -> str:
    return (
        f"Your Slack account ({user}) is not one signoff knows ({SLACK_USERS_ENV} maps Slack user ids to "
        "signoff's people): nothing was decided. Ask whoever runs signoff to add you."
    )


def _result_text(result: Result) -> str:
    if result.outcome == "refused":
        return f"Nothing was decided: {result.message}"
    return f"{result.tool or 'The call'}: {result.message}."


def _field(values: dict[str, Any], block: str, key: str) -> Any:
    value = ((values.get(block) or {}).get(block) or {}).get(key)
    if key == "selected_option":
        return (value or {}).get("value") if isinstance(value, dict) else None
    return value


async def _quietly(call: Any) -> None:
    """A Web API call whose failure changes nothing decided (the message, a private note)."""
    try:
        await call
    except Exception:  # Slack's errors, aiohttp's, a timeout: the decision stands either way
        pass
