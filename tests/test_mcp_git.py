"""A third-party MCP server from PyPI, `mcp-server-git`, on a temporary repository, in a durable run:
its read tool runs at once (the server is trusted), `git_commit` waits for approval, then commits."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from temporalio.client import Client

from signoff import AgentBuilder, MCPServer
from signoff.approval.requests import ToolApprovalResponse
from signoff.contract import AgentRunResult
from tests.governance import turns
from tests.helpers import ScriptedModelServer, running_worker, start_run, wait_pending
from tests.mcp_helpers import mcp_call


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return done.stdout


def repository(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "ops@example.com")
    git(repo, "config", "user.name", "ops")
    (repo / "README.md").write_text("hello\n")
    git(repo, "add", "README.md")
    git(repo, "commit", "-q", "-m", "first")
    (repo / "CHANGES.md").write_text("a change\n")
    git(repo, "add", "CHANGES.md")
    return repo


async def test_git_status_runs_at_once_and_git_commit_waits_then_commits(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    repo = repository(tmp_path)
    server = MCPServer(
        name="git", command=sys.executable, args=["-m", "mcp_server_git", "--repository", str(repo)], trusted=True
    )
    agent = AgentBuilder("git-ops").with_mcp_server(server).build()
    script = turns(
        [mcp_call("git_status", "call_1", server="git", repo_path=str(repo))],
        [mcp_call("git_commit", "call_2", server="git", repo_path=str(repo), message="Add the changes")],
    )
    with ScriptedModelServer(script) as model:
        async with running_worker(client, task_queue, model, {"git-ops": agent}):
            handle = await start_run(client, task_queue, "commit what is staged", agent="git-ops")
            (request,) = await wait_pending(handle, timeout=30)
            status = next(m.content or "" for m in model.requests[-1].messages if m.role == "tool")
            assert git(repo, "log", "--format=%s") == "first\n"  # nothing committed before the approval
            await handle.execute_update("submit_tool_approval", ToolApprovalResponse.approve("call_2", approver="ops"))
            result: AgentRunResult = await handle.result()
    assert status.startswith("Repository status:") and "new file:   CHANGES.md" in status, status
    assert (request["name"], request["arguments"]) == (
        "mcp__git__git_commit",
        {"repo_path": str(repo), "message": "Add the changes"},
    )
    assert "MCP tool 'git_commit' of server 'git' (trusted server; readOnlyHint: false" in request["description"]
    assert git(repo, "log", "--format=%s") == "Add the changes\nfirst\n"
    assert "Changes committed successfully" in (result.messages[-2].content or ""), result.messages[-2]
    assert [t for t in model.requests[0].tools if t.startswith("mcp__git__")] == [
        f"mcp__git__git_{name}"
        for name in (
            "status",
            "diff_unstaged",
            "diff_staged",
            "diff",
            "commit",
            "add",
            "reset",
            "log",
            "create_branch",
            "checkout",
            "show",
            "branch",
        )
    ]
