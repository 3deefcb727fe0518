"""The Slack channel of notifications: the call's message, posted once and updated in place.

With `SIGNOFF_SLACK_BOT_TOKEN_FILE` and `SIGNOFF_SLACK_CHANNEL` set, a worker's runs notify
one more channel besides `SIGNOFF_NOTIFY_URLS`: the Slack app's channel, through Slack's own
Web API client (`slack_sdk`, pointed at `SIGNOFF_SLACK_API_URL`). Its notices are the same
activities as any channel's (`signoff.notify`, retried by Temporal, never holding up the run):

| notice | what Slack gets |
| --- | --- |
| `approval_requested` | `chat.postMessage`: the call's message, *Review*, *Approve*, *Deny* (`signoff.views.slack`) |
| `approval_reminder`, `approval_escalated` | `chat.update` of that message (who may decide, votes) |
| `approval_decided`, `approval_timed_out` | `chat.update` of that message: the outcome, no buttons |

The message of a call is found again by its metadata (run, call, arguments digest): first in
what this worker posted, then in the channel's history since the call was asked for
(`conversations.history`). So a retried `approval_requested` updates the message an earlier
attempt posted instead of posting a second, and a decision made anywhere (CLI, inbox, Web UI,
Slack) updates the one message. No argument text is ever sent to the channel.

Slack's errors: rate limits and Slack's own failures are retried (honouring `Retry-After`);
a bad token, a channel the app is not in and the like are not, and are recorded as the run's
`notification_failed` event. Either way the run goes on.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from temporalio.exceptions import ApplicationError

from signoff.config.environment import SLACK_API_URL_ENV, SLACK_BOT_TOKEN_FILE_ENV, SLACK_CHANNEL_ENV, Environment
from signoff.config.smallfile import read_secret_line
from signoff.errors import ConfigError
from signoff.views.notices import WAITING_KINDS, NoticeKind
from signoff.views.slack import INSTALL, CallRef, instant, request_message, settled_message

if TYPE_CHECKING:
    from slack_sdk.web.async_client import AsyncWebClient

MAX_TOKEN_BYTES = 1024
HISTORY_PAGES = 5
"""At most this many pages (200 messages each) of the channel's history are searched for a call's message."""
HISTORY_SLACK = 120.0
"""Seconds before the call's request that the search starts (clocks differ)."""
MAX_RETRY_AFTER = timedelta(minutes=5)
"""The longest `Retry-After` a channel (Slack, a webhook) is waited for before the next try."""
REMEMBERED = 10_000
FATAL = frozenset(
    {
        "invalid_auth",
        "not_authed",
        "account_inactive",
        "token_revoked",
        "token_expired",
        "channel_not_found",
        "not_in_channel",
        "is_archived",
        "missing_scope",
        "invalid_blocks",
        "invalid_metadata_format",
        "msg_too_long",
        "no_permission",
        "restricted_action",
    }
)


@dataclass(frozen=True)
class SlackChannel:
    """Where and how a worker posts its calls' messages.

    Attributes:
        token: the bot token (`xoxb-...`).
        channel: the channel's id (`SIGNOFF_SLACK_CHANNEL`).
        api_url: Slack's Web API base URL (`SIGNOFF_SLACK_API_URL`), ending in `/`.
    """

    token: str = field(repr=False)
    channel: str
    api_url: str
    posted: OrderedDict[tuple[str, str, str], str] = field(default_factory=OrderedDict, repr=False, compare=False)
    """Messages this worker posted, by (run, call, digest): their `ts`."""

    @property
    def fingerprint(self) -> str:
        """How a run's snapshot names this channel (never the token)."""
        return hashlib.sha256(f"slack:{self.channel}".encode()).hexdigest()[:16]

    def describe(self) -> str:
        return f"Slack channel {self.channel}"

    @classmethod
    def from_env(cls, env: Environment) -> SlackChannel | None:
        """`SIGNOFF_SLACK_BOT_TOKEN_FILE` with `SIGNOFF_SLACK_CHANNEL`; None when no token is set.

        Raises:
            ConfigError: the token cannot be read, no channel is named, or `slack_sdk` is missing.
        """
        path = env.read(SLACK_BOT_TOKEN_FILE_ENV)
        if path is None:
            return None
        channel = env.read(SLACK_CHANNEL_ENV)
        if not channel:
            raise ConfigError(
                f"{SLACK_BOT_TOKEN_FILE_ENV} is set: name the channel for approval requests in "
                f"{SLACK_CHANNEL_ENV} (its id, e.g. C0123ABCD; invite the app to it)"
            )
        try:
            import slack_sdk  # noqa: F401
        except ImportError:
            raise ConfigError(
                f"{SLACK_BOT_TOKEN_FILE_ENV} is set, and Slack's SDK is not installed: {INSTALL}"
            ) from None
        return cls(
            read_secret_line(path, SLACK_BOT_TOKEN_FILE_ENV, MAX_TOKEN_BYTES), channel, env.read(SLACK_API_URL_ENV)
        )

    def client(self) -> AsyncWebClient:
        from slack_sdk.web.async_client import AsyncWebClient

        return AsyncWebClient(token=self.token, base_url=self.api_url, timeout=10)

    def remember(self, ref: CallRef, ts: str) -> None:
        self.posted[(ref.workflow_id, ref.call_id, ref.digest)] = ts
        while len(self.posted) > REMEMBERED:
            self.posted.popitem(last=False)

    async def find(self, client: AsyncWebClient, ref: CallRef, since: float | None) -> str | None:
        """The `ts` of the message of `ref` in the channel, or None when there is none."""
        known = self.posted.get((ref.workflow_id, ref.call_id, ref.digest))
        if known is not None:
            return known
        cursor: str | None = None
        for _ in range(HISTORY_PAGES):
            answer = await client.conversations_history(
                channel=self.channel,
                oldest=f"{max(0.0, (since or 0.0) - HISTORY_SLACK):.6f}",
                include_all_metadata=True,
                limit=200,
                cursor=cursor,
            )
            for message in answer.get("messages") or []:
                if isinstance(message, dict) and ref.names(message.get("metadata")):
                    ts = str(message.get("ts"))
                    self.remember(ref, ts)
                    return ts
            cursor = ((answer.get("response_metadata") or {}).get("next_cursor")) or None
            if not cursor:
                return None
        return None

    async def deliver(
        self,
        kind: NoticeKind,
        workflow_id: str,
        agent: str,
        request: dict[str, Any] | None,
        decision: dict[str, Any] | None,
        inbox_url: str | None = None,
    ) -> int:
        """Post or update the call's message for one notice; an ApplicationError says whether to retry."""
        from slack_sdk.errors import SlackApiError

        call = request or decision or {}
        ref = CallRef.of(workflow_id, call)
        since = _unix(call.get("requested_at"))
        if kind in WAITING_KINDS and request is not None:
            message = request_message(workflow_id, agent, request, kind, inbox_url)
        else:
            message = settled_message(workflow_id, agent, decision or {}, kind, ref)
        client = self.client()
        try:
            ts = await self.find(client, ref, since)
            if ts is not None:
                await client.chat_update(channel=self.channel, ts=ts, **message)
                return 200
            if kind != "approval_requested":
                return 204  # no message of this call to update (posted before Slack was set up, or deleted)
            answer = await client.chat_postMessage(channel=self.channel, **message)
            self.remember(ref, str(answer.get("ts")))
            return 200
        except SlackApiError as exc:
            error = str(exc.response.get("error", "")) if exc.response is not None else ""
            status = exc.response.status_code if exc.response is not None else 0
            if error == "message_not_found" and kind == "approval_requested":
                self.posted.pop((ref.workflow_id, ref.call_id, ref.digest), None)
            retry = exc.response.headers.get("Retry-After", "") if exc.response is not None else ""
            raise ApplicationError(
                f"Slack answered {error or f'HTTP {status}'}",
                type="NotifyRejected",
                non_retryable=error in FATAL,
                next_retry_delay=min(timedelta(seconds=int(retry)), MAX_RETRY_AFTER) if retry.isdigit() else None,
            ) from None
        except Exception as exc:  # aiohttp's connection errors, timeouts: retried
            raise ApplicationError(f"Slack: {type(exc).__name__}", type="NotifyUnreachable") from None


def _unix(value: Any) -> float | None:
    moment = instant(value)
    return moment.timestamp() if moment else None
