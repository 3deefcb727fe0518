"""The `signoff` command line: its commands, arguments and flags (argparse, nothing run)."""

from __future__ import annotations

import argparse
import getpass
import importlib.metadata
from datetime import timedelta
from typing import Any

from signoff.approval.requests import MAX_SECONDS, GrantMatch
from signoff.cli.binding import MIN_PREFIX, digest_text
from signoff.cli.codec import add_codec_parser
from signoff.cli.demo import DEMO_PROMPT
from signoff.cli.inbox import add_inbox_parser
from signoff.cli.replay import add_replay_parser
from signoff.cli.slack import add_slack_parser
from signoff.cli.token import add_token_parser, parse_duration
from signoff.config.environment import (
    APPROVER_KEY_FILE_ENV,
    APPROVER_KID_ENV,
    APPROVER_TOKEN_ENV,
    USER_ENV,
    Environment,
)


def _version() -> str:
    try:
        return importlib.metadata.version("signoff")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "(not installed)"


def default_approver(env: Environment | None = None) -> str | None:
    """$USER, or the login name, for the audit trail."""
    try:
        return (env or Environment()).read(USER_ENV) or getpass.getuser()
    except (OSError, KeyError):  # no user database entry (some containers)
        return None


def identity(args: argparse.Namespace, env: Environment | None = None) -> tuple[str | None, str | None]:
    """(approver, token) to send. A token decides as its subject: the approver goes with it
    only when given (`--approver`), so it cannot conflict; without a token, $USER."""
    env = env or Environment()
    token = getattr(args, "token", None) or env.read(APPROVER_TOKEN_ENV)
    approver = getattr(args, "approver", None)
    return (approver if token else approver or default_approver(env)), token


def _digest(text: str) -> str:
    try:
        return digest_text(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0
    if not 0 < value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of seconds between 0 and 366 days")
    return value


def _age(text: str) -> timedelta:
    try:
        return parse_duration(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an age; use e.g. 90s, 15m, 1h or 2d") from None


def _connection_flags() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--address", help="Temporal frontend host:port (env TEMPORAL_ADDRESS; localhost:7233)")
    common.add_argument("--namespace", help="Temporal namespace (env TEMPORAL_NAMESPACE; default)")
    common.add_argument(
        "--profile", help="profile of the Temporal config file (env TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE)"
    )
    return common


def _who(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--approver", help="name for the audit trail (default: $USER; with a token: its subject)")
    parser.add_argument("--token", help=f"approver token (JWT) proving who decides (default: ${APPROVER_TOKEN_ENV})")
    parser.add_argument(
        "--key-file",
        metavar="FILE",
        help=f"sign decisions on verified calls with this key (default: ${APPROVER_KEY_FILE_ENV})",
    )
    parser.add_argument("--kid", help=f"the key's id in the workers' JWKS (default: ${APPROVER_KID_ENV})")


def _add_run(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("run", parents=[common], help="start an agent run")
    p.add_argument("prompt", help="what to ask the agent")
    p.add_argument("--agent", default="default", help="agent name the worker knows (default: default)")
    p.add_argument("--id", help="workflow id (default: signoff-<random>)")
    p.add_argument("--task-queue", help="task queue (env SIGNOFF_TASK_QUEUE; signoff)")
    p.add_argument("--max-rounds", type=int, help="most model requests in the run")
    p.add_argument("--approval-timeout", type=float, metavar="SECS", help="deny calls still undecided after SECS")
    p.add_argument("--wait", action="store_true", help="follow the run and answer approvals here (y/n/reason)")
    _who(p)


def _add_chat(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("chat", parents=[common], help="talk to an agent in a durable session (approvals inline)")
    p.add_argument("--id", help="the session's workflow id: reconnect, or start it (default: a new chat-<random>)")
    p.add_argument("--agent", default="default", help="agent name the worker knows, for a new session")
    p.add_argument("--task-queue", help="task queue, for a new session (env SIGNOFF_TASK_QUEUE; signoff)")
    p.add_argument("--max-rounds", type=int, help="most model requests per turn")
    _who(p)


def _add_decide(sub: Any, common: argparse.ArgumentParser, name: str) -> None:
    p = sub.add_parser(name, parents=[common], help=f"{name} pending tool calls (of one run, or by --query)")
    p.add_argument("run", nargs="?", help="workflow id of the run (or use --query)")
    p.add_argument("call", nargs="?", help="call id (default: the only pending call, if you were shown it)")
    p.add_argument("--all", action="store_true", help=f"{name} every pending call you were shown")
    p.add_argument(
        "--digest",
        type=_digest,
        metavar="HEX",
        help=f"the call's arguments_digest (or its first {MIN_PREFIX}+ hex characters)",
    )
    p.add_argument("--yes", action="store_true", help="do not ask before deciding calls that are bound")
    p.add_argument(
        "--reason",
        help="recorded in the audit trail" + ("" if name == "approve" else "; the model is told: Rejected: <reason>"),
    )
    bulk = p.add_argument_group("deciding across runs")
    bulk.add_argument("--query", metavar="VISIBILITY_QUERY", help="decide in every waiting run this query matches")
    bulk.add_argument("--tool", help="with --query: only calls of this tool")
    bulk.add_argument("--older-than", type=_age, metavar="AGE", help="with --query: only calls waiting longer (1h)")
    p.add_argument("--json", action="store_true", help="print the run's answer as JSON")
    if name == "approve":
        p.add_argument(
            "--edit",
            metavar="JSON",
            help="run the tool with these arguments (a JSON object, checked against its schema) instead",
        )
        p.add_argument(
            "--grant",
            choices=[m.value for m in GrantMatch],
            help="also approve later calls of this run: of the tool, or with these exact arguments",
        )
        p.add_argument("--grant-ttl", type=parse_duration, metavar="TTL", help="the grant lasts this long (1h)")
        p.add_argument("--grant-uses", type=int, metavar="N", help="the grant approves at most N calls")
    _who(p)


def _add_reader(sub: Any, common: argparse.ArgumentParser, name: str, help: str) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(name, parents=[common], help=help)
    p.add_argument("run", help="workflow id of the run")
    return p


def _add_governance(sub: Any, common: argparse.ArgumentParser) -> None:
    p = _add_reader(sub, common, "audit", "print a run's audit trail of decisions; --verify checks it")
    p.add_argument("--verify", action="store_true", help="recompute the hash chain and check it against the history")
    p.add_argument("--json", action="store_true", help="print the trail as JSON (to export it)")
    p.add_argument("--file", metavar="TRAIL_JSON", help="read the trail from an export instead of the run")
    p = _add_reader(sub, common, "extend", "move a waiting call's deadline later")
    p.add_argument("call", help="call id")
    p.add_argument("--seconds", type=_positive, required=True, metavar="N", help="move the deadline N seconds later")
    p.add_argument("--json", action="store_true", help="print the run's answer as JSON")
    _who(p)
    p = _add_reader(sub, common, "rearm", "re-open an expired call (on_timeout = hold) with a new deadline")
    p.add_argument("call", help="call id")
    p.add_argument(
        "--deadline", type=parse_duration, metavar="TTL", help="the new deadline, from now (2h; default: its policy's)"
    )
    p.add_argument("--json", action="store_true", help="print the re-opened request as JSON")
    _who(p)
    p = _add_reader(sub, common, "grants", "list a run's grants (approve-and-remember)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p = _add_reader(sub, common, "revoke", "end a grant at once")
    p.add_argument("grant_id", help="the grant's id (see `signoff grants RUN`)")


def _add_keys(subparsers: Any) -> None:
    keys = subparsers.add_parser("keys", help="make a signing key for verified decisions")
    actions = keys.add_subparsers(dest="keys_command", required=True, metavar="ACTION")
    new = actions.add_parser("new", help="make a key pair; print the public JWKS entry for the workers")
    new.add_argument("--sub", required=True, help="whom the key signs as (the approver's name)")
    new.add_argument(
        "--groups",
        action="append",
        default=[],
        metavar="G[,G...]",
        help="groups it may sign for (`group:<name>` policies); repeat or separate with commas",
    )
    new.add_argument("--kid", help="the key's id (default: <sub>-<random>)")
    new.add_argument("--type", choices=["ed25519", "ec", "rsa"], default="ed25519", help="key type (default ed25519)")
    new.add_argument("--out", required=True, metavar="FILE", help="where to write the private key (0600)")
    new.add_argument("--add-to", metavar="JWKS_FILE", help="also add the public entry to this JWKS file")
    new.add_argument(
        "--service",
        action="store_true",
        help='mark it "signoff_service": it may sign for any subject (a service such as the inbox)',
    )


def _add_delegate(sub: Any) -> None:
    p = sub.add_parser("delegate", help="sign a delegation: another person's decisions count as your vote, for a while")
    p.add_argument("--to", required=True, metavar="SUB", help="whose decisions count as yours")
    p.add_argument("--tools", action="append", default=[], metavar="T[,T...]", help="only these tools (default all)")
    p.add_argument("--from", dest="start", required=True, metavar="ISO", help="when it starts (2026-12-24T09:00Z)")
    p.add_argument("--until", required=True, metavar="ISO", help="when it ends (at most 366 days after --from)")
    _who(p)


def _add_answer(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("answer", parents=[common], help="answer the question a run's MCP server asked in a call")
    p.add_argument("run", help="workflow id of the run")
    p.add_argument("call", help="call id (its request has kind input)")
    p.add_argument("--json", metavar="ANSWER", help="the answer, JSON fitting the server's schema (URL mode: true)")
    p.add_argument("--decline", action="store_true", help="decline to answer (the server is told)")
    p.add_argument("--cancel", action="store_true", help="dismiss the question without a choice (the server is told)")
    p.add_argument("--reason", help="recorded in the audit trail")
    p.add_argument("--output-json", action="store_true", help="print the run's answer as JSON")
    _who(p)


def _add_sign(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("sign", parents=[common], help="print a signed decision on a pending call (for the Web UI)")
    p.add_argument("run", help="workflow id of the run")
    p.add_argument("call", help="call id")
    p.add_argument("--deny", action="store_true", help="sign a denial (default: an approval)")
    p.add_argument("--reason", help="recorded in the audit trail; for a denial, the model is told it")
    p.add_argument("--edit", metavar="JSON", help="approve running these arguments (a JSON object) instead")
    p.add_argument(
        "--respond",
        metavar="TEXT",
        help="answer the call with TEXT as its result instead of running it (a policy with respond = true)",
    )
    p.add_argument(
        "--grant", choices=[m.value for m in GrantMatch], help="the approval also grants later matching calls"
    )
    p.add_argument("--grant-ttl", type=parse_duration, metavar="TTL", help="the grant lasts this long (1h)")
    p.add_argument("--grant-uses", type=int, metavar="N", help="the grant approves at most N calls")
    p.add_argument("--ttl", type=parse_duration, metavar="TTL", help="how long it may be sent (default 1h)")
    _who(p)


def build_parser() -> argparse.ArgumentParser:
    """The parser; `command` names the subcommand chosen."""
    common = _connection_flags()
    parser = argparse.ArgumentParser(prog="signoff", description="Operate signoff agent runs on Temporal.")
    parser.add_argument("--version", action="version", version=f"signoff {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_run(sub, common)
    p = sub.add_parser("pending", parents=[common], help="list the calls awaiting approval, whole")
    p.add_argument("run", nargs="?", help="only this run (default: every waiting run)")
    p.add_argument("--json", action="store_true", help="print JSON")
    _add_decide(sub, common, "approve")
    _add_decide(sub, common, "deny")
    _add_reader(sub, common, "watch", "follow a run live (the model's text as it comes, its events) until it finishes")
    _add_chat(sub, common)
    p = _add_reader(sub, common, "result", "print a run's result (waiting for it, saying what it waits for)")
    p.add_argument("--json", action="store_true", help="print the raw result JSON")
    p.add_argument("--no-wait", action="store_true", help="if the run has not finished, say so and exit 1")
    _add_governance(sub, common)
    p = sub.add_parser("demo", parents=[common], help="try it: server, worker, model and a run to approve")
    p.add_argument("--yes", action="store_true", help="approve without asking")
    p.add_argument("--inbox", action="store_true", help="also serve the inbox on 127.0.0.1 to decide in a browser")
    p.add_argument("--prompt", default=DEMO_PROMPT, help="what to ask the default agent")
    _who(p)
    add_token_parser(sub, common)
    add_codec_parser(sub)
    _add_keys(sub)
    _add_sign(sub, common)
    _add_answer(sub, common)
    _add_delegate(sub)
    add_replay_parser(sub, common)
    add_inbox_parser(sub, common)
    add_slack_parser(sub)
    return parser
