"""`signoff token issue | verify`: approver tokens for teams without an identity provider.

`issue` signs an HS256 token with the shared secret file (the worker's
`SIGNOFF_APPROVER_KEYS`) and prints only the token, so it can be captured:
`export SIGNOFF_APPROVER_TOKEN=$(signoff token issue --sub alice --groups sre)`.
`verify` checks any token (HS256 or an identity provider's) against the keys a worker would
use, and prints who it proves. Neither needs Temporal. Exit codes: 0 ok, 1 failed, 2 usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from signoff.approval.identity import ApproverKeys, issue_token
from signoff.config.environment import (
    APPROVER_AUDIENCE_ENV,
    APPROVER_ISSUER_ENV,
    APPROVER_KEYS_ENV,
    APPROVER_TOKEN_ENV,
    MAX_DURATION,
    Environment,
    read_duration,
)
from signoff.errors import ConfigError, TokenError, UsageError

MAX_TTL = MAX_DURATION


def parse_duration(text: str) -> timedelta:
    """`90s`, `15m`, `1h`, `2d` (a bare number is seconds); positive, at most 366 days.

    Raises:
        argparse.ArgumentTypeError: anything else, with an example of what works.
    """
    try:
        return read_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_token_parser(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add `token issue` and `token verify` to the CLI's subcommands.

    `common` (the Temporal connection flags) is not offered: tokens need no server.
    """
    token = subparsers.add_parser("token", help="issue or check approver tokens (JWT)")
    actions = token.add_subparsers(dest="token_command", required=True, metavar="ACTION")
    issue = actions.add_parser("issue", help="print an HS256 approver token")
    issue.add_argument("--sub", required=True, help="the approver's name (the token's subject)")
    issue.add_argument(
        "--groups",
        action="append",
        default=[],
        metavar="G[,G...]",
        help="groups for `group:<name>` policies; repeat or separate with commas",
    )
    issue.add_argument(
        "--ttl", type=parse_duration, default=timedelta(hours=1), help="lifetime, e.g. 90s, 15m, 1h, 2d (default 1h)"
    )
    _key_flags(issue, "the HS256 secret file")
    check = actions.add_parser("verify", help="check a token against the approver keys")
    check.add_argument("token", nargs="?", help=f"the token (default: ${APPROVER_TOKEN_ENV}; - reads standard input)")
    _key_flags(check, "the approver key file: HS256 secret, PEM public keys or JWKS")


def _key_flags(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--key-file", metavar="FILE", help=f"{what} (default: ${APPROVER_KEYS_ENV})")
    parser.add_argument("--issuer", help=f"the token's issuer, `iss` (default: ${APPROVER_ISSUER_ENV})")
    parser.add_argument("--audience", help=f"the token's audience, `aud` (default: ${APPROVER_AUDIENCE_ENV})")


def _groups(values: list[str]) -> list[str]:
    return [group.strip() for value in values for group in value.split(",") if group.strip()]


def _issue(args: argparse.Namespace, key_file: str, env: Environment) -> int:
    token = issue_token(
        Path(key_file),
        args.sub,
        _groups(args.groups),
        args.ttl,
        args.issuer or env.read(APPROVER_ISSUER_ENV),
        args.audience or env.read(APPROVER_AUDIENCE_ENV),
    )
    print(token)
    return 0


def _verify(args: argparse.Namespace, key_file: str, env: Environment) -> int:
    token = args.token or env.read(APPROVER_TOKEN_ENV) or ""
    if token == "-":
        token = sys.stdin.read()
    if not token.strip():
        raise UsageError(f"give the token to check, or set {APPROVER_TOKEN_ENV}")
    keys = ApproverKeys.load(
        key_file, args.issuer or env.read(APPROVER_ISSUER_ENV), args.audience or env.read(APPROVER_AUDIENCE_ENV)
    )
    identity = keys.verify(token)
    print(json.dumps(identity.model_dump(mode="json"), indent=2))
    return 0


async def cmd_token(args: argparse.Namespace, env: Environment | None = None) -> int:
    """Run `token issue` or `token verify`; errors go to stderr (1 failed, 2 usage)."""
    env = env or Environment()
    key_file = args.key_file or env.read(APPROVER_KEYS_ENV)
    try:
        if key_file is None:
            raise UsageError(f"name the key file with --key-file or {APPROVER_KEYS_ENV}")
        return (_issue if args.token_command == "issue" else _verify)(args, key_file, env)
    except UsageError as exc:
        print(f"signoff: {exc}", file=sys.stderr)
        return 2
    except TokenError as exc:
        print(f"signoff: token refused ({exc.reason}): {exc}", file=sys.stderr)
        return 1
    except ConfigError as exc:
        print(f"signoff: {exc}", file=sys.stderr)
        return 1
