"""The workflow is one class in one file: no mixins, its handlers declared on it."""

from __future__ import annotations

import ast
from pathlib import Path

from signoff.workflows.agent_run import AgentRun

WORKFLOWS = Path(__file__).parent.parent / "signoff" / "workflows"
HANDLERS = ("signal", "update", "query")


def _decorated_handlers(tree: ast.Module) -> list[str]:
    """Names of the functions decorated `@workflow.signal/update/query` anywhere in a module."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if isinstance(target, ast.Attribute) and target.attr in HANDLERS:
                    found.append(node.name)
    return found


def test_agent_run_inherits_from_nothing() -> None:
    assert AgentRun.__mro__ == (AgentRun, object)


def test_every_handler_is_declared_in_agent_run_py_and_nowhere_else() -> None:
    declared = {
        path.name: names
        for path in sorted(WORKFLOWS.glob("*.py"))
        if (names := _decorated_handlers(ast.parse(path.read_text())))
    }
    assert list(declared) == ["agent_run.py"]
    assert set(declared["agent_run.py"]) <= set(vars(AgentRun))


def test_no_workflow_module_holds_stubs() -> None:
    for path in WORKFLOWS.glob("*.py"):
        assert "NotImplementedError" not in path.read_text(), path.name
