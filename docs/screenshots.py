"""Make the README's screenshots of the inbox from a realistic run: `python docs/screenshots.py`.

A dev server, a worker serving the default agent (a workspace with a config file to change)
and the `ops` example agent, a scripted model asking what an operator's agents ask, the inbox
for the local user `alice`, and headless Chromium (Debian's) taking `docs/inbox-list.png` and
`docs/inbox-call.png`. Needs the test extra (Playwright) and `chromium`.
"""

from __future__ import annotations

import asyncio
import json
import socket
import tempfile
import uuid
from pathlib import Path

import uvicorn
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from signoff import AgentBuilder, ApprovalPolicy, ApprovalRequiredTool, RunCommand, WriteFile, tool
from signoff.agent.defaults import default_agent
from signoff.chat.config import LLMConfig
from signoff.chat.openai import OpenAIChatClient
from signoff.contract import AgentRunInput, RunOptions
from signoff.inbox import WhoIsAsking, inbox_app
from signoff.runtime.devserver import find_temporal_binary
from signoff.runtime.worker import build_worker
from signoff.testing import Reply, ScriptedModelServer, ScriptedRequest
from signoff.tools.files.scope import WorkspaceScope
from signoff.workflows.feed import SEARCH_ATTRIBUTE_KEYS

HERE = Path(__file__).parent
CONFIG = 'name = "checkout"\nlisten = "0.0.0.0:8080"\ndebug = true\nworkers = 4\nlog_level = "debug"\n'
ASKS = {
    "Rotate the nginx logs and restart it": (
        "run_command",
        {"command": "logrotate -f /etc/logrotate.d/nginx && systemctl reload nginx"},
    ),
    "Turn off debug logging in the service config": (
        "write_file",
        {
            "path": "service.toml",
            "content": CONFIG.replace("debug = true", "debug = false").replace('"debug"', '"info"'),
        },
    ),
    "Ship checkout 2.4.1 to production": ("deploy_service", {"service": "checkout", "version": "2.4.1"}),
    "Free some disk space on the build host": ("run_command", {"command": "rm -rf /var/cache/ci/builds/*"}),
}


@tool
def get_status(service: str) -> str:
    """Report which version of a service is deployed."""
    return f"{service} is at 2.4.0"


@tool(idempotent=False)
def deploy_service(service: str, version: str) -> str:
    """Deploy a version of a service to production."""
    return f"deployed {service} {version}"


def script(request: ScriptedRequest) -> Reply:
    prompt = next(m.content for m in request.messages if m.role == "user")
    if request.round == 1:
        name, arguments = ASKS[prompt or ""]
        return Reply.tool_calls([(name, arguments)], text="I'll do that; it needs your sign-off first.")
    return Reply.text("Done.")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def main() -> None:
    from playwright.async_api import async_playwright

    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(find_temporal_binary()),
        search_attributes=SEARCH_ATTRIBUTE_KEYS,
        data_converter=pydantic_data_converter,
    )
    workspace = Path(tempfile.mkdtemp(prefix="inbox-shots-"))
    (workspace / "service.toml").write_text(CONFIG)
    release = ApprovalPolicy(approvers=("alice", "bob", "group:release"), quorum=2, timeout_seconds=4 * 3600)
    ops = (
        AgentBuilder("ops")
        .with_instructions("You deploy services.")
        .with_tool(get_status)
        .with_tool(ApprovalRequiredTool(deploy_service, policy=release))
        .build()
    )
    scope = WorkspaceScope(workspace)
    # Changes to the service's files wait for a person too, in the workspace as well (a diff to review).
    infra = (
        AgentBuilder("infra")
        .with_instructions("You keep services running.")
        .with_tool(ApprovalRequiredTool(RunCommand(scope)))
        .with_tool(ApprovalRequiredTool(WriteFile(scope)))
        .build()
    )
    agents = {"default": default_agent(scope), "ops": ops, "infra": infra}
    queue, port = f"shots-{uuid.uuid4().hex[:6]}", free_port()
    with ScriptedModelServer(script) as model:
        config = LLMConfig(base_url=model.base_url, model="scripted")
        async with build_worker(env.client, agents, queue, default_client=lambda: OpenAIChatClient(config)):
            handles = []
            for prompt in ASKS:
                agent = "ops" if "Ship" in prompt else "infra" if "config" in prompt else "default"
                handles.append(
                    await env.client.start_workflow(
                        "AgentRun",
                        AgentRunInput(agent=agent, prompt=prompt, options=RunOptions(requested_by="dana")),
                        id=f"{agent}-{uuid.uuid4().hex[:6]}",
                        task_queue=queue,
                    )
                )
                await asyncio.sleep(1.2)
            deploy = handles[2]
            await asyncio.sleep(2)
            (call,) = await deploy.query("pending_approvals")
            await deploy.execute_update(
                "submit_tool_approval",
                {
                    "call_id": call["call_id"],
                    "approved": True,
                    "approver": "bob",
                    "arguments_digest": call["arguments_digest"],
                },
            )
            app = inbox_app(env.client, WhoIsAsking(local_user="alice"), ui_root="http://localhost:8233")
            server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
            serving = asyncio.create_task(server.serve())
            await asyncio.sleep(1)
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
                page = await browser.new_page(viewport={"width": 1280, "height": 640}, device_scale_factor=1)
                await page.goto(f"http://127.0.0.1:{port}/")
                await page.locator("#live.on").wait_for(timeout=20_000)
                await page.locator("tr[data-key]").nth(3).wait_for()
                await page.locator("tr[data-key]").nth(0).locator("input[type=checkbox]").check()
                await page.screenshot(path=str(HERE / "inbox-list.png"))
                writes = page.locator("tr[data-key]", has_text="write_file")
                await writes.locator("td.tool a").click()
                await page.locator("pre.preview").wait_for()
                await page.set_viewport_size({"width": 1280, "height": 1100})
                await page.screenshot(path=str(HERE / "inbox-call.png"))
                await browser.close()
            server.should_exit = True
            await serving
            for handle in handles:
                await handle.terminate()
    await env.shutdown()
    print(json.dumps({"wrote": [str(HERE / "inbox-list.png"), str(HERE / "inbox-call.png")]}))


if __name__ == "__main__":
    asyncio.run(main())
