"""Folders are layers: every `signoff` import goes down the list of layers, never up.

`LAYERS` ranks the top-level entries of `signoff/` (folders and modules) from the bottom up,
each with the line the README's layout says of it. A module may import its own layer and the
layers below it, never one above: the vocabulary everyone uses (errors, text, the environment's
names, approvals, messages) at the bottom, the rules above it, what people read above the
rules, and the Temporal-facing code on top. The imports are read from the syntax trees (every
`import` and `from ... import`, also inside functions and under `TYPE_CHECKING`), so nothing
is imported to check it, and there is no list of exceptions: an import that runs upward is
either moved to the layer it serves, or the list is changed here, on purpose, with the README.

No two entries of `signoff/` (folders, and the modules at its top) import each other,
directly or through others.

`python -m tests.test_layers` prints the README's layout block from `LAYERS`;
`test_the_readmes_layout_is_the_list_of_layers` fails when they differ.
"""

from __future__ import annotations

import ast
import importlib.util
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).parent.parent
PACKAGE = ROOT / "signoff"

LAYERS: tuple[tuple[str, str], ...] = (
    ("errors", "the errors a caller can catch, in one tree"),
    ("text", "text from strangers made inert, strict JSON, the payloads' wire shape, a notice's signature"),
    (
        "config",
        "the environment, read in one place: every variable, its default and its parsing; which name secret "
        "files, and reading them safely",
    ),
    (
        "approval",
        "requests and decisions, policy, who is deciding, names, tokens and keys, signed decisions and "
        "what they authorise, spending a signature once, the audit chain",
    ),
    ("messages", "the vocabulary: chat messages, tool calls, usage, finish reasons, the agent's events"),
    (
        "loop",
        "the tool loop with its approval gate, pure (no Temporal, no I/O, no clock): rounds, waiting calls, "
        "decisions, timers, resume, the state that continues as new, the model's answer checked, the "
        "transcript budget",
    ),
    ("contract", "the durable run's public names and JSON shapes"),
    ("metrics", "what signoff's own metrics say, and how a run's events map onto them"),
    (
        "views",
        "what people read: events in words, notices, Slack's messages, how to decide, links, values laid out whole",
    ),
    ("signing", "what a signer signs (derived from what it shows and the server says), and its keys"),
    (
        "tools",
        "the Tool protocol, @tool, ApprovalRequiredTool, the registry, the default tools, run_command and its "
        "process rules; files/ (confined paths, the workspace scope), preview/ (what a write or removal would "
        "change), mcp/ (MCP servers)",
    ),
    ("chat", "the OpenAI-compatible client: requests, the SSE stream, its configuration, key masking"),
    (
        "agent",
        "AgentBuilder and the in-process driver, the gate (which calls need approval), the snapshot a run "
        "starts with, the default agent",
    ),
    (
        "activities",
        "the activities: the model turn, the tool call (and the records of spent signatures), identify, seal, "
        "notify (webhooks and the Slack app's channel), prepare",
    ),
    ("workflows", "the Temporal workflow, AgentRun, and what it records, shows and refuses"),
    (
        "operator",
        "the operator's typed client, the CLI's and the inbox's: a run's queries and updates, the runs that "
        "wait, edits checked",
    ),
    (
        "runtime",
        "the worker and its settings, connecting, payload stores and the payload guard, encryption and the "
        "codec server, traces, Worker Versioning, replaying histories, the embedded dev server",
    ),
    ("testing", "the scripted OpenAI-compatible model server, replay_histories for pytest"),
    ("inbox", "the inbox: the web page where people decide, and the Slack app's clicks"),
    ("cli", "the `signoff` command"),
    ("__init__", "the public API: one flat namespace"),
)
"""The layers of `signoff/`, from the bottom up, with what each holds."""

ELSEWHERE = """\
workflows/        a link to signoff/workflows/, activities/ a link to signoff/activities/ (see below)
worker.py         `python worker.py` (also `signoff-worker`); client.py `python client.py` (also `signoff`)
examples/         your own agents, served by --agents
tests/            pytest on a real dev server, a scripted model server, real files and processes;
                  histories/ (the committed histories every change must replay), fuzz/ (the fuzzer), ts/
                  (a TypeScript client)
bench/            benchmarks against a hand-written floor workflow (bench/README.md)
grafana/          a ready-made dashboard of signoff's and the SDK's metrics
"""
"""The repository's other entries, after `signoff/` in the README's layout."""

RANK = {name: rank for rank, (name, _) in enumerate(LAYERS)}
WIDTH = 100


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> str:
    """`signoff.loop.state` -> `loop`; `signoff` (its `__init__.py`) -> `__init__`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def signoff_imports(path: Path) -> Iterator[tuple[int, str]]:
    """Every `signoff` module `path` imports, by absolute name, with its line: `from signoff
    import X` names `signoff.X` when X is a module or package of it, else `signoff` itself."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
            names = [_imported(base, alias.name) for alias in node.names]
        else:
            continue
        yield from ((node.lineno, name) for name in names if name.split(".")[0] == "signoff")


def _imported(base: str, name: str) -> str:
    below = PACKAGE.parent.joinpath(*f"{base}.{name}".split("."))
    return f"{base}.{name}" if below.with_suffix(".py").exists() or (below / "__init__.py").exists() else base


def sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_entry_of_signoff_has_one_layer() -> None:
    """A new folder or module at the top of `signoff/` is placed in `LAYERS`, on purpose."""
    entries = {
        path.stem
        for path in PACKAGE.iterdir()
        if (path.is_dir() and (path / "__init__.py").exists()) or path.suffix == ".py"
    }
    assert entries == set(RANK)
    assert len(RANK) == len(LAYERS)


def test_every_signoff_import_goes_down_the_layers() -> None:
    upward = []
    for path in sources():
        importer = layer_of(module_name(path))
        for line, name in signoff_imports(path):
            imported = layer_of(name)
            if RANK[imported] > RANK[importer]:
                upward.append(f"{path.relative_to(ROOT)}:{line} ({importer}) imports {name} ({imported}, above it)")
    assert upward == []


def folder_imports() -> dict[str, set[str]]:
    """For each top-level entry of `signoff/` (a folder, or a module at its top), the others its
    modules import."""
    edges: dict[str, set[str]] = defaultdict(set)
    for path in sources():
        here = layer_of(module_name(path))
        edges[here] |= {layer_of(name) for _, name in signoff_imports(path)} - {here}
    return edges


def cycle(edges: dict[str, set[str]]) -> list[str]:
    """One cycle of `edges` (folders that import each other, through others or not), or []."""
    state: dict[str, str] = {}
    trail: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = "open"
        trail.append(node)
        for after in sorted(edges.get(node, ())):
            if state.get(after) == "open":
                return [*trail[trail.index(after) :], after]
            if after not in state and (found := visit(after)):
                return found
        state[node] = "done"
        trail.pop()
        return []

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_no_folders_import_each_other() -> None:
    """Implied by the ranks, and checked apart so that a change of `LAYERS` cannot hide one."""
    assert cycle(folder_imports()) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": {"c"}}) == []


def _wrapped(text: str, indent: int) -> list[str]:
    lines, line = [], ""
    for word in text.split():
        if line and indent + len(line) + 1 + len(word) > WIDTH:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return [*lines, line]


def layout_block() -> str:
    """The README's layout block: `signoff/`'s layers from the top down, then the repository's other entries."""
    out = ["signoff/          layers, top to bottom: each imports only from itself and the layers below it"]
    for name, about in reversed(LAYERS):
        entry = "__init__.py" if name == "__init__" else name + ("/" if (PACKAGE / name).is_dir() else ".py")
        first, *rest = _wrapped(about, 18)
        out.append(f"  {entry:<16}{first}")
        out += [" " * 18 + line for line in rest]
    return "\n".join(out) + "\n" + ELSEWHERE


def readme_layout() -> str:
    """The first code block after the README's `## Layout` heading."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("\n## Layout\n") :]
    start = section.index("\n```\n") + len("\n```\n")
    return section[start : section.index("```\n", start)]


def test_the_readmes_layout_is_the_list_of_layers() -> None:
    """Regenerate it with `python -m tests.test_layers` and paste it over the README's block."""
    assert readme_layout() == layout_block()


if __name__ == "__main__":
    print(layout_block(), end="")
