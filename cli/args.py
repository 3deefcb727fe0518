"""The `signoff` command line: its commands, arguments and flags (argparse, nothing run)."""

from __future__ import annotations

import argparse
import getpass
import os
from typing import Any

from signoff.cli.demo import DEMO_PROMPT
from signoff.cli.token import add_token_parser


def default_approver() -> str | None:
    """$USER, or the login name, for the audit trail."""
    try:
        return os.environ.get("USER") or getpass.getuser()
    except (OSError, KeyError):  # no user database entry (some containers)
        return None


def _connection_flags() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--address", help="Temporal frontend host:port (env TEMPORAL_ADDRESS; localhost:7233)")
    common.add_argument("--namespace", help="Temporal namespace (env TEMPORAL_NAMESPACE; default)")
    common.add_argument("--profile", help="profile of the Temporal config file (env TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE)")
    return common


def _approver(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--approver", default=default_approver(), help="name for the audit trail (default: $USER)")


def _add_run(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("run", parents=[common], help="start an agent run")
    p.add_argument("prompt", help="what to ask the agent")
    p.add_argument("--agent", default="default", help="agent name the worker knows (default: default)")
    p.add_argument("--id", help="workflow id (default: signoff-<random>)")
    p.add_argument("--task-queue", help="task queue (env SIGNOFF_TASK_QUEUE; signoff)")
    p.add_argument("--max-rounds", type=int, help="most model requests in the run")
    p.add_argument("--approval-timeout", type=float, metavar="SECS", help="deny calls still undecided after SECS")
    p.add_argument("--wait", action="store_true", help="follow the run and answer approvals here (y/n/reason)")
    _approver(p)


def _add_decide(sub: Any, common: argparse.ArgumentParser, name: str) -> None:
    p = sub.add_parser(name, parents=[common], help=f"{name} a pending tool call")
    p.add_argument("run", help="workflow id of the run")
    p.add_argument("call", nargs="?", help="call id (default: the only pending call)")
    p.add_argument("--all", action="store_true", help=f"{name} every pending call")
    if name == "approve":
        p.add_argument("--edit", metavar="JSON", help="run the tool with these arguments (a JSON object) instead")
    else:
        p.add_argument("--reason", help="what the model is told: Rejected: <reason>")
    _approver(p)


def _add_run_reader(sub: Any, common: argparse.ArgumentParser, name: str, help: str) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(name, parents=[common], help=help)
    p.add_argument("run", help="workflow id of the run")
    return p


def build_parser() -> argparse.ArgumentParser:
    """The parser; `command` names the subcommand chosen."""
    common = _connection_flags()
    parser = argparse.ArgumentParser(prog="signoff", description="Operate signoff agent runs on Temporal.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_run(sub, common)
    p = sub.add_parser("pending", parents=[common], help="list the calls awaiting approval")
    p.add_argument("--json", action="store_true", help="print JSON")
    _add_decide(sub, common, "approve")
    _add_decide(sub, common, "deny")
    _add_run_reader(sub, common, "watch", "follow a run's events until it finishes")
    p = _add_run_reader(sub, common, "result", "wait for and print a run's result")
    p.add_argument("--json", action="store_true", help="print the raw result JSON")
    p = sub.add_parser("demo", parents=[common], help="try it: server, worker, model and a run to approve")
    p.add_argument("--yes", action="store_true", help="approve without asking")
    p.add_argument("--prompt", default=DEMO_PROMPT, help="what to ask the default agent")
    _approver(p)
    add_token_parser(sub, common)
    return parser
