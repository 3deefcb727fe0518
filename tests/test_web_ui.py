"""The Temporal Web UI shows an encrypted run decrypted through `signoff codec-server`.

A real dev server whose UI is pointed at the codec server (`--ui-codec-endpoint`), a worker
with `SIGNOFF_CODEC_KEYS`, and headless Chromium (Debian's, driven by Playwright) reading
the run's page: its input, and the current details that say how to decide.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest

from signoff.config.environment import Environment
from signoff.contract import AgentRunInput
from signoff.runtime.connection import ConnectionSettings, connect
from tests.helpers import Reply, ScriptedModelServer, ScriptedRequest, agents_for, call, running_worker, wait_pending
from tests.processes import Processes, clean_env, free_port
from tests.test_codec import key_line, write_keys
from tests.test_encrypted_runs import raw_history, signoff_cli

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
MARKER = f"ui-{uuid.uuid4().hex[:12]}"


def command(request: ScriptedRequest) -> Reply:
    return Reply.tool_calls([call("run_command", "call_1", command=f"echo {MARKER}")])


async def test_the_web_ui_shows_a_decrypted_input_and_current_details(tmp_path: Path, procs: Processes) -> None:
    from playwright.async_api import async_playwright

    keys = write_keys(tmp_path / "codec.keys", key_line("ui"))
    port, ui_port, codec_port = free_port(), free_port(), free_port()
    ui = f"http://127.0.0.1:{ui_port}"
    codec = procs.start(
        "codec",
        [*signoff_cli(), "codec-server", "--port", str(codec_port), "--origin", ui],
        clean_env(SIGNOFF_CODEC_KEYS=keys),
    )
    await codec.wait_for_output("codec server on")
    await procs.dev_server(
        "temporal", tmp_path / "temporal.db", port, ui_port, ui_codec_endpoint=f"http://127.0.0.1:{codec_port}"
    )
    settings = ConnectionSettings.load(
        Environment({"TEMPORAL_ADDRESS": f"127.0.0.1:{port}", "SIGNOFF_CODEC_KEYS": str(keys)})
    )
    client = await connect(settings)
    task_queue = f"tq-{uuid.uuid4()}"
    with ScriptedModelServer(command) as model:
        async with running_worker(await connect(settings, worker=True), task_queue, model, agents_for(tmp_path)):
            handle = await client.start_workflow(
                "AgentRun", AgentRunInput(prompt=f"please {MARKER}"), id=f"ui-{uuid.uuid4()}", task_queue=task_queue
            )
            await wait_pending(handle)
            assert MARKER.encode() not in await raw_history(client, handle.id)
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
                page = await browser.new_page(viewport={"width": 1400, "height": 2400})
                await page.goto(f"{ui}/namespaces/default/workflows/{handle.id}")
                try:
                    await page.get_by_text(f"please {MARKER}").first.wait_for(timeout=60_000)  # the input
                    await page.get_by_text("model turn 1").first.wait_for(timeout=10_000)  # an activity summary
                    await page.get_by_role("tab", name="User Metadata").click()
                    details = page.frame_locator("iframe").first  # the UI renders the Markdown in a frame
                    await details.get_by_text("Awaiting approval").first.wait_for(timeout=30_000)
                    await details.get_by_text(f"echo {MARKER}").first.wait_for(timeout=10_000)  # the call, decrypted
                    await details.get_by_text("submit_tool_approval").first.wait_for(timeout=10_000)  # how to decide
                finally:
                    await page.screenshot(path=str(tmp_path / "run.png"), full_page=True)
                    print(f"screenshot: {tmp_path / 'run.png'}")
                    await browser.close()
            await handle.terminate()


if not Path(CHROMIUM).exists() and not os.environ.get("CI"):  # .ci/run installs it: there, a missing one fails
    pytestmark = pytest.mark.skip(reason=f"no chromium at {CHROMIUM}: apt-get install chromium (.ci/run does)")
