"""The inbox's call page shows the model's text as it comes (`GET /call/text`, server-sent events).

A real `signoff inbox` process in front of a real worker: two pages of one waiting call get the
text so far (`turns`), then, once the call is approved, the next turn's text in deltas as the
model writes it (`text`), the same for both, and `closed` when the run ends. A stranger's call
id is refused.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
from temporalio.client import Client

from signoff.testing import Reply, ScriptedRequest
from tests.cli_harness import served
from tests.helpers import call, start_run
from tests.processes import Processes
from tests.test_ag_ui import start_inbox
from tests.waiting import assert_eventually

ANSWER = "the listing says " + " ".join(f"item{i}" for i in range(40))


def chat(request: ScriptedRequest) -> Reply:
    if request.last.role == "tool":
        return Reply(content=ANSWER, chunks=40, pause=0.03)
    return Reply(content="let me look", calls=(call("run_command", "call_1", command="echo hi"),))


async def read_events(http: httpx.AsyncClient, path: str, into: list[tuple[str, Any]]) -> None:
    async with http.stream("GET", path) as response:
        assert response.status_code == 200, await response.aread()
        kind = ""
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: "):
                into.append((kind, json.loads(line[6:])))
                if kind == "closed":
                    return


def shown(page: list[tuple[str, Any]]) -> dict[str, str]:
    """What the page's script shows: the whole text on `turns`, each delta appended."""
    texts: dict[str, str] = {}
    for kind, data in page:
        if kind == "turns":
            texts = dict(data["turns"])
        elif kind == "text":
            turn = str(data["turn"])
            texts[turn] = data["text"] if data["restart"] else texts.get(turn, "") + data["text"]
    return texts


async def test_two_pages_of_a_call_see_the_models_text_as_it_comes(
    client: Client, task_queue: str, tmp_path: Path, procs: Processes
) -> None:
    async with served(client, task_queue, tmp_path, chat):
        url = await start_inbox(procs, client, task_queue)
        handle = await start_run(client, task_queue, "look around")

        async def parked() -> None:
            assert [r["call_id"] for r in await handle.query("pending_approvals")] == ["call_1"]

        await assert_eventually(parked, 30)
        pages: list[list[tuple[str, Any]]] = [[], []]
        async with httpx.AsyncClient(base_url=url, timeout=60) as http:
            path = f"/call/text?run={handle.id}&id=call_1"
            readers = [asyncio.ensure_future(read_events(http, path, page)) for page in pages]

            async def listening() -> None:
                assert all(page and page[0][0] == "turns" for page in pages)

            await assert_eventually(listening, 30)
            await handle.execute_update("submit_tool_approval", {"call_id": "call_1", "approved": True})
            await asyncio.wait_for(asyncio.gather(*readers), 60)
            stranger = await http.get(f"/call/text?run={handle.id}&id=call_nope")
        await handle.result()
    for page in pages:
        assert shown(page) == {"1": "let me look", "2": ANSWER}
        assert len([data for kind, data in page if kind == "text" and data["turn"] == 2]) > 1  # as it came
        assert page[-1] == ("closed", {"closed": True})
    assert stranger.status_code == 404
