"""A stand-in for Slack in the Slack app's tests: its Web API over real HTTP, and its signed requests.

`FakeSlack` serves the Web API methods signoff calls (through `slack_sdk`, pointed at it with
`SIGNOFF_SLACK_API_URL`): `auth.test`, `chat.postMessage`, `chat.update`,
`conversations.history`, `views.open`, `chat.postEphemeral`. It keeps the channel's messages
(with their metadata, as Slack does), records every call, checks the bot token, and can be
`down` (HTTP 503 for everything). `payloads()` are the bodies of what was posted to the
channel, so a test can check none of them carries argument text.

`signed(...)` makes a request body and headers as Slack signs interaction requests: the form
field `payload` (the JSON of the interaction) and `X-Slack-Signature: v0=<hex HMAC-SHA256 of
"v0:<timestamp>:<body>">` with the app's signing secret.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

TOKEN = "xoxb-test-bot-token"
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
CHANNEL = "C0SIGNOFF"
TEAM = "T0TEAM"


@dataclass
class Call:
    method: str
    args: dict[str, Any]


@dataclass
class FakeSlack:
    token: str = TOKEN
    calls: list[Call] = field(default_factory=list)
    messages: dict[str, dict[str, Any]] = field(default_factory=dict)
    down: bool = False
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _seq: int = 0

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/api/"

    def __enter__(self) -> FakeSlack:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._answer(_single(parse_qs(urlsplit(self.path).query)))

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode()
                kind = self.headers.get("Content-Type", "")
                if "json" in kind:
                    args: Any = json.loads(raw or "{}")
                else:
                    args = _single(parse_qs(raw) | parse_qs(urlsplit(self.path).query))
                self._answer(args)

            def _answer(self, args: dict[str, Any]) -> None:
                method = urlsplit(self.path).path.removeprefix("/api/")
                status, answer = fake.answer(method, args, self.headers.get("Authorization", ""))
                body = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    def answer(self, method: str, args: dict[str, Any], authorization: str) -> tuple[int, dict[str, Any]]:
        with self._lock:
            if self.down:
                return 503, {"ok": False, "error": "service_unavailable"}
            self.calls.append(Call(method, args))
            if authorization != f"Bearer {self.token}":
                return 200, {"ok": False, "error": "invalid_auth"}
            for name in ("blocks", "metadata", "view"):
                if isinstance(args.get(name), str):  # sent as form fields: JSON strings
                    args[name] = json.loads(args[name])
            if method == "auth.test":
                return 200, {"ok": True, "user_id": "U0BOT", "bot_id": "B0BOT", "team_id": TEAM, "team": "test"}
            if method == "chat.postMessage":
                self._seq += 1
                ts = f"{int(time.time())}.{self._seq:06d}"
                message = {"ts": ts, "channel": args.get("channel"), **_kept(args)}
                self.messages[ts] = message
                return 200, {"ok": True, "channel": args.get("channel"), "ts": ts, "message": message}
            if method == "chat.update":
                ts = str(args.get("ts"))
                if ts not in self.messages:
                    return 200, {"ok": False, "error": "message_not_found"}
                self.messages[ts] |= _kept(args)
                return 200, {"ok": True, "channel": args.get("channel"), "ts": ts}
            if method == "conversations.history":
                oldest = float(args.get("oldest") or 0)
                found = [
                    m
                    for m in self.messages.values()
                    if float(m["ts"]) >= oldest and m["channel"] == args.get("channel")
                ]
                found.sort(key=lambda m: float(m["ts"]), reverse=True)
                return 200, {"ok": True, "messages": found, "has_more": False}
            if method == "views.open":
                return 200, {"ok": True, "view": {"id": f"V{len(self.calls)}", **(args.get("view") or {})}}
            if method == "chat.postEphemeral":
                return 200, {"ok": True, "message_ts": f"{time.time():.6f}"}
            return 200, {"ok": False, "error": "unknown_method"}

    # --- what a test reads ------------------------------------------------------------------

    def of(self, method: str) -> list[dict[str, Any]]:
        with self._lock:
            return [c.args for c in self.calls if c.method == method]

    def payloads(self) -> list[str]:
        """Everything sent for the channel (posted and updated messages), as JSON text."""
        return [json.dumps(a) for m in ("chat.postMessage", "chat.update") for a in self.of(m)]

    def message_of(self, workflow_id: str, call_id: str) -> dict[str, Any] | None:
        with self._lock:
            for message in self.messages.values():
                payload = (message.get("metadata") or {}).get("event_payload") or {}
                if (payload.get("workflow_id"), payload.get("call_id")) == (workflow_id, call_id):
                    return dict(message)
        return None

    def ephemerals(self, user: str) -> list[str]:
        return [str(a.get("text")) for a in self.of("chat.postEphemeral") if a.get("user") == user]


def _single(form: dict[str, list[str]]) -> dict[str, Any]:
    return {k: v[0] if len(v) == 1 else v for k, v in form.items()}


def _kept(args: dict[str, Any]) -> dict[str, Any]:
    return {k: args[k] for k in ("text", "blocks", "metadata") if k in args}


def text_of(message: dict[str, Any]) -> str:
    """A message's words: its text and its blocks' texts."""
    return json.dumps([message.get("text"), message.get("blocks")])


def buttons(message: dict[str, Any]) -> dict[str, str]:
    """The message's buttons with an action id: action id → value."""
    return {
        e["action_id"]: e.get("value", "")
        for b in message.get("blocks") or []
        if b.get("type") == "actions"
        for e in b.get("elements", [])
        if "action_id" in e
    }


def signed(
    payload: dict[str, Any], *, secret: str = SIGNING_SECRET, at: int | None = None
) -> tuple[bytes, dict[str, str]]:
    """An interaction request as Slack sends it: form-encoded `payload`, signed v0."""
    body = urlencode({"payload": json.dumps(payload)}).encode()
    timestamp = str(int(time.time()) if at is None else at)
    digest = hmac.new(secret.encode(), b"v0:" + timestamp.encode() + b":" + body, hashlib.sha256).hexdigest()
    return body, {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": timestamp,
        "X-Slack-Signature": f"v0={digest}",
    }


def click(user: str, action_id: str, value: str, message: dict[str, Any], channel: str = CHANNEL) -> dict[str, Any]:
    """A `block_actions` payload: `user` clicked the button `action_id` of `message`."""
    return {
        "type": "block_actions",
        "team": {"id": TEAM, "domain": "test"},
        "user": {"id": user, "username": "alice", "name": "alice", "team_id": TEAM},  # names never count
        "api_app_id": "A0APP",
        "token": "legacy-verification-token",
        "container": {"type": "message", "message_ts": message["ts"], "channel_id": channel, "is_ephemeral": False},
        "trigger_id": f"{int(time.time())}.{user}.{uuid.uuid4().hex[:8]}",
        "channel": {"id": channel, "name": "ops"},
        "message": {
            "type": "message",
            "ts": message["ts"],
            "text": message.get("text"),
            "blocks": message.get("blocks"),
        },
        "actions": [
            {
                "action_id": action_id,
                "block_id": "b",
                "value": value,
                "type": "button",
                "action_ts": f"{time.time():.6f}",
            }
        ],
    }


def submission(user: str, view: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """A `view_submission` payload: `user` sent the modal `view` with these input values
    (`{"decision": "deny", "reason": "...", "arguments": "..."}`)."""
    state: dict[str, Any] = {}
    if "decision" in values:
        state["decision"] = {"decision": {"type": "radio_buttons", "selected_option": {"value": values["decision"]}}}
    for name in ("reason", "arguments"):
        if name in values:
            state[name] = {name: {"type": "plain_text_input", "value": values[name]}}
    return {
        "type": "view_submission",
        "team": {"id": TEAM, "domain": "test"},
        "user": {"id": user, "username": "someone", "name": "someone", "team_id": TEAM},
        "api_app_id": "A0APP",
        "token": "legacy-verification-token",
        "trigger_id": f"{int(time.time())}.{user}.{uuid.uuid4().hex[:8]}",
        "view": {
            "id": "V0VIEW",
            "team_id": TEAM,
            "type": "modal",
            "callback_id": view["callback_id"],
            "private_metadata": view["private_metadata"],
            "blocks": view["blocks"],
            "state": {"values": state},
            "hash": "1.abc",
        },
    }
