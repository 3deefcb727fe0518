"""`signoff slack manifest`: the Slack app's manifest, to paste into Slack's app settings.

The manifest asks for the bot scopes the app uses and nothing more: `chat:write` (post and
update the calls' messages, and private refusals), `channels:history` and `groups:history`
(a worker finds a call's message again by its metadata), and turns on interactivity with the
inbox's `POST /slack/interactions` as its request URL (`--url`, or `SIGNOFF_INBOX_URL`: the
public address Slack reaches the inbox at).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from signoff.config.environment import INBOX_URL_ENV, Environment
from signoff.views.slack import INTERACTIONS_PATH

SCOPES = ("chat:write", "channels:history", "groups:history")


def add_slack_parser(sub: Any) -> None:
    p = sub.add_parser("slack", help="the Slack app: its manifest")
    actions = p.add_subparsers(dest="slack_command", required=True, metavar="ACTION")
    manifest = actions.add_parser("manifest", help="print the Slack app's manifest (JSON) to paste into Slack")
    manifest.add_argument(
        "--url", help=f"the inbox's public URL, as Slack reaches it (default {INBOX_URL_ENV})", default=None
    )
    manifest.add_argument("--name", default="signoff", help="the app's name in Slack (default signoff)")


def manifest(url: str, name: str = "signoff") -> dict[str, Any]:
    """The app manifest for an inbox served at `url`."""
    return {
        "display_information": {"name": name, "description": "Decide the calls signoff's agents wait on"},
        "features": {"bot_user": {"display_name": name, "always_online": True}},
        "oauth_config": {"scopes": {"bot": list(SCOPES)}},
        "settings": {
            "interactivity": {"is_enabled": True, "request_url": url.rstrip("/") + INTERACTIONS_PATH},
            "org_deploy_enabled": False,
            "socket_mode_enabled": False,
            "token_rotation_enabled": False,
        },
    }


def cmd_slack(args: argparse.Namespace, env: Environment) -> int:
    url = args.url or env.read(INBOX_URL_ENV)
    if not url or not url.startswith("https://"):
        shown = repr(url) if url else "none"
        print(
            f"signoff: Slack needs the inbox's public https URL: pass --url https://... or set {INBOX_URL_ENV} "
            f"(given: {shown})",
            file=sys.stderr,
        )
        return 2
    print(json.dumps(manifest(url, args.name), indent=2))
    return 0
