"""`temporalio` only on the Temporal side: the core knows nothing of Temporal.

The rule. signoff's top-level entries are on one of two sides:

- The Temporal side, `TEMPORAL_SIDE`: the packages that talk to a Temporal server or run in
  a worker (the workflow, its activities, the worker and connection, the operator's client, the
  CLI, the inbox).
  They may import `temporalio`, and each of them does.
- The core, `CORE`: everything else (the package itself, the messages, the loop, approvals,
  agents, text and views, config, tools, chat, metrics' names, the scripted model server, the
  contract's types and the errors). No
  core module imports `temporalio` or a Temporal-side module anywhere in its source, not even
  inside a function (`test_core_sources_import_nothing_from_the_temporal_side`), and importing
  any core module loads neither of them, directly or through what it imports
  (`test_importing_a_core_module_loads_nothing_of_temporal`).

The one door, `LAZY_DOORS`: `signoff.testing` serves the replay kit (`replay_histories`, from
`signoff.runtime.replay`) through its `__getattr__`, so that a test suite reaches it from the
same place as the scripted model server while `import signoff.testing` stays free of Temporal.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
PACKAGE = ROOT / "signoff"
TEMPORAL_SIDE = (
    "signoff.activities",
    "signoff.cli",
    "signoff.inbox",
    "signoff.operator",
    "signoff.runtime",
    "signoff.workflows",
)
CORE = (
    "signoff",  # __init__.py, the public API
    "signoff.agent",
    "signoff.approval",
    "signoff.chat",
    "signoff.config",
    "signoff.contract",
    "signoff.errors",
    "signoff.loop",
    "signoff.messages",
    "signoff.metrics",
    "signoff.signing",
    "signoff.testing",
    "signoff.text",
    "signoff.tools",
    "signoff.views",
)
LAZY_DOORS = {
    "signoff/testing/__init__.py": {"signoff.runtime.replay"},
}
"""Core files allowed a Temporal-side import inside a function, run on first use only."""


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def side(name: str) -> str:
    if any(name == t or name.startswith(t + ".") for t in TEMPORAL_SIDE):
        return "temporal"
    return "core"


def is_temporal(imported: str) -> bool:
    return imported.split(".")[0] == "temporalio" or side(imported) == "temporal"


CORE_FILES = sorted(path for path in PACKAGE.rglob("*.py") if side(module_name(path)) == "core")
CORE_MODULES = [module_name(path) for path in CORE_FILES if path.name != "__main__.py"]  # run, never imported


def test_every_top_level_entry_of_signoff_is_on_one_side() -> None:
    """A new package or module at the top of `signoff/` must be placed, here, on purpose."""
    entries = {
        f"signoff.{path.stem}"
        for path in PACKAGE.iterdir()
        if (path.is_dir() and (path / "__init__.py").exists()) or (path.suffix == ".py" and path.stem != "__init__")
    }
    assert entries | {"signoff"} == set(CORE) | set(TEMPORAL_SIDE)
    assert not set(CORE) & set(TEMPORAL_SIDE)


def _package_of(path: Path) -> str:
    return module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]


def _imports(tree: ast.AST, package: str) -> list[tuple[int, str]]:
    """Every module imported anywhere under `tree`, by absolute name, with its line."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
            found += [(node.lineno, base), *((node.lineno, f"{base}.{alias.name}") for alias in node.names)]
    return found


@pytest.mark.parametrize("package", TEMPORAL_SIDE)
def test_each_temporal_side_package_does_talk_to_temporal(package: str) -> None:
    """Otherwise it belongs to the core, and the boundary should guard it."""
    files = (PACKAGE / package.split(".")[1]).rglob("*.py")
    imported = {name for path in files for _, name in _imports(ast.parse(path.read_text()), _package_of(path))}
    assert any(name.split(".")[0] == "temporalio" for name in imported)


def test_core_sources_import_nothing_from_the_temporal_side() -> None:
    offenders = []
    for path in CORE_FILES:
        relative = str(path.relative_to(ROOT))
        # `from signoff.runtime import replay` names the package and the module: the door is the module.
        doors = LAZY_DOORS.get(relative, set())
        allowed = doors | {door.rpartition(".")[0] for door in doors}
        imports = _imports(ast.parse(path.read_text(), relative), _package_of(path))
        offenders += [
            f"{relative}:{line} imports {name}" for line, name in imports if is_temporal(name) and name not in allowed
        ]
    assert not offenders, "\n".join(offenders)


def test_the_lazy_doors_are_still_there_and_only_inside_functions() -> None:
    """A door moved to module level would load Temporal on import; one that went away should
    leave `LAZY_DOORS`."""
    for relative, doors in LAZY_DOORS.items():
        tree = ast.parse((ROOT / relative).read_text())
        functions = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
        inside = {found for fn in functions for found in _imports(fn, _package_of(ROOT / relative))}
        everywhere = set(_imports(tree, _package_of(ROOT / relative)))
        assert doors <= {name for _, name in inside}, relative
        assert {(line, name) for line, name in everywhere - inside if name in doors} == set(), relative


# Runs in a subprocess, so that nothing this test session imported counts. It imports the
# package once (every `import signoff.x` runs `signoff/__init__.py` first), then each module
# in a forked child, which stops at the first import of `temporalio` or of the Temporal side
# and says which lines of signoff's files led there.
WITNESS = """
import importlib, json, os, sys, traceback

TEMPORAL_SIDE = tuple(json.loads(sys.argv[1]))
SIGNOFF = os.path.join(os.path.realpath(sys.argv[2]), "signoff", "")


def forbidden(name):
    return name.split(".")[0] == "temporalio" or any(name == t or name.startswith(t + ".") for t in TEMPORAL_SIDE)


class Witness:
    def find_spec(self, name, path=None, target=None):
        if forbidden(name):
            chain = [
                f"signoff/{os.path.relpath(os.path.realpath(frame.filename), SIGNOFF)}:{frame.lineno}"
                for frame in traceback.extract_stack()
                if os.path.realpath(frame.filename).startswith(SIGNOFF)
            ]
            print(json.dumps({"module": MODULE, "loads": name, "via": " -> ".join(chain)}), flush=True)
            os._exit(1)
        return None


already = sorted(name for name in sys.modules if forbidden(name))
if already:
    sys.exit(f"loaded before any of signoff was imported (site-packages hooks?): {already}")
sys.meta_path.insert(0, Witness())
MODULE = "signoff"
import signoff
for MODULE in sys.argv[3:]:
    child = os.fork()
    if child == 0:
        importlib.import_module(MODULE)
        os._exit(0)
    os.waitpid(child, 0)
"""


@pytest.fixture(scope="module")
def loaded() -> dict[str, dict[str, str]]:
    """For each core module that loads Temporal: what it loads first, and through which lines."""
    done = subprocess.run(
        [sys.executable, "-c", WITNESS, json.dumps(TEMPORAL_SIDE), str(ROOT), *CORE_MODULES],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 or done.stdout, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    reports = [json.loads(line) for line in done.stdout.splitlines()]
    return {report["module"]: report for report in reports}


@pytest.mark.parametrize("module", CORE_MODULES)
def test_importing_a_core_module_loads_nothing_of_temporal(loaded: dict[str, dict[str, str]], module: str) -> None:
    if module != "signoff" and "signoff" in loaded:
        pytest.fail("importing it runs signoff/__init__.py, which loads Temporal (see this test for `signoff`)")
    report = loaded.get(module)
    assert report is None, f"importing {module} loads {report['loads']}, through {report['via']}"
