"""The manual (README.md and the site in docs/) says each public name once, and its code cannot rot.

- Every environment variable, `signoff` command and JSON shape of the public contract is
  *documented* exactly once across docs/: a variable by the first cell of a table row that names
  it, a command by a heading that names it (`### \\`signoff run\\``), a JSON shape by a heading that
  names its type (`## Decision (\\`ToolApprovalResponse\\`)`). Mentions elsewhere are links and
  prose, not definitions, so a name documented twice (two truths that can drift) fails as
  surely as one documented nowhere.
- Every code block is checked: Python compiled (and type-checked by mypy, below), JSON parsed
  (and each shape's example read into its type, with no field the type lacks), TOML parsed
  (policy files by `PolicyBook`), and every `signoff` command line of a shell block parsed by the
  CLI's own parser. The shell and JSON blocks that drive a real server run in
  tests/test_readme.py; the README's in-process example runs there too.

The contract lives with the design, outside this repository (CONTRACT.md), so the names it
gives are copied here, as tests/test_exports.py copies its types. Names the contract gives that
the code does not have yet are listed as such: once the code has one, this test asks for its
documentation.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import shlex
import subprocess
import sys
import tomllib
import unicodedata
from collections import Counter
from pathlib import Path

import pytest
from pydantic import BaseModel

import signoff
from signoff.approval.policy import PolicyBook
from signoff.cli.args import build_parser
from signoff.config import environment
from tests import docs

ROOT = docs.ROOT
README_MOST_LINES = 400
"""A README a newcomer reads in five minutes (issue 28); the manual is docs/."""

CONTRACT_VARIABLES = (
    *("TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY", "TEMPORAL_TLS", "TEMPORAL_PROFILE"),
    "TEMPORAL_CONFIG_FILE",
    *("SIGNOFF_TASK_QUEUE", "SIGNOFF_LLM_BASE_URL", "SIGNOFF_LLM_MODEL", "SIGNOFF_LLM_API_KEY"),
    *("SIGNOFF_LLM_API_KEY_FILE", "SIGNOFF_WORKSPACE", "SIGNOFF_SCOPE_POLICY", "SIGNOFF_MAX_TOOL_OUTPUT"),
    *("SIGNOFF_MAX_CALLS_PER_TURN", "SIGNOFF_PAYLOAD_THRESHOLD", "SIGNOFF_PAYLOAD_STORE", "SIGNOFF_POLICY_FILE"),
    *("SIGNOFF_APPROVER_KEYS", "SIGNOFF_APPROVER_ISSUER", "SIGNOFF_APPROVER_AUDIENCE", "SIGNOFF_APPROVER_TOKEN"),
    *("SIGNOFF_APPROVER_KEY_FILE", "SIGNOFF_APPROVER_KID", "SIGNOFF_NOTIFY_URLS", "SIGNOFF_NOTIFY_SECRET_FILE"),
    *("SIGNOFF_TOOL_ENV", "SIGNOFF_TOOL_USER", "SIGNOFF_MCP_CONFIG", "SIGNOFF_INBOX_USER_HEADER"),
    *("SIGNOFF_INBOX_GROUPS_HEADER", "SIGNOFF_INBOX_TRUSTED_PROXIES", "SIGNOFF_INBOX_SIGNING_KEY_FILE"),
    *("SIGNOFF_INBOX_URL", "SIGNOFF_INBOX_ALLOWED_HOSTS", "SIGNOFF_DEPLOYMENT_NAME", "SIGNOFF_BUILD_ID"),
    *("SIGNOFF_METRICS_ADDRESS", "SIGNOFF_OTEL", "OTEL_EXPORTER_OTLP_*", "SIGNOFF_CODEC_KEYS"),
    *("SIGNOFF_SLACK_SIGNING_SECRET_FILE", "SIGNOFF_SLACK_BOT_TOKEN_FILE", "SIGNOFF_SLACK_CHANNEL"),
    *("SIGNOFF_SLACK_USERS", "SIGNOFF_SLACK_API_URL", "SIGNOFF_AUTO_MODEL"),
)
"""Every environment variable CONTRACT.md names (`TEMPORAL_TLS*` as `TEMPORAL_TLS`)."""

CONTRACT_COMMANDS = (
    *("approve", "deny", "extend", "sign", "keys new", "inbox", "replay", "codec-server", "pending"),
    *("answer", "rearm", "delegate"),
)
"""Every `signoff` command CONTRACT.md names."""

NOT_YET: dict[str, str] = {}
"""Names the contract gives that the code does not have yet (equality is checked: once the code
has one, it leaves this list and is documented)."""

SHAPES: dict[str, type[BaseModel]] = {
    name: getattr(signoff, name)
    for name in (
        *("AgentRunInput", "ChatMessage", "ToolCall", "ToolApprovalRequest", "ToolApprovalResponse"),
        *("DecisionAck", "ApprovalPolicy", "GrantSpec", "Grant", "RunStatus", "AgentRunResult"),
    )
}
SHAPES["DeadlineExtension"] = __import__("signoff.contract", fromlist=["DeadlineExtension"]).DeadlineExtension
"""The contract's JSON shapes with a Python type: each example is read into it."""

OTHER_SHAPES = ("`signoff` claim", "`Binding`", "`mcpServers`", "notification body")
"""The contract's JSON shapes documented by name (a heading holding this text)."""

VARIABLE = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?:_\*)?")


def in_the_code(name: str) -> bool:
    words = (f'"{name}"', f"'{name}'") if not name.isupper() else (name,)
    return any(w in path.read_text() for path in (ROOT / "signoff").rglob("*.py") for w in words)


# Environment variables.


def documented_variables() -> Counter[str]:
    count: Counter[str] = Counter()
    for text in docs.pages().values():
        for row in docs.table_rows(text):
            count.update(span for span in docs.code_spans(row[0]) if VARIABLE.fullmatch(span))
    return count


def declared_variables() -> set[str]:
    """The variables `signoff.config.environment` declares for a table of the manual."""
    return {str(v) for v in environment.VARIABLES if v.table is not None and VARIABLE.fullmatch(v)}


def test_the_readme_is_short() -> None:
    assert len(docs.page("README.md").splitlines()) <= README_MOST_LINES


def test_names_the_contract_gives_that_the_code_lacks_are_listed_as_such() -> None:
    missing = {name for name in CONTRACT_VARIABLES if name.startswith("SIGNOFF_") and not in_the_code(name)}
    missing |= {name for name in CONTRACT_COMMANDS if name not in cli_commands()}
    assert missing == set(NOT_YET)


@pytest.mark.parametrize("name", sorted(set(CONTRACT_VARIABLES) - set(NOT_YET)))
def test_each_variable_of_the_contract_is_documented_once(name: str) -> None:
    assert documented_variables()[name] == 1, f"{name}: a table row whose first cell names it, on one page"


@pytest.mark.parametrize("name", sorted(declared_variables()))
def test_each_variable_the_worker_reads_is_documented_once(name: str) -> None:
    assert documented_variables()[name] == 1, f"{name}: a table row whose first cell names it, on one page"


def test_no_variable_is_documented_twice_or_unknown() -> None:
    documented = documented_variables()
    assert [name for name, n in documented.items() if n > 1] == []
    known = declared_variables() | set(CONTRACT_VARIABLES)
    standard = {name for name in documented if name.startswith(("TEMPORAL_TLS_", "OTEL_"))}
    assert set(documented) - known - standard == set()


# Commands.


def _commands(parser: argparse.ArgumentParser, prefix: str = "") -> set[str]:
    names: set[str] = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                nested = _commands(sub, f"{prefix}{name} ")
                names |= nested or {prefix + name}
    return names


def cli_commands() -> set[str]:
    """Every `signoff` command, as its words after `signoff` (`run`, `keys new`)."""
    return _commands(build_parser())


def documented_commands() -> Counter[str]:
    commands, count = cli_commands(), Counter[str]()
    for text in docs.pages().values():
        for _level, title in docs.headings(text):
            for span in docs.code_spans(title):
                words = span.split()
                if words[0] == "signoff" and len(words) > 1:
                    named = " ".join(words[1:3]) if " ".join(words[1:3]) in commands else words[1]
                    count[named] += 1
    return count


@pytest.mark.parametrize("command", sorted(cli_commands()))
def test_each_command_is_documented_once(command: str) -> None:
    assert documented_commands()[command] == 1, f"signoff {command}: one heading that names it"


def test_every_command_a_heading_names_is_one() -> None:
    assert set(documented_commands()) <= cli_commands()


# JSON shapes.


def shape_sections() -> dict[str, list[str]]:
    """The sections whose heading names each shape: the heading's page and its text."""
    found: dict[str, list[str]] = {name: [] for name in [*SHAPES, *OTHER_SHAPES]}
    for text in docs.pages().values():
        for level, title in docs.headings(text):
            for name in SHAPES:
                if name in docs.code_spans(title):
                    found[name].append(docs.section(text, "#" * level + " " + title))
            for name in OTHER_SHAPES:
                if name in title:
                    found[name].append(title)
    return found


@pytest.mark.parametrize("shape", [*SHAPES, *OTHER_SHAPES])
def test_each_json_shape_of_the_contract_is_documented_once(shape: str) -> None:
    assert len(shape_sections()[shape]) == 1, f"{shape}: one heading that names it"


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_each_shapes_example_is_that_shape(shape: str) -> None:
    (section,) = shape_sections()[shape]
    (example, *_) = [b for b in docs.blocks(section) if b.lang == "json"]
    model = SHAPES[shape]
    model.model_validate_json(example.text)
    assert set(json.loads(example.text)) <= set(model.model_fields), "a field the type does not have"


# Code blocks.


def test_the_manual_has_its_code_blocks() -> None:
    assert Counter(b.lang for b in docs.all_blocks()).keys() >= {"python", "json", "toml", "bash", "sh"}


@pytest.mark.parametrize("block", docs.all_blocks("python"), ids=str)
def test_each_python_block_compiles(block: docs.Block) -> None:
    compile(block.text, str(block), "exec", flags=ast.PyCF_ONLY_AST)


def test_the_python_blocks_type_check(tmp_path: Path) -> None:
    """mypy, with the project's settings (strict, as for examples/), on every Python block."""
    files = []
    for number, block in enumerate(docs.all_blocks("python")):
        files.append(tmp_path / f"doc_{Path(block.page).stem.replace('-', '_')}_{number}.py")
        files[-1].write_text(block.text)
    argv = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), *map(str, files)]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("block", docs.all_blocks("json"), ids=str)
def test_each_json_block_parses(block: docs.Block) -> None:
    try:
        json.loads(block.text)
    except json.JSONDecodeError:  # one value a line (decisions to paste, one by one)
        for line in block.text.strip().splitlines():
            json.loads(line)


@pytest.mark.parametrize("block", docs.all_blocks("toml"), ids=str)
def test_each_toml_block_parses_and_policy_files_read(block: docs.Block) -> None:
    parsed = tomllib.loads(block.text)
    if "profile" not in parsed:  # temporal.toml's profiles; the others are policy files
        PolicyBook.parse(parsed, str(block))


def shell_lines(block: docs.Block) -> list[list[str]]:
    """The command lines of a shell block as words: continued lines (a trailing backslash, a
    quote still open) joined, comments and here-documents left out."""
    lines: list[list[str]] = []
    heredoc: str | None = None
    pending = ""
    for line in block.text.replace("\\\n", " ").splitlines():
        if heredoc is not None:
            heredoc = None if line.strip() == heredoc else heredoc
            continue
        pending = f"{pending} {line.strip()}" if pending else line
        try:
            words = shlex.split(pending, comments=True)
        except ValueError:  # a quote still open: the command goes on on the next line
            continue
        found = re.search(r"<<'?(\w+)'?", pending)
        heredoc, pending = (found.group(1) if found else None), ""
        lines.append(words)
    return lines


def signoff_commands() -> list[tuple[str, list[str]]]:
    """Every `signoff` command of the manual's shell blocks, as its words after `signoff`."""
    found = []
    for block in docs.all_blocks("bash", "sh"):
        for words in shell_lines(block):
            segment: list[str] = []
            for word in [*words, ";"]:
                if word not in ("&&", "||", ";", "|"):
                    segment.append(word)
                    continue
                while segment and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", segment[0]):
                    segment = segment[1:]  # NAME=value before the command
                if segment[:3] == ["docker", "compose", "exec"]:
                    segment = segment[4:]  # docker compose exec SERVICE signoff ...
                if segment[:1] == ["signoff"]:
                    redirect = [i for i, w in enumerate(segment) if w in (">", ">>")]
                    command = segment[1 : redirect[0] if redirect else None]
                    found.append((f"{block}: signoff {' '.join(command)}"[:150], command))
                segment = []
    return found


@pytest.mark.parametrize(("where", "words"), signoff_commands(), ids=[w for w, _ in signoff_commands()])
def test_each_signoff_command_line_parses(where: str, words: list[str]) -> None:
    if words == ["--version"]:
        return
    try:
        build_parser().parse_args(words)
    except SystemExit as stopped:
        raise AssertionError(f"{where}: the CLI refuses it") from stopped


def test_the_shell_blocks_have_signoff_commands() -> None:
    assert len(signoff_commands()) > 25


@pytest.mark.parametrize("block", [b for b in docs.all_blocks("bash") if "python - <<'EOF'" in b.text], ids=str)
def test_each_python_program_in_a_shell_block_compiles(block: docs.Block) -> None:
    program = block.text.split("python - <<'EOF'\n", 1)[1].split("\nEOF", 1)[0]
    compile(program, str(block), "exec", flags=ast.PyCF_ONLY_AST)


# Pages.


def test_every_picture_is_shown_by_a_page() -> None:
    shown = "".join(docs.pages().values())
    assert [p.name for p in docs.DOCS.glob("*.png") if f"]({p.name})" not in shown] == []


def test_every_page_is_in_the_sites_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    assert [name for name in docs.pages() if f": {name}" not in nav] == []


def test_the_benchmarks_page_shows_the_peers_bench_as_it_ran() -> None:
    """The tables of bench/results/peers.json, and the command that made them."""
    results = json.loads((ROOT / "bench" / "results" / "peers.json").read_text())
    page = docs.page("benchmarks.md")
    for table in results["tables"]:
        for line in table.strip("\n").splitlines():
            assert line.strip() in page, line
    a = results["args"]
    command = (
        f"python -m bench.peers --runs {a['runs']} --warmup {a['warmup']} --parked {a['parked']}"
        f" --crash-runs {a['crash_runs']} --crash-repeats {a['crash_repeats']} --actions-runs {a['actions_runs']}"
    )
    assert command in page


def slug(title: str) -> str:
    """A heading's anchor, as MkDocs (Python-Markdown's toc) makes it."""
    text = unicodedata.normalize("NFKD", re.sub(r"[`*]", "", title)).encode("ascii", "ignore").decode()
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", text).strip().lower())


def test_the_readmes_links_to_the_manual_resolve() -> None:
    """GitHub renders the README, not MkDocs: its links name pages and headings that exist."""
    broken = []
    for target in re.findall(r"\]\(((?:docs/|#)[^)]*)\)", docs.page("README.md")):
        path, _, anchor = target.partition("#")
        text = docs.page(path.removeprefix("docs/")) if path else docs.page("README.md")
        anchors = {slug(title) for _level, title in docs.headings(text)}
        if anchor and anchor not in anchors:
            broken.append(target)
    assert broken == []
