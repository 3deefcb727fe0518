"""The README's in-process example runs as written (against the scripted model)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from signoff.loop.messages import ToolCall
from signoff.testing import Reply, ScriptedModelServer, ScriptedRequest

ROOT = Path(__file__).parent.parent
PROVIDER = 'LLMConfig.preset("deepseek")'


def example() -> str:
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S) if PROVIDER in b]
    return block.replace(PROVIDER, 'LLMConfig(base_url=__import__("os").environ["MODEL_URL"], model="scripted")')


def script(request: ScriptedRequest) -> Reply:
    if request.round == 1:
        return Reply.tool_calls([ToolCall(id="call_1", name="run_command", arguments='{"command": "ls /tmp/logs"}')])
    return Reply.text(f"model saw: {request.last.content}")


def test_in_process_example_pauses_and_resumes_with_the_denial(tmp_path: Path) -> None:
    with ScriptedModelServer(script) as server:
        env = {**os.environ, "MODEL_URL": server.base_url, "PYTHONPATH": str(ROOT)}
        out = subprocess.run([sys.executable, "-c", example()], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert '[Approval required: run_command({"command": "ls /tmp/logs"})]' in out.stdout
    assert "model saw: Rejected: Back up the logs first" in out.stdout
