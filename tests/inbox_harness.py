"""A real inbox for the browser tests: its own dev server, a worker, `signoff inbox`, a proxy.

- A Temporal dev server of its own (the inbox lists the whole namespace: runs other tests
  leave waiting, with no worker to answer for them, must not be in its list).
- An in-process worker serving `default` (run_command), `ops` (`deploy` under a verified
  policy for group `sre`, `restart` for anyone) and `lead` (delegating `research` to
  `default`: the task is the child's prompt, so it says the child's calls too), verifying
  tokens with an HS256 secret that is also the inbox's signing key.
- `signoff inbox` as a real process, trusting only the proxy at 127.0.0.2, and answering for
  the proxy's address as its public one (`SIGNOFF_INBOX_URL`), as behind oauth2-proxy.
- The "proxy": a TCP forwarder whose connections to the inbox come from 127.0.0.2. The
  browser sends the identity headers (as an authenticating proxy would add them); only what
  comes through the forwarder is believed.
- A model whose prompt says which calls to ask for: `calls: [["tool", {...}], ...]` on its
  first turn (or `rounds: [[...], [...]]`, one list of calls per turn); then it answers with
  the tool messages it got, joined by ` | `.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHandle

from signoff.agent.builder import AgentBuilder
from signoff.approval.identity import ApproverKeys
from signoff.approval.policy import ApprovalPolicy
from signoff.contract import AgentRunInput, AgentRunResult, RunOptions
from signoff.testing import Reply, ScriptedModelServer, ScriptedRequest
from tests.approver_keys import write_secret
from tests.conftest import start_dev_server
from tests.governance import ops_agent
from tests.helpers import agents_for, running_worker
from tests.processes import REPO, Processes, clean_env, free_port

PROXY_ADDRESS = "127.0.0.2"
VERIFIED_DEPLOY = ApprovalPolicy(verified=True, approvers=("group:sre",))


def script(request: ScriptedRequest) -> Reply:
    prompt = next(m.content for m in request.messages if m.role == "user") or ""
    rounds = json.loads(prompt.partition("rounds: ")[2] or "[]") or [json.loads(prompt.partition("calls: ")[2] or "[]")]
    if request.round <= len(rounds) and rounds[request.round - 1]:
        return Reply.tool_calls([(name, arguments) for name, arguments in rounds[request.round - 1]])
    return Reply.text(" | ".join(m.content or "" for m in request.messages if m.role == "tool"))


class Proxy:
    """A TCP forwarder on 127.0.0.1 whose connections to the inbox come from 127.0.0.2;
    `cut()` drops every connection and refuses new ones until `resume()` (a lost network)."""

    def __init__(self, target_port: int) -> None:
        self.target_port, self.down = target_port, False
        self.writers: set[asyncio.StreamWriter] = set()
        self.server: asyncio.Server | None = None

    async def start(self, port: int) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", port)

    def cut(self) -> None:
        self.down = True
        for writer in list(self.writers):
            writer.transport.abort()

    def resume(self) -> None:
        self.down = False

    def close(self) -> None:
        self.cut()
        if self.server is not None:
            self.server.close()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.add(writer)
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self.writers.discard(writer)
            writer.transport.abort()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.down:
            writer.transport.abort()
            return
        try:
            upstream = await asyncio.open_connection("127.0.0.1", self.target_port, local_addr=(PROXY_ADDRESS, 0))
        except OSError:
            writer.transport.abort()
            return
        await asyncio.gather(self._pipe(reader, upstream[1]), self._pipe(upstream[0], writer))


@dataclass
class Stack:
    client: Client
    task_queue: str
    url: str
    """The inbox through the proxy."""
    direct: str
    """The inbox itself, reached without the proxy."""
    browser: Any
    procs: Processes
    proxy: Proxy

    async def start(
        self,
        calls: list[tuple[str, dict[str, Any]]],
        agent: str = "default",
        requested_by: str | None = None,
        then: list[tuple[str, dict[str, Any]]] | None = None,
    ) -> WorkflowHandle[Any, AgentRunResult]:
        prompt = f"please, rounds: {json.dumps([calls, then])}" if then else f"please, calls: {json.dumps(calls)}"
        run_input = AgentRunInput(agent=agent, prompt=prompt, options=RunOptions(requested_by=requested_by))
        return await self.client.start_workflow(
            "AgentRun",
            run_input,
            id=f"inbox-{uuid.uuid4().hex[:10]}",
            task_queue=self.task_queue,
            result_type=AgentRunResult,
        )

    async def user(self, name: str | None, *groups: str, direct: bool = False, **headers: str) -> Any:
        """A browser page of its own (cookies and all) for `name`, through the proxy (or not)."""
        sent = dict(headers)
        if name is not None:
            sent["X-Forwarded-User"] = name
        if groups:
            sent["X-Forwarded-Groups"] = ",".join(groups)
        context = await self.browser.new_context(
            extra_http_headers=sent,
            viewport={"width": 1280, "height": 900},
            base_url=self.direct if direct else self.url,
        )
        page = await context.new_page()
        page.on("dialog", lambda dialog: asyncio.ensure_future(dialog.dismiss()))
        return page


@contextlib.asynccontextmanager
async def inbox_stack(tmp: Path, **inbox_env: str) -> AsyncIterator[Stack]:
    """The stack; `inbox_env`: more settings of the inbox process (`SIGNOFF_INBOX_SCOPE=mine`...)."""
    from playwright.async_api import async_playwright

    from tests.test_web_ui import CHROMIUM

    env = await start_dev_server()
    procs = Processes(tmp)
    secret = tmp / "inbox.key"
    write_secret(secret)
    (tmp / "ws").mkdir()
    lead = AgentBuilder("lead").with_sub_agent("research", "default", description="Research a task").build()
    agents = agents_for(tmp / "ws", extra=[ops_agent(deploy=VERIFIED_DEPLOY), lead])
    queue = f"inbox-{uuid.uuid4().hex[:8]}"
    inbox_port, proxy_port = free_port(), free_port()
    address = env.client.service_client.config.target_host
    try:
        with ScriptedModelServer(script) as model:
            async with running_worker(env.client, queue, model, agents, verifier=ApproverKeys.load(secret)):
                inbox = procs.start(
                    "inbox",
                    [sys.executable, str(REPO / "client.py"), "inbox", "--port", str(inbox_port)],
                    clean_env(
                        TEMPORAL_ADDRESS=address,
                        SIGNOFF_INBOX_TRUSTED_PROXIES=f"{PROXY_ADDRESS}/32",
                        SIGNOFF_INBOX_SIGNING_KEY_FILE=secret,
                        SIGNOFF_TASK_QUEUE=queue,  # the runs it signs for: AgentRuns on the queue the worker serves
                        SIGNOFF_INBOX_URL=f"http://127.0.0.1:{proxy_port}",
                        **inbox_env,
                    ),
                )
                await inbox.wait_for_output("signoff: inbox on")
                proxy = Proxy(inbox_port)
                await proxy.start(proxy_port)
                async with async_playwright() as playwright:
                    browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
                    try:
                        yield Stack(
                            env.client,
                            queue,
                            f"http://127.0.0.1:{proxy_port}",
                            f"http://127.0.0.1:{inbox_port}",
                            browser,
                            procs,
                            proxy,
                        )
                    finally:
                        await browser.close()
                        proxy.close()
    finally:
        procs.cleanup()
        print(procs.report())
        await env.shutdown()
