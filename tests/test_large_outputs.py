"""A long run of large tool outputs goes to the end with the file-system payload store.

Fifty rounds, each with a tool output of 1 MB that reaches the model (the tool output cap
and the transcript budget raised for it): every large payload lives in the store, the
history keeps references, and the run finishes with its queries answering throughout.
"""

from __future__ import annotations

from pathlib import Path

from temporalio.client import Client

from signoff.agent.builder import AgentBuilder
from signoff.config.environment import Environment
from signoff.contract import AgentRunResult, RunOptions
from signoff.loop.limits import Limits
from signoff.runtime.connection import ConnectionSettings, connect
from signoff.tools import tool
from tests.helpers import (
    Reply,
    ScriptedModelServer,
    ScriptedRequest,
    assert_eventually,
    call,
    running_worker,
    start_run,
)

ROUNDS = 50
MB = 1_000_000


@tool(name="blob")
def blob(n: int) -> str:
    """Return a megabyte of text."""
    return f"{n:04d}" + "b" * (MB - 4)


def fifty_blobs(request: ScriptedRequest) -> Reply:
    seen = [m.content or "" for m in request.messages if m.role == "tool"]
    if request.round <= ROUNDS:
        assert not seen or len(seen[-1]) == MB  # the model sees each output whole
        return Reply.tool_calls([call("blob", f"call_{request.round}", n=request.round)], chunks=1)
    return Reply.text(f"{len(seen)} outputs, last starts {seen[-1][:4]}")


async def test_fifty_rounds_of_one_megabyte_outputs_finish_with_the_file_store(client: Client, tmp_path: Path) -> None:
    address = client.service_client.config.target_host
    environ = {"TEMPORAL_ADDRESS": address, "SIGNOFF_PAYLOAD_STORE": (tmp_path / "store").as_uri()}
    settings = ConnectionSettings.load(Environment(environ))
    stored = await connect(settings)
    queue = f"large-{tmp_path.name}"
    agent = AgentBuilder("blobs").with_tool(blob).build()
    limits = Limits(max_tool_output=2 * MB, transcript_budget=4 * MB)
    with ScriptedModelServer(fifty_blobs) as model:
        async with running_worker(stored, queue, model, {"blobs": agent}, limits=limits):  # no payload cap: a store
            handle = await start_run(stored, queue, agent="blobs", options=RunOptions(max_rounds=ROUNDS + 1))
            for halfway in (ROUNDS // 4, ROUNDS // 2, 3 * ROUNDS // 4):  # the run answers throughout

                async def reached(rounds: int = halfway) -> None:
                    assert (await handle.query("status"))["round"] >= rounds
                    assert len(await handle.query("messages")) >= rounds

                await assert_eventually(reached, timeout=120)
            result: AgentRunResult = await handle.result()
        history = await handle.fetch_history()
    history_bytes = sum(e.ByteSize() for e in history.events)
    store_bytes = sum(f.stat().st_size for f in (tmp_path / "store").rglob("*") if f.is_file())
    print(f"[sizes] history {history_bytes:,} B in {len(history.events)} events; store {store_bytes:,} B")
    assert result.finish_reason == "stop" and result.text.startswith(f"{ROUNDS} outputs")  # type: ignore[union-attr]
    assert history_bytes < 2 * MB < ROUNDS * MB < store_bytes
