"""Notifications (`signoff.notify`): one HTTP POST of a run's notice to one channel.

The worker's channels are `SIGNOFF_NOTIFY_URLS` (comma-separated http(s) URLs). A run
records which channels it notifies in its snapshot, by fingerprint only (a webhook URL
is often a secret and history is not the place for it), and starts one activity per
channel and notice, so one failing channel never re-sends to the others.

Temporal owns retries: a connection error, a timeout, 408/409/425/429 (honouring
`Retry-After`) and 5xx are retried; another answer is not. Redirects are not followed
(configure the final URL). Error messages name a channel by scheme and host only.

A URL written `slack+https://...` gets the notice as a Slack-compatible message (Block
Kit: the text, and link buttons to the call's page in the inbox and to the Web UI) instead
of the JSON body: Slack's incoming webhooks, and chat tools that take its format.

With `SIGNOFF_SLACK_BOT_TOKEN_FILE` and `SIGNOFF_SLACK_CHANNEL`, the Slack app's channel is
one more channel (`signoff.activities.slack`): each call's message is posted there once, with
buttons to decide it, and updated in place as the call is reminded, escalated and settled.

Headers: `X-Signoff-Event` (the notice's kind), `X-Signoff-Delivery`
(`<workflow_id>/<run_id>/<event seq>`: the same on every retry, so receivers can drop
duplicates) and, with `SIGNOFF_NOTIFY_SECRET_FILE`, `X-Signoff-Signature:
t=<unix>,v1=<hex>` over the time of sending, the delivery id and the body
(`signoff.text.notify_signature`), made anew for each attempt.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import httpx
from temporalio import activity
from temporalio.exceptions import ApplicationError

from signoff.activities.lineage import ancestors, parent_of
from signoff.activities.models import NotifyInput, NotifyOutput
from signoff.activities.slack import MAX_RETRY_AFTER, SlackChannel
from signoff.agent.snapshot import NotifyPlan
from signoff.config.environment import DEFAULT_ADDRESS, NOTIFY_SECRET_FILE_ENV, NOTIFY_URLS_ENV, Environment
from signoff.config.smallfile import read_secret_bytes
from signoff.errors import ConfigError
from signoff.text.notify_signature import SIGNATURE_HEADER, signature
from signoff.views.howto import decide_commands
from signoff.views.links import inbox_link, inbox_root, ui_link, ui_root
from signoff.views.notices import WAITING_KINDS, Notice, notice_text, slack_message

EVENT_HEADER = "X-Signoff-Event"
DELIVERY_HEADER = "X-Signoff-Delivery"
RETRYABLE_STATUSES = frozenset({408, 409, 425, 429})
SLACK_PREFIX = "slack+"
"""`slack+https://hooks.slack.com/...`: this channel takes Slack's message format."""


def target(entry: str) -> tuple[str, bool]:
    """A channel's URL and whether it takes Slack's format (`slack+` before the URL)."""
    return (entry.removeprefix(SLACK_PREFIX), True) if entry.startswith(SLACK_PREFIX) else (entry, False)


def channel_id(url: str) -> str:
    """The fingerprint a run records for a channel: names it without revealing it."""
    return hashlib.sha256(url.encode()).hexdigest()[:16]


def channel_label(entry: str) -> str:
    """`https://hooks.example.com`: enough to say which channel, never its path or query."""
    url, slack = target(entry)
    parts = urlsplit(url)
    label = f"{parts.scheme}://{parts.hostname or '?'}" + (f":{parts.port}" if parts.port else "")
    return label + (" (Slack format)" if slack else "")


@dataclass(frozen=True)
class NotifyConfig:
    """The worker's notification channels and how notices link back to runs.

    Args:
        urls: where notices are POSTed (http or https).
        secret: the HMAC key for `X-Signoff-Signature` (None: unsigned).
        ui_root: the Temporal Web UI's root, for each notice's `ui_url` (None: no link).
        inbox_root: the inbox's root (`SIGNOFF_INBOX_URL`), for each notice's `inbox_url`.
        namespace: the runs' namespace (for the link and the commands).
        cli_options: flags the `signoff approve/deny` commands need to reach the runs,
            e.g. ` --address temporal.example.com:7233`.
        retry_seconds: how long Temporal retries one notice before it is recorded as failed.
        request_timeout: seconds one POST may take.
        slack: the Slack app's channel (`SIGNOFF_SLACK_*`), one more channel; None: none.

    Raises:
        ConfigError: a URL is not an absolute http(s) URL.
    """

    urls: tuple[str, ...] = field(repr=False)
    secret: bytes | None = field(default=None, repr=False)
    ui_root: str | None = None
    inbox_root: str | None = None
    namespace: str = "default"
    cli_options: str = ""
    retry_seconds: float = 300.0
    request_timeout: float = 10.0
    slack: SlackChannel | None = None

    def __post_init__(self) -> None:
        for number, entry in enumerate(self.urls, 1):
            url = target(entry)[0]
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                shown = channel_label(url) if parts.scheme else url.split("/")[0][:40] + "/..."
                raise ConfigError(
                    f"{NOTIFY_URLS_ENV}: entry {number} ({shown}) is not an absolute http(s) URL with a host, "
                    "e.g. https://hooks.example.com/... (or slack+https://... for Slack's format)"
                )
        object.__setattr__(self, "urls", tuple(dict.fromkeys(self.urls)))

    @property
    def plan(self) -> NotifyPlan:
        """What a run records: the channels' fingerprints and the retry budget."""
        channels = [channel_id(u) for u in self.urls] + ([self.slack.fingerprint] if self.slack else [])
        return NotifyPlan(channels=channels, retry_seconds=self.retry_seconds)

    def url(self, channel: str) -> str | None:
        return next((u for u in self.urls if channel_id(u) == channel), None)

    def describe(self) -> str:
        """For the worker's startup line: hosts only."""
        signed = "signed" if self.secret else "unsigned"
        channels = [f"{', '.join(channel_label(u) for u in self.urls)} ({signed})"] if self.urls else []
        channels += [self.slack.describe()] if self.slack else []
        return f"notifications to {' and '.join(channels)}"

    @classmethod
    def from_env(
        cls, env: Environment, address: str, namespace: str, ui_base: str | None = None
    ) -> NotifyConfig | None:
        """`SIGNOFF_NOTIFY_URLS`, `SIGNOFF_NOTIFY_SECRET_FILE` and the Slack app's channel
        (`SIGNOFF_SLACK_BOT_TOKEN_FILE`, `SIGNOFF_SLACK_CHANNEL`); None when neither is set.

        Args:
            address, namespace: where the runs are, for links and commands.
            ui_base: the Web UI this process knows of (the embedded dev server's);
                `SIGNOFF_UI_URL` wins, and a local server's UI is assumed otherwise.
        """
        urls = env.read(NOTIFY_URLS_ENV)
        slack = SlackChannel.from_env(env)
        if not urls and slack is None:
            return None
        path = env.read(NOTIFY_SECRET_FILE_ENV)
        options = "" if address == DEFAULT_ADDRESS else f" --address {address}"
        options += "" if namespace == "default" else f" --namespace {namespace}"
        return cls(
            urls=urls,
            secret=read_notify_secret(path) if path else None,
            ui_root=ui_root(address, ui_base, env),
            inbox_root=inbox_root(env),
            namespace=namespace,
            cli_options=options,
            slack=slack,
        )


def read_notify_secret(path: Path) -> bytes:
    """The signing key: the file's bytes without surrounding whitespace.

    Raises:
        ConfigError: the file cannot be read, is empty, or is implausibly large.
    """
    return read_secret_bytes(path, NOTIFY_SECRET_FILE_ENV)


def compose(
    config: NotifyConfig, input: NotifyInput, workflow_id: str, run_id: str, above: Sequence[str] = ()
) -> Notice:
    """The notice for one event of a run, with its link and decide commands (`above`: for a
    sub-agent's run, the runs above it, the top first)."""
    request = input.request
    commands: list[str] = []
    if input.event in WAITING_KINDS and request is not None:
        call_id, digest = str(request.get("call_id", "")), str(request.get("arguments_digest", ""))
        commands = list(decide_commands(workflow_id, call_id, digest, config.cli_options))
    ui_url = ui_link(workflow_id, config.namespace, "", config.ui_root) if config.ui_root else None
    call_id = str((request or input.decision or {}).get("call_id", ""))
    inbox_url = inbox_link(workflow_id, call_id, config.inbox_root) if call_id else None
    path = [*above, workflow_id] if above else None
    top_ui_url = ui_link(above[0], config.namespace, "", config.ui_root) if above and config.ui_root else None
    text = notice_text(
        input.event, workflow_id, request, input.decision, ui_url, commands, inbox_url, path or (), top_ui_url
    )
    return Notice(
        event=input.event,
        workflow_id=workflow_id,
        run_id=run_id,
        agent=input.agent,
        request=request,
        decision=input.decision,
        text=text,
        ui_url=ui_url,
        inbox_url=inbox_url,
        commands=commands,
        sent_at=datetime.now(UTC),
        path=path,
        top_ui_url=top_ui_url,
    )


async def deliver(config: NotifyConfig | None, input: NotifyInput) -> NotifyOutput:
    """POST one notice to one channel; an ApplicationError says whether to retry."""
    if config is not None and config.slack is not None and input.channel == config.slack.fingerprint:
        info = activity.info()
        workflow_id = info.workflow_id or ""
        call_id = str((input.request or input.decision or {}).get("call_id", ""))
        inbox_url = inbox_link(workflow_id, call_id, config.inbox_root) if call_id and config.inbox_root else None
        status = await config.slack.deliver(
            input.event, workflow_id, input.agent, input.request, input.decision, inbox_url
        )
        return NotifyOutput(status=status)
    url = config.url(input.channel) if config else None
    if config is None or url is None:
        raise ApplicationError(
            f"channel {input.channel} is not among this worker's {NOTIFY_URLS_ENV} (its configuration changed "
            "since the run started)",
            type="NotifyChannelUnknown",
            non_retryable=True,
        )
    info = activity.info()
    workflow_id, run_id = info.workflow_id or "", info.workflow_run_id or ""
    notice = compose(config, input, workflow_id, run_id, await runs_above(workflow_id))
    url, slack = target(url)
    body = json.dumps(slack_message(notice)).encode() if slack else notice.model_dump_json().encode()
    delivery = f"{workflow_id}/{run_id}/{input.seq}"
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "signoff-notify/1",
        EVENT_HEADER: input.event,
        DELIVERY_HEADER: delivery,
    }
    if config.secret:
        headers[SIGNATURE_HEADER] = signature(config.secret, int(time.time()), delivery, body)
    return await _post(url, body, headers, config.request_timeout)


async def runs_above(workflow_id: str) -> list[str]:
    """The runs above this activity's run when it is a sub-agent's (the top first): asked of
    the server only for an id a child's could be (`<parent>--<call>`); empty when it cannot say."""
    if "--" not in workflow_id:
        return []
    try:
        client = activity.client()
    except RuntimeError:  # an activity run without a worker's client (a test's environment)
        return []
    return await ancestors(client, await parent_of(client, workflow_id))


async def _post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> NotifyOutput:
    label = channel_label(url)
    try:
        async with (
            httpx.AsyncClient(timeout=timeout, follow_redirects=False) as client,
            client.stream("POST", url, content=body, headers=headers) as response,
        ):
            pass  # the answer's body is not read: only its status counts
    except httpx.HTTPError as exc:  # the message may hold the URL: say only what kind of failure
        raise ApplicationError(f"{label}: {type(exc).__name__}", type="NotifyUnreachable") from None
    status = response.status_code
    if 200 <= status < 300:
        return NotifyOutput(status=status)
    retryable = status in RETRYABLE_STATUSES or status >= 500
    raise ApplicationError(
        f"{label} answered HTTP {status}"
        + ("; redirects are not followed: configure the final URL" if 300 <= status < 400 else ""),
        type="NotifyRejected",
        non_retryable=not retryable,
        next_retry_delay=_retry_after(response),
    )


def _retry_after(response: httpx.Response) -> timedelta | None:
    value = response.headers.get("retry-after", "")
    if not value.isdigit():
        return None
    return min(timedelta(seconds=int(value)), MAX_RETRY_AFTER)
