"""A scripted OpenAI-compatible model server for tests, demos and benchmarks.

A real HTTP server on 127.0.0.1 (HTTP/1.1 keep-alive, real SSE), run in a background
thread, so it serves sync code, async code and other processes alike::

    def script(request: ScriptedRequest) -> Reply:
        if request.last.role == "user":
            return Reply.tool_calls([("run_command", {"command": "ls"})])
        return Reply.text("done")

    with ScriptedModelServer(script) as server:
        LLMConfig(base_url=server.base_url, model="scripted")

`script` is a plain function of the request (called from the server's threads, so
possibly concurrently), or a list of replies used in order.
Generated tool call ids are `call_<round>_<i>` (round = assistant messages in the
transcript + 1, i from 1), so they are the same every time a conversation is replayed.

`python -m signoff.testing --port N` serves `demo_script` until killed.

`replay_histories(...)` replays saved workflow histories against the installed code, for
pytest: it raises, naming each run that would not resume and why (`signoff replay` is the
same from the command line). It is imported on first use, so `import signoff.testing`
stays free of Temporal.
"""

from typing import Any

from signoff.testing.demo import demo_script
from signoff.testing.script import CallSpec, Reply, Script, ScriptedRequest
from signoff.testing.server import ScriptedModelServer

__all__ = [
    "CallSpec",
    "HistoryReplayError",
    "ReplayOutcome",
    "Reply",
    "Script",
    "ScriptedModelServer",
    "ScriptedRequest",
    "demo_script",
    "replay_histories",
]
_REPLAY = ("HistoryReplayError", "ReplayOutcome", "replay_histories")


def __getattr__(name: str) -> Any:
    if name in _REPLAY:
        from signoff.runtime import replay

        return getattr(replay, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
