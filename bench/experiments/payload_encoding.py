"""What writing a payload costs, signoff's converter beside the SDK's pydantic one:
`python -m bench.experiments.payload_encoding [--n 2000]`.

signoff's converter leaves the defaults of `signoff.text.wire.Compact` models out; this times
`to_payloads` of the payloads a run writes most (a first model turn's input and its result
with the `default` agent's snapshot, a tool input, a start input), in microseconds each, and
their bytes, both converters in the same process.
"""

from __future__ import annotations

import argparse
import timeit
from typing import Any

from temporalio.contrib.pydantic import pydantic_data_converter

from bench.anatomy import default_snapshot
from signoff.activities.models import ChatInput, ChatTurn, Requester, ToolInput
from signoff.contract import AgentRunInput
from signoff.loop.transcript import TranscriptDelta
from signoff.messages import ChatMessage, ChatResponse, ToolCall
from signoff.runtime.storage import data_converter


def payloads() -> dict[str, Any]:
    snapshot = default_snapshot()
    call = ToolCall(id="call_1", name="run_command", arguments='{"command": "ls -la"}')
    message = ChatMessage(role="assistant", tool_calls=[call])
    return {
        "start input": AgentRunInput(prompt="go"),
        "chat input": ChatInput(
            agent="default", transcript=TranscriptDelta(messages=[ChatMessage.user("go")]), requester=Requester()
        ),
        "first chat result": ChatTurn(
            response=ChatResponse(message=message), gated=["call_1"], snapshot=snapshot, snapshot_digest="d" * 32
        ),
        "tool input": ToolInput(agent="default", snapshot_digest="d" * 32, call=call),
    }


def _us(converter: Any, value: Any, n: int) -> float:
    return timeit.timeit(lambda: converter.to_payloads([value]), number=n) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=2000)
    n = parser.parse_args().n
    converters = {"sdk": pydantic_data_converter.payload_converter, "signoff": data_converter(None).payload_converter}
    print(f"{'payload':<18} {'sdk us':>8} {'signoff us':>10} {'ratio':>6} {'sdk B':>6} {'signoff B':>9}")
    for name, value in payloads().items():
        us = {k: _us(c, value, n) for k, c in converters.items()}
        size = {k: len(c.to_payloads([value])[0].data) for k, c in converters.items()}
        ratio = us["signoff"] / us["sdk"]
        print(f"{name:<18} {us['sdk']:8.1f} {us['signoff']:10.1f} {ratio:5.2f}× {size['sdk']:6} {size['signoff']:9}")


if __name__ == "__main__":
    main()
