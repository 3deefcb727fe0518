"""The fuzzer's agent: harmless tools that still take every path a call can take.

No `run_command`: generated arguments, approved by generated decisions, must not run
as shell commands. The file tools work in a scratch workspace under `deny`, so nothing
outside it is ever touched; the function tools cover gating (always, never, per call),
policies (an allowed approver, a quorum, a verified one taking signed decisions),
previews and grants.
"""

from __future__ import annotations

from pathlib import Path

from signoff import AgentBuilder, ApprovalPolicy, ApprovalRequiredTool, ChatClientAgent, Tool, tool
from signoff.tools import ListDir, ReadFile, RemovePath, WriteFile
from signoff.tools.files.scope import ScopePolicy, WorkspaceScope

AGENT = "fuzz"


@tool
def echo(text: str) -> str:
    """Say a text back (no approval)."""
    return text[:200]


@tool(preview=lambda arguments: f"would note {str(arguments.get('text'))[:100]!r}")
def note(text: str, times: int = 1) -> str:
    """Note a text (approval needed, with a preview)."""
    return f"noted {len(text)} characters {times} time(s)"


@tool(approval=ApprovalPolicy(approvers=("alice", "group:ops")))
def release(version: str) -> str:
    """Release a version (only alice, or group ops, may decide)."""
    return f"released {version[:50]}"


@tool(approval=ApprovalPolicy(quorum=2))
def rotate(key: str) -> str:
    """Rotate a key (two approvals needed)."""
    return f"rotated {key[:50]}"


@tool(approval=ApprovalPolicy(approvers=("alice",), verified=True))
def deploy(version: str) -> str:
    """Deploy a version (alice only, with a signed decision)."""
    return f"deployed {version[:50]}"


TOOL_NAMES = ("echo", "note", "release", "rotate", "deploy", "read_file", "list_dir", "write_file", "remove_path")


def fuzz_agent(workspace: Path) -> ChatClientAgent:
    scope = WorkspaceScope(workspace, ScopePolicy.DENY)
    tools: list[Tool] = [
        echo,
        ApprovalRequiredTool(note),
        release,
        rotate,
        deploy,
        ReadFile(scope),
        ListDir(scope),
        WriteFile(scope),
        RemovePath(scope),
    ]
    return AgentBuilder(AGENT).with_instructions("You are fuzzed.").with_tools(tools).build()
