"""What counts as workflow code, how its fingerprint moves, and the tool that accepts a change."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest

from signoff.runtime.fingerprint import _normalized, _patch_ids, workflow_code
from tests.histories import accept
from tests.histories.manifest import PATH, Manifest

SOURCE = '''
"""A module."""
from temporalio import workflow

def step(x):
    """Does a step."""
    # why it does it
    return x + 1
'''


def fingerprint_of(source: str) -> str:
    return _normalized(ast.parse(source))


def test_docstrings_comments_and_layout_do_not_count() -> None:
    reworded = SOURCE.replace('"""Does a step."""', '"""Does one step, and says so at length."""')
    reformatted = SOURCE.replace("    # why it does it\n", "").replace("return x + 1", "return (\n        x + 1\n    )")
    assert fingerprint_of(SOURCE) == fingerprint_of(reworded) == fingerprint_of(reformatted)


def test_a_changed_statement_counts() -> None:
    assert fingerprint_of(SOURCE) != fingerprint_of(SOURCE.replace("x + 1", "x + 2"))


def test_patch_ids_are_read_from_patched_and_deprecate_patch() -> None:
    tree = ast.parse('if workflow.patched("a"):\n    pass\nworkflow.deprecate_patch("b")\nother.patched(x)\n')
    assert _patch_ids(tree) == {"a", "b"}
    named = ast.parse('C = "c"\nif workflow.patched(C):\n    pass\nworkflow.patched(elsewhere.D)\n')
    assert _patch_ids(named) == {"c"}  # a module's own constant is read; a name from elsewhere is not


def test_workflow_code_is_the_workflow_the_loop_and_what_they_use_but_not_what_runs_worker_side() -> None:
    code = workflow_code()
    assert {
        "signoff.workflows.agent_run",
        "signoff.workflows.intake",
        "signoff.loop.agent_loop",
        "signoff.loop.decisions",
        "signoff.activities.models",
        "signoff.approval.requests",
        "signoff.agent.snapshot",
    } <= set(code.modules)
    assert not [m for m in code.modules if m.startswith(("signoff.runtime", "signoff.cli", "signoff.chat"))]
    assert not [m for m in code.modules if m.startswith("signoff.activities") and m != "signoff.activities.models"]
    assert code.activities["tool"] == "signoff.tool" and code.activities["chat"] == "signoff.chat"


def test_changed_since_names_modules_and_activities() -> None:
    code = workflow_code()
    modules = dict(code.modules) | {"signoff.loop.agent_loop": "0" * 64, "signoff.gone": "1" * 64}
    activities = dict(code.activities) | {"tool": "signoff.old_tool"}
    assert code.changed_since(modules, activities) == ["signoff.gone", "signoff.loop.agent_loop", "activity tool"]


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    """A copy of the manifest whose recorded code is not today's, so the tool has a change to judge."""
    copy = tmp_path / "manifest.json"
    shutil.copy(PATH, copy)
    data = json.loads(copy.read_text())
    data["workflow_code"]["fingerprint"] = data["changes"][-1]["fingerprint"] = "0" * 64
    data["workflow_code"]["modules"]["signoff.loop.agent_loop"] = "0" * 64
    copy.write_text(json.dumps(data))
    return copy


def test_accept_refuses_a_change_without_a_patch_a_new_version_or_a_reason(
    manifest: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert accept.main(["--manifest", str(manifest), "--why", "moved a timer"]) == 1
    assert "refused: a `patched` change adds workflow.patched ids" in capsys.readouterr().err
    assert Manifest.load(manifest).code["fingerprint"] == "0" * 64


def test_accept_records_a_new_version_or_a_stated_no_command_change(manifest: Path) -> None:
    assert accept.main(["--manifest", str(manifest), "--new-version", "--why", "sealed state"]) == 0
    accepted = Manifest.load(manifest)
    assert accepted.version == Manifest.load().version + 1
    assert accepted.changes[-1] | {"why": ""} == {
        "version": accepted.version,
        "fingerprint": workflow_code().fingerprint,
        "patches": list(workflow_code().patches),
        "kind": "new-version",
        "why": "",
    }
    assert accept.main(["--manifest", str(manifest), "--why", "again"]) == 0  # nothing changed since


def test_a_refactor_is_accepted_only_with_its_reason(manifest: Path) -> None:
    assert accept.main(["--manifest", str(manifest), "--no-command-change", "--why", " "]) == 1
    assert accept.main(["--manifest", str(manifest), "--no-command-change", "--why", "renamed a helper"]) == 0
    assert Manifest.load(manifest).changes[-1]["kind"] == "no-command-change"
