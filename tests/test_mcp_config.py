"""The MCP configuration: the `mcpServers` file (JSON or TOML), its checks and its errors."""

from __future__ import annotations

import json
import os
import sys
import tomllib
from pathlib import Path

import pytest

from signoff import MCPServer, PolicyBook
from signoff.agent.defaults import default_agent
from signoff.config.environment import MCP_CONFIG_ENV
from signoff.errors import ConfigError
from signoff.tools.files.scope import WorkspaceScope
from signoff.tools.mcp.listing import MCPToolInfo, model_name
from tests import docs
from tests.helpers import worker_settings

EXAMPLE = {
    "mcpServers": {
        "git": {"command": "uvx", "args": ["mcp-server-git", "--repository", "/srv/repo"], "trusted": True},
        "docs": {
            "url": "https://docs.example.com/mcp",
            "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"},
            "tools": ["search"],
        },
        "old": {"command": "old-server", "disabled": True},
    }
}


def test_a_json_file_in_the_common_shape_gives_its_servers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCS_TOKEN", "s3cret")
    (tmp_path / "mcp.json").write_text(json.dumps(EXAMPLE))
    git, docs = MCPServer.load_all(tmp_path / "mcp.json")
    assert (git.name, git.transport, git.command, git.args, git.trusted, git.tools) == (
        "git",
        "stdio",
        "uvx",
        ("mcp-server-git", "--repository", "/srv/repo"),
        True,
        None,
    )
    assert (docs.transport, docs.url, docs.headers, docs.trusted, docs.tools) == (
        "http",
        "https://docs.example.com/mcp",
        {"Authorization": "Bearer s3cret"},
        False,
        ("search",),
    )


def test_a_toml_file_reads_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCS_TOKEN", "s3cret")
    (tmp_path / "mcp.json").write_text(json.dumps(EXAMPLE))
    (tmp_path / "mcp.toml").write_text(
        '[mcpServers.git]\ncommand = "uvx"\nargs = ["mcp-server-git", "--repository", "/srv/repo"]\ntrusted = true\n'
        '[mcpServers.docs]\nurl = "https://docs.example.com/mcp"\ntools = ["search"]\n'
        '[mcpServers.docs.headers]\nAuthorization = "Bearer ${DOCS_TOKEN}"\n'
    )
    assert MCPServer.load_all(tmp_path / "mcp.toml") == MCPServer.load_all(tmp_path / "mcp.json")


def test_variables_expand_with_defaults_and_a_missing_one_is_named_without_its_value() -> None:
    os.environ.pop("NOT_SET_ANYWHERE", None)
    server = MCPServer(name="x", command="run", args=["--level=${NOT_SET_ANYWHERE:-info}"], env={"P": "${PATH}"})
    assert server.args == ("--level=info",) and server.env == {"P": os.environ["PATH"]}
    with pytest.raises(ConfigError) as missing:
        MCPServer(name="docs", url="https://d/mcp", headers={"Authorization": "Bearer ${NOT_SET_ANYWHERE}"})
    assert "MCP server 'docs': headers.Authorization refers to ${NOT_SET_ANYWHERE}, which is not set" in str(
        missing.value
    )


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"command": "a", "url": "https://x/mcp"}, "give either command"),
        ({}, "give either command"),
        ({"url": "ftp://x/mcp"}, "url must be an http:// or https:// address"),
        ({"url": "https://x/sse", "type": "sse"}, "type: Input should be"),
        ({"command": "a", "type": "http"}, "type 'http' does not match command"),
        ({"url": "https://x/mcp", "args": ["a"]}, "args, env and cwd go with command"),
        ({"command": "a", "headers": {"A": "b"}}, "headers go with url"),
        ({"command": "a", "alwaysAllow": ["rm"]}, "alwaysAllow: unknown field (known: type, command"),
        ({"command": "a", "tool": ["x"]}, "tool: unknown field"),
        ({"command": "a", "trusted": "yes please"}, "trusted: Input should be a valid boolean"),
        ({"command": "a", "timeout_seconds": 0}, "timeout_seconds: Input should be greater than 0"),
    ],
)
def test_a_bad_server_is_refused_naming_it_and_the_field(fields: dict[str, object], says: str) -> None:
    with pytest.raises(ConfigError) as refused:
        MCPServer.parse_all({"mcpServers": {"git": fields}}, "mcp.json")
    assert str(refused.value).startswith("mcp.json: MCP server 'git': ") and says in str(refused.value), refused.value


@pytest.mark.parametrize("name", ["", "a__b", "_x", "x_", "has space", "x" * 33, "dot.ted"])
def test_a_server_name_that_would_make_ambiguous_tool_names_is_refused(name: str) -> None:
    with pytest.raises(ConfigError, match="the name must be"):
        MCPServer(name=name, command="a")


def test_a_header_value_never_appears_in_an_error_or_a_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCS_TOKEN", "s3cret-token")
    with pytest.raises(ConfigError) as refused:
        MCPServer(
            name="docs", url="https://d/mcp", headers={"Authorization": "${DOCS_TOKEN}"}, env={"A": "s3cret-token"}
        )
    server = MCPServer(name="docs", url="https://d/mcp", headers={"Authorization": "${DOCS_TOKEN}"})
    assert "s3cret" not in str(refused.value) + repr(server) + server.describe()


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("not json", "is not valid .json"),
        ('{"servers": {}}', 'expected a table "mcpServers"'),
        ('{"mcpServers": {"git": "uvx"}}', "MCP server 'git': expected a table of fields"),
        ('{"mcpServers": {"git": {"name": "x", "command": "a"}}}', "the name is the entry's key"),
    ],
)
def test_a_file_that_is_not_a_table_of_servers_is_refused(tmp_path: Path, text: str, says: str) -> None:
    (tmp_path / "mcp.json").write_text(text)
    with pytest.raises(ConfigError, match=says):
        MCPServer.load_all(tmp_path / "mcp.json")


def test_a_fifo_or_a_missing_file_is_refused_at_once(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.json")
    for path, says in ((tmp_path / "fifo.json", "not a regular file"), (tmp_path / "none.json", "No such file")):
        with pytest.raises(ConfigError, match=f"{MCP_CONFIG_ENV}: cannot read .*{says}"):
            MCPServer.load_all(path)


def test_check_names_a_command_not_on_path_and_a_missing_cwd(tmp_path: Path) -> None:
    MCPServer(name="ok", command=sys.executable, cwd=str(tmp_path)).check()
    with pytest.raises(ConfigError, match="MCP server 'x': command 'no-such-mcp-server' is not found on PATH"):
        MCPServer(name="x", command="no-such-mcp-server").check()
    with pytest.raises(ConfigError, match="MCP server 'x': cwd '/no/such/dir' is not a directory"):
        MCPServer(name="x", command=sys.executable, cwd="/no/such/dir").check()


def test_the_default_agent_takes_the_servers_of_the_configured_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {"git": {"command": "uvx"}}}))
    monkeypatch.setenv(MCP_CONFIG_ENV, str(tmp_path / "mcp.json"))
    assert [s.name for s in default_agent(WorkspaceScope(tmp_path)).mcp_servers] == ["git"]
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {"git": {"comand": "uvx"}}}))
    with pytest.raises(ConfigError, match="comand: unknown field"):
        default_agent(WorkspaceScope(tmp_path))


def test_tool_names_are_valid_function_names() -> None:
    assert model_name("git", "git_status") == "mcp__git__git_status"
    assert model_name("fs", "files.read/all") == "mcp__fs__files_read_all"
    long = model_name("fs", "x" * 80)
    assert len(long) == 64 and long.startswith("mcp__fs__xxx") and long != model_name("fs", "x" * 81)


@pytest.mark.parametrize(
    ("trusted", "hints", "gate", "idempotent"),
    [
        (True, {"readOnlyHint": True}, "never", False),
        (True, {"readOnlyHint": True, "destructiveHint": False}, "never", False),
        (True, {"readOnlyHint": True, "destructiveHint": True}, "always", False),
        (True, {"readOnlyHint": False, "idempotentHint": True}, "always", True),
        (True, {}, "always", False),
        (False, {"readOnlyHint": True}, "always", False),
        (False, {"readOnlyHint": False, "idempotentHint": True}, "always", False),
    ],
)
def test_only_a_trusted_servers_annotations_relax_the_gate_or_allow_retries(
    trusted: bool, hints: dict[str, bool], gate: str, idempotent: bool
) -> None:
    info = MCPToolInfo(server="s", tool="t", trusted=trusted, annotations=hints)
    assert (info.gate, info.idempotent) == (gate, idempotent)
    assert ("untrusted server: annotations shown, not relied on" in info.describe("")) is not trusted


def test_the_docs_configuration_example_is_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    page = docs.page("mcp.md")
    (example,) = [b.text for b in docs.blocks(page) if b.lang == "json" and '"mcpServers"' in b.text]
    monkeypatch.setenv("TICKETS_TOKEN", "t")
    servers = MCPServer.parse_all(json.loads(example), "docs/mcp.md")
    assert [(s.name, s.transport, s.trusted) for s in servers] == [
        ("git", "stdio", True),
        ("files", "stdio", False),
        ("tickets", "http", False),
    ]
    (policy,) = [b.text for b in docs.blocks(page) if b.lang == "toml" and "[mcp__git__git_commit]" in b.text]
    assert PolicyBook.parse(tomllib.loads(policy)).for_tool("mcp__git__git_commit").verified


def test_the_worker_refuses_at_start_a_server_it_cannot_start_or_an_mcp_policy_it_cannot_verify(
    tmp_path: Path,
) -> None:
    scope = WorkspaceScope(tmp_path)
    missing = {"default": default_agent(scope, mcp_servers=[MCPServer(name="git", command="no-such-mcp-server")])}
    with pytest.raises(ConfigError, match="MCP server 'git': command 'no-such-mcp-server' is not found"):
        worker_settings(missing, {})
    (tmp_path / "policies.json").write_text(json.dumps({"mcp__git__git_commit": {"verified": True}}))
    agents = {"default": default_agent(scope, mcp_servers=[MCPServer(name="git", command=sys.executable)])}
    with pytest.raises(ConfigError, match=r"need verified approvers or requesters \(default/mcp__git__git_commit\)"):
        worker_settings(agents, {"SIGNOFF_POLICY_FILE": str(tmp_path / "policies.json")})
    (line,) = [x for x in worker_settings(agents, {}).describe(agents) if x.startswith("MCP servers: ")]
    assert line.startswith("MCP servers: git (stdio: ") and line.endswith("; untrusted)"), line
