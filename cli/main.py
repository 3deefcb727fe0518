"""The signoff operator CLI: `signoff run | pending | approve | deny | watch | result | demo`.

It is a Temporal client like any other (CONTRACT.md): it starts `AgentRun`, reads its
queries and decides calls through the validated update `submit_tool_approval`.
Configured by TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and SIGNOFF_TASK_QUEUE; `--address`
and `--namespace` override. Exit codes: 0 ok, 1 the operation failed, 2 usage.
How things look lives in `signoff.cli_output`; this module decides what to do.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import sys
import traceback
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from datetime import timedelta
from typing import Any

from pydantic import ValidationError
from temporalio.client import (
    Client,
    WorkflowExecution,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
)
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from signoff.approvals import ToolApprovalResponse
from signoff.chat.base import ChatClient
from signoff.cli.args import build_parser
from signoff.cli.demo import configured_model, demo_banner, demo_model, demo_workspace
from signoff.cli.input import Answer, LineReader, parse_answer
from signoff.cli.output import (
    Console,
    approval_block,
    approval_prompt,
    final_text_seqs,
    gated_call_seqs,
    render_ack,
    render_event,
    render_pending,
    render_result,
    ui_link,
    ui_root,
)
from signoff.cli.token import cmd_token
from signoff.contract import (
    QUERY_EVENTS,
    QUERY_PENDING,
    STATUS_AWAITING,
    UPDATE_APPROVAL,
    WORKFLOW_TYPE,
    AgentRunInput,
    AgentRunResult,
    DecisionAck,
    RunOptions,
)
from signoff.defaults import default_agent
from signoff.errors import ConfigError
from signoff.runtime.connection import ConnectionSettings, connect
from signoff.runtime.devserver import DEFAULT_ADDRESS, EmbeddedServer
from signoff.runtime.storage import storage_problem
from signoff.runtime.worker import WorkerSettings, build_worker, open_client
from signoff.tools.scope import WorkspaceScope
from signoff.workflows.record import SIGNOFF_PENDING_TOOLS as PENDING_TOOLS
from signoff.workflows.run_input import format_validation_error

POLL_SECONDS = 0.5
QUERY_TIMEOUT = timedelta(seconds=5)
PENDING_QUERY = (
    f'WorkflowType="{WORKFLOW_TYPE}" AND ExecutionStatus="Running" AND SignoffStatus="{STATUS_AWAITING}"'
)
Handle = WorkflowHandle[Any, Any]
Decider = Callable[[Handle, dict[str, Any]], Awaitable[None]]


class CommandError(Exception):
    """A command that cannot go on: the message for stderr and the exit code."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


@dataclasses.dataclass(frozen=True)
class Context:
    """What every command needs: where Temporal is, and where to write."""

    settings: WorkerSettings
    console: Console
    ui_base: str | None = None

    def link(self, workflow_id: str) -> str | None:
        return ui_link(workflow_id, self.settings.namespace, self.settings.address, self.ui_base)

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
            hint = ("Check the address, TLS settings (TEMPORAL_TLS_*) and API key, or use another --profile."
                    if self.settings.configured else
                    "Start it (e.g. `python worker.py` starts a local dev server) or set TEMPORAL_ADDRESS / --address.")
            raise CommandError(f"{exc}\n{hint}") from None


# --- talking to a run ------------------------------------------------------------------


def _failure_text(exc: BaseException) -> str:
    """The innermost message of a Temporal failure chain (the validator's or the run's)."""
    message = str(exc)
    while exc.__cause__ is not None or getattr(exc, "cause", None) is not None:
        exc = getattr(exc, "cause", None) or exc.__cause__  # type: ignore[assignment]
        message = getattr(exc, "message", None) or str(exc) or message
    return message


def _rpc_text(exc: RPCError, workflow_id: str) -> str:
    if "already completed" in exc.message:
        return f"run {workflow_id!r} has already finished; see `signoff result {workflow_id}`"
    if exc.status == RPCStatusCode.NOT_FOUND:
        return f"no run with id {workflow_id!r}"
    return f"{workflow_id}: {exc.message}"


async def query(handle: Handle, name: str, *args: Any) -> Any:
    """A query's answer; CommandError when the run or a worker cannot answer."""
    try:
        return await handle.query(name, *args, rpc_timeout=QUERY_TIMEOUT)
    except RPCError as exc:
        raise CommandError(_rpc_text(exc, handle.id)) from None
    except WorkflowQueryFailedError as exc:
        raise CommandError(f"{handle.id}: query {name!r} failed: {exc}") from None


async def pending_ids(handle: Handle) -> list[str]:
    return [r["call_id"] for r in await query(handle, QUERY_PENDING)]


async def submit(handle: Handle, response: ToolApprovalResponse) -> DecisionAck:
    """Send one decision through the validated update; CommandError says why it was refused."""
    try:
        raw = await handle.execute_update(UPDATE_APPROVAL, response.model_dump(mode="json", exclude_none=True))
    except WorkflowUpdateFailedError as exc:
        raise CommandError(_failure_text(exc)) from None
    except RPCError as exc:
        raise CommandError(_rpc_text(exc, handle.id)) from None
    return DecisionAck.model_validate(raw)


async def decide(handle: Handle, console: Console, call_id: str, answer: Answer, approver: str | None) -> None:
    """Submit one answer while following a run: its decision event will show; a refusal shows now."""
    response = ToolApprovalResponse(call_id=call_id, approved=answer.approved, reason=answer.reason, approver=approver)
    try:
        await submit(handle, response)
    except CommandError as exc:
        console.print(console.style.paint(f"not accepted: {exc}", "red"))


async def wait_until_decided(handle: Handle, call_id: str) -> None:
    """Return once `call_id` is no longer pending (decided in the UI, another terminal...)."""
    while True:
        try:
            if call_id not in await pending_ids(handle):
                return
        except CommandError:
            pass  # a worker restarting; ask again
        await asyncio.sleep(POLL_SECONDS)


# --- following a run --------------------------------------------------------------------


class Follower:
    """Prints a run's events as they come and hands approval requests to a decider."""

    def __init__(self, handle: Handle, ctx: Context, decider: Decider | None) -> None:
        self.handle, self.ctx, self.decider = handle, ctx, decider
        self.seq = 0
        self.waiting: set[str] = set()
        self.warned = False

    async def run(self) -> dict[str, Any]:
        """Follow until the run closes; its raw result (WorkflowFailureError if it failed)."""
        result = asyncio.ensure_future(self.handle.result())
        try:
            while True:
                closed = result.done()  # read before the last poll, so no event is missed
                await self._show(await self._events())
                if closed:
                    raw: dict[str, Any] = result.result()
                    return raw
                label = f"waiting for a decision on {', '.join(sorted(self.waiting))}" if self.waiting else "working"
                await self.ctx.console.spinner.wait(POLL_SECONDS, label, until=result)
        finally:
            result.cancel()

    async def _events(self) -> list[dict[str, Any]]:
        try:
            events: list[dict[str, Any]] = await query(self.handle, QUERY_EVENTS, self.seq)
            return events
        except CommandError as exc:
            if not self.warned:
                self.ctx.console.print(self.ctx.console.style.paint(f"(no events yet: {exc}; still waiting)", "dim"))
                self.warned = True
            return []

    async def _show(self, events: list[dict[str, Any]]) -> None:
        # Shown once, elsewhere: the final answer with the result, a gated call as its request.
        hidden = final_text_seqs(events) | gated_call_seqs(events)
        decided = {e["record"]["call_id"] for e in events if e.get("type") == "approval_decision"}
        for event in events:
            self.seq = event["seq"] + 1
            if event["seq"] in hidden:
                continue
            if event.get("type") == "approval_request" and event["request"]["call_id"] not in decided:
                await self._request(event["request"])
                continue
            if event.get("type") == "approval_decision":
                self.waiting.discard(event["record"]["call_id"])
            if (line := render_event(event, self.ctx.console.style)) is not None:
                self.ctx.console.print(line)

    async def _request(self, request: dict[str, Any]) -> None:
        console, call_id = self.ctx.console, request["call_id"]
        self.waiting.add(call_id)
        console.print(*approval_block(request, self.handle.id, self.ctx.link(self.handle.id), console.style,
                                      self.ctx.options))
        if self.decider is not None:
            with contextlib.suppress(CommandError):
                if call_id not in await pending_ids(self.handle):
                    return  # decided while we were not looking
            await self.decider(self.handle, request)


class Prompter:
    """Decides at the prompt: a line of standard input per call (a terminal or not).

    While it waits for the line it also watches the run, so a decision made elsewhere
    ends the question; once input ends it leaves the decision to others.
    """

    def __init__(self, console: Console, approver: str | None, reader: LineReader | None = None) -> None:
        self.console, self.approver = console, approver
        self.reader = reader or LineReader()
        self.echo = not sys.stdin.isatty()

    async def __call__(self, handle: Handle, request: dict[str, Any]) -> None:
        while (line := await self._ask(handle, request)) is not None:
            if (answer := parse_answer(line)) is not None:
                await decide(handle, self.console, request["call_id"], answer, self.approver)
                return

    async def _ask(self, handle: Handle, request: dict[str, Any]) -> str | None:
        if self.reader.at_eof:
            return None
        self.console.write(approval_prompt(request, self.console.style))
        line = asyncio.ensure_future(self.reader.readline())
        gone = asyncio.ensure_future(wait_until_decided(handle, request["call_id"]))
        done, _ = await asyncio.wait({line, gone}, return_when=asyncio.FIRST_COMPLETED)
        answer = line.result() if line in done else None
        line.cancel()
        gone.cancel()
        if answer is not None:
            if self.echo:
                self.console.print(answer)  # piped answers are not echoed by a terminal: show them
            return answer
        why = "decided elsewhere" if gone in done else "no more input; waiting for a decision made elsewhere"
        self.console.print("", self.console.style.paint(f"({why})", "dim"))
        return None


def auto_approver(console: Console, approver: str | None) -> Decider:
    """Approves every request (`demo --yes`)."""

    async def approve(handle: Handle, request: dict[str, Any]) -> None:
        console.print(console.style.paint("approving automatically (--yes)", "dim"))
        await decide(handle, console, request["call_id"], Answer(approved=True), approver)

    return approve


def elsewhere(console: Console) -> Decider:
    """Leaves the decision to the Web UI or another terminal, and says so."""

    async def wait(handle: Handle, request: dict[str, Any]) -> None:
        console.print(console.style.paint("waiting for a decision made elsewhere (Web UI or another terminal); "
                                          "Ctrl-C to stop", "dim"))

    return wait


async def follow_to_end(handle: Handle, ctx: Context, decider: Decider | None) -> int:
    """Follow a run, then show its result; 1 when the run failed."""
    try:
        raw = await Follower(handle, ctx, decider).run()
    except WorkflowFailureError as exc:
        ctx.console.print(ctx.console.style.paint(f"the run failed: {_failure_text(exc)}", "red", "bold"))
        return 1
    except RPCError as exc:
        raise CommandError(_rpc_text(exc, handle.id)) from None
    ctx.console.print("", *render_result(AgentRunResult.model_validate(raw), ctx.console.style))
    return 0


async def follow_or_leave(handle: Handle, ctx: Context, decider: Decider | None) -> int:
    """`follow_to_end`; on Ctrl-C, say that the run goes on and how to follow it again."""
    try:
        return await follow_to_end(handle, ctx, decider)
    except asyncio.CancelledError:
        ctx.console.print("", f"The run goes on. Follow it again with: signoff watch {handle.id}{ctx.options}")
        raise


# --- commands ---------------------------------------------------------------------------


def _run_input(args: argparse.Namespace) -> AgentRunInput:
    options = {"max_rounds": args.max_rounds, "approval_timeout_seconds": args.approval_timeout}
    try:
        return AgentRunInput(
            agent=args.agent,
            prompt=args.prompt,
            options=RunOptions(**{k: v for k, v in options.items() if v is not None}),
        )
    except ValidationError as exc:
        raise CommandError(format_validation_error(exc), 2) from None


async def start(client: Client, run_input: AgentRunInput, workflow_id: str, task_queue: str) -> Handle:
    try:
        return await client.start_workflow(WORKFLOW_TYPE, run_input, id=workflow_id, task_queue=task_queue)
    except WorkflowAlreadyStartedError:
        raise CommandError(f"a run with id {workflow_id!r} already exists; choose another --id") from None


def announce(ctx: Context, workflow_id: str) -> None:
    style = ctx.console.style
    ctx.console.print(f"started run {style.paint(workflow_id, 'bold')}")
    if link := ctx.link(workflow_id):
        ctx.console.print(f"Web UI: {style.paint(link, 'cyan')}")


async def cmd_run(args: argparse.Namespace, ctx: Context) -> int:
    """Start an AgentRun; with --wait, follow it and answer approvals at the prompt."""
    run_input = _run_input(args)
    client = await ctx.connect()
    workflow_id = args.id or f"signoff-{uuid.uuid4().hex[:8]}"
    handle = await start(client, run_input, workflow_id, args.task_queue or ctx.settings.task_queue)
    announce(ctx, workflow_id)
    if not args.wait:
        return 0
    return await follow_or_leave(handle, ctx, Prompter(ctx.console, args.approver))


async def _pending_rows(client: Client, execution: WorkflowExecution) -> list[dict[str, Any]]:
    handle = client.get_workflow_handle(execution.id, run_id=execution.run_id)
    try:
        requests = await query(handle, QUERY_PENDING)
    except CommandError:  # no worker answered; the search attribute still names the tools
        tools = execution.typed_search_attributes.get(PENDING_TOOLS) or []
        note = f"(no worker answered; is one serving task queue {execution.task_queue!r}?)"
        return [{"workflow_id": execution.id, "name": ",".join(tools) or None, "note": note}]
    return [{"workflow_id": execution.id, **request} for request in requests]


async def cmd_pending(args: argparse.Namespace, ctx: Context) -> int:
    """Every call awaiting approval across the namespace (visibility lags a little)."""
    client = await ctx.connect()
    try:
        executions = [e async for e in client.list_workflows(PENDING_QUERY)]
    except RPCError as exc:
        raise CommandError(f"cannot list runs: {exc.message}\n(signoff's search attributes are registered "
                           "by `python worker.py` when it starts)") from None
    groups = await asyncio.gather(*(_pending_rows(client, e) for e in executions))
    rows = sorted((r for g in groups for r in g), key=lambda r: r.get("requested_at") or "")
    if args.json:
        ctx.console.print(json.dumps(rows, indent=2))
    else:
        ctx.console.print(*render_pending(rows, ctx.console.style))
    return 0


def _decision(args: argparse.Namespace, approved: bool) -> dict[str, Any]:
    """The response fields the flags give; usage errors checked before connecting."""
    if args.call and args.all:
        raise CommandError("give a CALL id or --all, not both", 2)
    edit = getattr(args, "edit", None)
    if edit is not None and args.all:
        raise CommandError("--edit applies to one call: name it instead of --all", 2)
    try:
        arguments = json.loads(edit) if edit is not None else None
    except ValueError as exc:
        raise CommandError(f"--edit is not valid JSON: {exc}", 2) from None
    if edit is not None and not isinstance(arguments, dict):
        raise CommandError('--edit must be a JSON object, e.g. \'{"command": "ls"}\'', 2)
    reason = getattr(args, "reason", None)
    return {"approved": approved, "reason": reason, "approver": args.approver, "arguments": arguments}


async def _only_pending(handle: Handle) -> str:
    requests = await query(handle, QUERY_PENDING)
    if len(requests) == 1:
        return str(requests[0]["call_id"])
    if not requests:
        raise CommandError(f"no tool call is awaiting approval in run {handle.id}")
    listed = "; ".join(f"{r['call_id']} ({r['name']} {json.dumps(r['arguments'])})" for r in requests)
    raise CommandError(f"{len(requests)} calls are pending: {listed}. Name one, or pass --all.", 2)


async def cmd_decide(args: argparse.Namespace, ctx: Context) -> int:
    """`approve` / `deny`: one call, the only pending one, or --all."""
    approved = args.command == "approve"
    fields = _decision(args, approved)
    handle = (await ctx.connect()).get_workflow_handle(args.run)
    call_id = "*" if args.all else args.call or await _only_pending(handle)
    ack = await submit(handle, ToolApprovalResponse(call_id=call_id, **fields))
    ctx.console.print(render_ack(ack, approved, ctx.console.style))
    return 0


async def cmd_watch(args: argparse.Namespace, ctx: Context) -> int:
    """Follow a run's events until it finishes, without deciding anything."""
    handle = (await ctx.connect()).get_workflow_handle(args.run)
    return await follow_or_leave(handle, ctx, None)


async def cmd_result(args: argparse.Namespace, ctx: Context) -> int:
    """Wait for a run's result; print it readably, or as the raw JSON with --json."""
    handle = (await ctx.connect()).get_workflow_handle(args.run)
    result = asyncio.ensure_future(handle.result())
    while not result.done():
        await ctx.console.spinner.wait(3600, f"waiting for {args.run} to finish", until=result)
    try:
        raw = result.result()
    except WorkflowFailureError as exc:
        raise CommandError(f"the run failed: {_failure_text(exc)}") from None
    except RPCError as exc:
        raise CommandError(_rpc_text(exc, args.run)) from None
    if args.json:
        ctx.console.print(json.dumps(raw, indent=2, ensure_ascii=False))
    else:
        ctx.console.print(*render_result(AgentRunResult.model_validate(raw), ctx.console.style))
    return 0


# --- the demo ---------------------------------------------------------------------------


def demo_decider(args: argparse.Namespace, console: Console) -> Decider:
    """--yes approves; a terminal asks; otherwise a decision made elsewhere is awaited."""
    if args.yes:
        return auto_approver(console, args.approver)
    if sys.stdin.isatty():
        return Prompter(console, args.approver)
    return elsewhere(console)


async def run_demo(client: Client, ctx: Context, args: argparse.Namespace, model: str,
                   chat: Callable[[], ChatClient], started: bool) -> int:
    """Serve the demo's run with an in-process worker; on Ctrl-C cancel the run cleanly."""
    workspace, task_queue = demo_workspace(), f"signoff-demo-{uuid.uuid4().hex[:8]}"
    ui = ui_root(ctx.settings.address, ctx.ui_base)
    ctx.console.print(*demo_banner(ctx.console.style, ctx.settings.address, started, ui, model, workspace, task_queue))
    agents = {"default": default_agent(WorkspaceScope(workspace))}
    async with build_worker(client, agents, task_queue, default_client=chat):
        run_id = f"signoff-demo-{uuid.uuid4().hex[:8]}"
        handle = await start(client, AgentRunInput(prompt=args.prompt), run_id, task_queue)
        announce(ctx, handle.id)
        try:
            return await follow_to_end(handle, ctx, demo_decider(args, ctx.console))
        except asyncio.CancelledError:  # Ctrl-C: nobody will serve this task queue again
            ctx.console.print("", "Cancelling the demo run: no worker will serve it once the demo ends.")
            with contextlib.suppress(Exception):
                await handle.cancel()
                await asyncio.wait_for(handle.result(), timeout=10)
            raise


async def _temporal_for_demo(ctx: Context) -> tuple[Client, EmbeddedServer | None]:
    try:
        return await open_client(ctx.settings)
    except (ConfigError, RuntimeError) as exc:
        raise CommandError(f"cannot reach or start Temporal at {ctx.settings.address}: {exc}") from None


async def cmd_demo(args: argparse.Namespace, ctx: Context) -> int:
    """One command on a fresh machine: server (if needed), worker, model, a run to approve."""
    try:
        config = configured_model()  # a bad LLM config fails before any server starts
    except ConfigError as exc:
        raise CommandError(str(exc), 2) from None
    with demo_model(config) as (model, chat):
        client, server = await _temporal_for_demo(ctx)
        try:
            ctx = dataclasses.replace(ctx, ui_base=server.ui_url) if server else ctx
            return await run_demo(client, ctx, args, model, chat, started=server is not None)
        finally:
            if server is not None:
                server.stop()
                ctx.console.print(ctx.console.style.paint("stopped the embedded Temporal dev server", "dim"))


# --- the command line -------------------------------------------------------------------

COMMANDS: dict[str, Callable[[argparse.Namespace, Context], Coroutine[Any, Any, int]]] = {
    "run": cmd_run,
    "pending": cmd_pending,
    "approve": cmd_decide,
    "deny": cmd_decide,
    "watch": cmd_watch,
    "result": cmd_result,
    "demo": cmd_demo,
    "token": cmd_token,
}


def settings_from(args: argparse.Namespace) -> WorkerSettings:
    """Temporal's client configuration (profile, environment), the flags on top."""
    try:
        return ConnectionSettings.load(  # commands that never reach Temporal (token) have no connection flags
            profile=getattr(args, "profile", None), address=getattr(args, "address", None),
            namespace=getattr(args, "namespace", None),
        )
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
    except Exception:  # noqa: BLE001 - a bug: its traceback is shown, then the safe exit
        traceback.print_exc()
        code = 1
    _exit(code)
    return code  # not reached


def _main(argv: Sequence[str] | None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else 2
    try:
        ctx = Context(settings_from(args), Console())
        return asyncio.run(COMMANDS[args.command](args, ctx))
    except CommandError as exc:
        print(f"signoff: {exc}", file=sys.stderr)
        return exc.code
    except (ConfigError, RuntimeError, ValueError) as exc:  # a stored payload this client cannot read
        if (problem := storage_problem(exc)) is None:
            raise
        print(f"signoff: {problem}", file=sys.stderr)
        return 1
    except RPCError as exc:
        print(f"signoff: Temporal said: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("signoff: interrupted", file=sys.stderr)
        return 130


def _exit(code: int) -> None:
    """Flush and leave without interpreter teardown.

    The Temporal client's Rust threads can outlive the event loop and abort a finalizing
    interpreter (`PyGILState_Release: thread state ... must be current`, SIGABRT), which
    turned about one exit in five into code 134 (temporalio/sdk-python#300). Everything of
    ours is closed by now: the event loop, servers the demo started, the worker.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
