"""The signoff operator CLI: its entry point, the command table, and what every command needs.

It is a Temporal client like any other (CONTRACT.md): it starts `AgentRun`, reads its
typed queries and decides calls through the validated update `submit_tool_approval`,
always bound to the digest of what the operator was shown. Configured by
TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and SIGNOFF_TASK_QUEUE; `--address` and
`--namespace` override. Exit codes: 0 ok, 1 the operation failed, 2 usage or refused.

One module per concept: `runs` (run, pending, watch, result), `chat` (a session), `decide` and `bulk`
(approve, deny), `audit`, `govern` (extend, grants, revoke), `demo_run`, `token`, `keys`
(keys new, sign), `replay` and `who` (the name, token or key a decision is made with);
`follow` follows a run; `render` and `calls` say how things look; `style` is the inert
console; `shown` remembers what this operator saw; `signoff.operator.run_client` speaks to a run.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import functools
import os
import signal
import sys
import traceback
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from temporalio.client import Client
from temporalio.service import RPCError

from signoff.cli.answer import cmd_answer
from signoff.cli.args import build_parser
from signoff.cli.audit import cmd_audit
from signoff.cli.chat import cmd_chat
from signoff.cli.codec import cmd_codec_server
from signoff.cli.decide import cmd_decide
from signoff.cli.demo_run import cmd_demo
from signoff.cli.govern import cmd_extend, cmd_grants, cmd_rearm, cmd_revoke
from signoff.cli.inbox import cmd_inbox
from signoff.cli.keys import cmd_delegate, cmd_keys, cmd_sign
from signoff.cli.replay import cmd_replay
from signoff.cli.runs import cmd_pending, cmd_result, cmd_run, cmd_watch
from signoff.cli.shown import ShownCalls
from signoff.cli.style import Console
from signoff.cli.token import cmd_token
from signoff.config.environment import DEFAULT_ADDRESS, Environment
from signoff.errors import CommandError, ConfigError
from signoff.runtime.connection import ConnectionSettings, connect
from signoff.runtime.storage import storage_problem
from signoff.text.neutral import neutralise
from signoff.views.links import ui_link


@dataclasses.dataclass(frozen=True)
class CommandContext:
    """What every command needs: where Temporal is, where to write, and the environment
    (`signoff.config.environment`) its other settings come from."""

    settings: ConnectionSettings
    console: Console
    ui_base: str | None = None
    env: Environment = dataclasses.field(default_factory=Environment)

    @functools.cached_property
    def shown(self) -> ShownCalls:
        """What this operator was shown on this server and namespace."""
        return ShownCalls(self.settings.address, self.settings.namespace)

    def link(self, workflow_id: str) -> str | None:
        return ui_link(workflow_id, self.settings.namespace, self.settings.address, self.ui_base, self.env)

    @property
    def options(self) -> str:
        """Connection flags another terminal needs to reach the same runs."""
        flags = f" --profile {self.settings.profile}" if self.settings.profile else ""
        flags += "" if self.settings.address == DEFAULT_ADDRESS else f" --address {self.settings.address}"
        return flags + ("" if self.settings.namespace == "default" else f" --namespace {self.settings.namespace}")

    async def connect(self) -> Client:
        try:
            return await connect(self.settings)
        except ConfigError as exc:  # not reachable (ConnectError), or the payload store cannot work
            hint = (
                "Check the address, TLS settings (TEMPORAL_TLS_*) and API key, or use another --profile."
                if self.settings.configured
                else "Start it (e.g. `python worker.py` starts a local dev server) or set TEMPORAL_ADDRESS / --address."
            )
            raise CommandError(f"{exc}\n{hint}") from None


COMMANDS: dict[str, Callable[[argparse.Namespace, CommandContext], Coroutine[Any, Any, int]]] = {
    "run": cmd_run,
    "pending": cmd_pending,
    "approve": cmd_decide,
    "deny": cmd_decide,
    "watch": cmd_watch,
    "chat": cmd_chat,
    "result": cmd_result,
    "audit": cmd_audit,
    "extend": cmd_extend,
    "grants": cmd_grants,
    "revoke": cmd_revoke,
    "rearm": cmd_rearm,
    "answer": cmd_answer,
    "demo": cmd_demo,
    "inbox": cmd_inbox,
    "sign": cmd_sign,
    "replay": cmd_replay,
}


def settings_from(args: argparse.Namespace, env: Environment) -> ConnectionSettings:
    """Temporal's client configuration (profile, environment), the flags on top."""
    try:
        return ConnectionSettings.load(env, profile=args.profile, address=args.address, namespace=args.namespace)
    except ConfigError as exc:
        raise CommandError(str(exc), 2) from None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code (0 ok, 1 failed, 2 usage).

    Called without `argv` (the `signoff` console script, `python client.py`), it ends the
    process itself: see `_exit`.
    """
    if argv is not None:
        return _main(argv)
    try:
        code = _main(None)
    except Exception:  # a bug: its traceback is shown, then the safe exit
        traceback.print_exc()
        code = 1
    _exit(code)
    return code  # not reached


def _main(argv: Sequence[str] | None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else 2
    env = Environment()
    if args.command == "token":  # tokens need no server, nor its settings
        return asyncio.run(cmd_token(args, env))
    if args.command == "delegate":  # signed with your key: no server
        try:
            return cmd_delegate(args, env)
        except CommandError as exc:
            print(f"signoff: {neutralise(str(exc))}", file=sys.stderr)
            return exc.code
    if args.command == "keys":
        return cmd_keys(args)
    if args.command == "slack":  # the app's manifest: no server either
        from signoff.cli.slack import cmd_slack

        return cmd_slack(args, env)
    try:
        if args.command == "codec-server":  # its keys, no Temporal connection
            return cmd_codec_server(args, env)
        ctx = CommandContext(settings_from(args, env), Console(env=env), env=env)
        return asyncio.run(COMMANDS[args.command](args, ctx))
    except CommandError as exc:  # its text may quote the run (call ids, reasons): inert
        print(f"signoff: {neutralise(str(exc))}", file=sys.stderr)
        return exc.code
    except (ConfigError, RuntimeError, ValueError, KeyError) as exc:  # a stored or encrypted payload it cannot read
        if (problem := storage_problem(exc)) is None:
            raise
        print(f"signoff: {problem}", file=sys.stderr)
        return 1
    except RPCError as exc:
        print(f"signoff: Temporal said: {neutralise(exc.message)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("signoff: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `signoff pending | head`: the reader has what it wanted
        return _reader_gone()


def _reader_gone() -> int:
    """Leave quietly when standard output's reader has gone, as a process SIGPIPE ended would (141)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # the interpreter's last flush must not fail again
    os.close(devnull)
    return 128 + signal.SIGPIPE


def _exit(code: int) -> None:
    """Flush and leave without interpreter teardown.

    The Temporal client's Rust threads can outlive the event loop and abort a finalizing
    interpreter (`PyGILState_Release: thread state ... must be current`, SIGABRT), which
    turned about one exit in five into code 134 (temporalio/sdk-python#300). Everything of
    ours is closed by now: the event loop, servers the demo started, the worker.
    """
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        code = _reader_gone()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
