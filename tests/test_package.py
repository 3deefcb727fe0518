"""The package's shape: what it exports, and what the core must never import."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import signoff

ROOT = Path(__file__).parent.parent
LOOP_MAY_IMPORT = {
    "__future__",
    "json",
    "collections",
    "collections.abc",
    "dataclasses",
    "datetime",
    "enum",
    "pydantic",
    "re",
    "signoff",
    "signoff.approval",
    "signoff.contract",
    "signoff.errors",
    "signoff.text.strict_json",
    "signoff.text.wire",
    "signoff.loop.actions",
    "signoff.loop.answer",
    "signoff.approval.requests",
    "signoff.approval.audit",
    "signoff.approval.authority",
    "signoff.loop.budget",
    "signoff.approval.digest",
    "signoff.loop.limits",
    "signoff.loop.decisions",
    "signoff.loop.resume",
    "signoff.loop.rounds",
    "signoff.loop.state",
    "signoff.loop.timers",
    "signoff.messages",
    "signoff.approval.names",
    "signoff.approval.people",
    "signoff.approval.policy",
    "signoff.approval.signatures",
    # auto mode's verdict rules and "approve similar"'s patterns: pure functions of the call
    "signoff.approval.auto",
    "signoff.approval.similar",
    "posixpath",  # path strings only (similar's folder patterns), no file system
    "shlex",  # splitting a command line (similar's program patterns)
}
LOOP_MODULES = (
    *sorted(f"loop/{path.name}" for path in (ROOT / "signoff" / "loop").glob("*.py")),
    "approval/authority.py",
    "approval/audit.py",
    "approval/people.py",
    "approval/auto.py",
    "approval/similar.py",
)


def test_public_names_are_exported_and_importable() -> None:
    assert len(signoff.__all__) == len(set(signoff.__all__))
    for name in signoff.__all__:
        assert getattr(signoff, name) is not None
    assert {"AgentBuilder", "ApprovalRequiredTool", "ToolApprovalResponse", "WorkspaceScope", "tool"} <= set(
        signoff.__all__
    )


def test_core_does_not_import_temporalio() -> None:
    code = "import sys, signoff, signoff.testing, signoff.agent.defaults; print('temporalio' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("module", LOOP_MODULES)
def test_loop_imports_nothing_that_does_io_or_reads_clock_or_env(module: str) -> None:
    source = (ROOT / "signoff" / module).read_text()
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
    assert imported <= LOOP_MAY_IMPORT | {"hashlib", "typing"}, imported - LOOP_MAY_IMPORT
    for forbidden in ("datetime.now", "utcnow", "time.time", "os.environ", "uuid", "random"):
        assert forbidden not in source


WORKFLOW_MAY_IMPORT = {
    "__future__",
    "asyncio",
    "collections.abc",
    "datetime",
    "typing",
    "json",
    "re",
    "shlex",
    "pydantic",
}
"""Besides these, workflow modules import only `temporalio` and `signoff` (the core and the
activities' models and names; the activities only run worker-side)."""


def _may_import(module: str) -> bool:
    return module in WORKFLOW_MAY_IMPORT or module.split(".")[0] in ("temporalio", "signoff")


def test_workflow_modules_are_safe_to_pass_through_the_sandbox() -> None:
    """The worker passes `workflows` through the sandbox, so no sandbox guards them: they
    must import nothing non-deterministic and keep no state at module level."""
    for path in (ROOT / "signoff" / "workflows").glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                assert all(_may_import(a.name) for a in node.names), (path.name, ast.dump(node))
            elif isinstance(node, ast.ImportFrom):
                assert _may_import(node.module or ""), (path.name, node.module)
        for statement in tree.body:
            if isinstance(statement, (ast.Assign, ast.AnnAssign)):
                value = statement.value
                assert not isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp)), (
                    f"{path.name}:{statement.lineno}: mutable module state"
                )
        source = path.read_text()
        for forbidden in ("datetime.now", "utcnow", "time.time", "os.environ", "random", "uuid.uuid4()"):
            assert forbidden not in source, (path.name, forbidden)
