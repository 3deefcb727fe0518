"""The built-in scripted model of `signoff demo`."""

from __future__ import annotations

import shlex

from signoff.testing.script import Reply, ScriptedRequest


def demo_script(request: ScriptedRequest) -> Reply:
    """A tiny model for demos: asks to list what the prompt mentions, then reports.

    - last message from the user (and `run_command` offered): call `run_command` with a
      harmless `ls -la <path mentioned in the prompt>`;
    - last messages are tool results: summarise them, saying so when a call was rejected;
    - otherwise: a greeting.
    """
    results: list[str] = []
    for message in reversed(request.messages):
        if message.role != "tool":
            break
        results.insert(0, message.content or "")
    if results:
        return Reply.text("\n".join(_summary(r) for r in results))
    if request.messages and request.last.role == "user" and "run_command" in request.tools:
        command = _demo_command(request.last.content or "")
        call = ("run_command", {"command": command})
        return Reply.tool_calls([call], text=f"Let me run `{command}` first.")
    return Reply.text("Hello from the scripted model.")


def _summary(result: str) -> str:
    if result.startswith("Rejected:"):
        return f"The command was not run. {result}"
    return f"The command ran. Its output:\n{result}"


def _demo_command(prompt: str) -> str:
    for word in prompt.split():
        path = word.strip("`'\"()").rstrip(".,;:!?")
        if path.startswith(("/", "~/", "./")):
            return f"ls -la {shlex.quote(path)}"
    return "ls -la"
