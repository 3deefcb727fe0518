"""What counts as workflow code, and a fingerprint of it.

A run in flight resumes on new code only if that code issues the same commands for the
history so far. Replaying saved histories checks the shapes that were saved; the
fingerprint covers the rest: it changes whenever code that can decide the commands of
any run changes, so such a change cannot go unnoticed even when no saved history
reaches it (tests/test_replay.py holds the rule; docs/deploys.md, "Changing workflow code").

Workflow code is everything `signoff.workflows.agent_run` imports, followed through the
core to where each imported name is defined, less what only runs worker-side (the
activities, the runtime, the CLI) but plus the activities' models and the names the
workflow schedules them by. Each module counts by its syntax tree without docstrings,
so comments, docstrings and formatting change nothing; a renamed or moved module does.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT_MODULE = "signoff.workflows.agent_run"
WORKER_SIDE = ("signoff.activities", "signoff.runtime", "signoff.cli")
"""Packages whose code never runs in a workflow (the activities run worker-side)."""
WORKFLOW_FACING = ("signoff.activities.models",)
"""Worker-side modules the workflow still depends on: the activities' inputs and outputs."""
ACTIVITIES = "signoff.activities.AgentActivities"
PATCH_CALLS = ("patched", "deprecate_patch")


@dataclass(frozen=True)
class WorkflowCode:
    """The workflow code of this installation.

    Attributes:
        modules: module name → SHA-256 of its syntax tree without docstrings.
        activities: method → activity type name, as the workflow schedules them.
        patches: the ids of `workflow.patched(...)`/`deprecate_patch(...)` calls in it.
    """

    modules: Mapping[str, str]
    activities: Mapping[str, str]
    patches: tuple[str, ...]

    @property
    def fingerprint(self) -> str:
        """One SHA-256 over all of it (hex)."""
        text = json.dumps({"modules": dict(self.modules), "activities": dict(self.activities)}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()

    def changed_since(self, modules: Mapping[str, str], activities: Mapping[str, str]) -> list[str]:
        """What differs from a recorded state: module names (added, removed or changed)
        and `activity <method>` entries."""
        names = sorted(set(modules) | set(self.modules))
        changed = [m for m in names if modules.get(m) != self.modules.get(m)]
        methods = sorted(set(activities) | set(self.activities))
        return changed + [f"activity {m}" for m in methods if activities.get(m) != self.activities.get(m)]


def workflow_code(root: str = ROOT_MODULE) -> WorkflowCode:
    """Read the installed workflow code (its sources must be present, as in any install).

    Raises:
        FileNotFoundError: a module of it has no source file.
    """
    trees = {name: ast.parse(_source(name).read_text()) for name in sorted(_closure(root))}
    return WorkflowCode(
        modules={name: hashlib.sha256(_normalized(tree).encode()).hexdigest() for name, tree in trees.items()},
        activities=_activity_names(),
        patches=tuple(sorted({p for tree in trees.values() for p in _patch_ids(tree)})),
    )


def _is_workflow_side(module: str) -> bool:
    return module in WORKFLOW_FACING or not module.startswith(WORKER_SIDE)


def _closure(root: str) -> set[str]:
    seen: set[str] = set()
    todo = [root]
    while todo:
        module = todo.pop()
        if module in seen or not _is_workflow_side(module):
            continue
        seen.add(module)
        todo.extend(_imported(module))
    return seen


def _source(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        raise FileNotFoundError(f"no source file for the workflow module {module}")
    return Path(spec.origin)


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _imported(module: str) -> set[str]:
    """The signoff modules `module` takes names from: for `from pkg import name`, the
    module that defines `name` (not the package that re-exports it)."""
    path = _source(module)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("signoff.")}
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            if base == "signoff" or base.startswith("signoff."):
                found |= {_defining_module(base, alias.name) for alias in node.names}
    return found


def _absolute(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join([*parts, *([node.module] if node.module else [])])


def _defining_module(base: str, name: str) -> str:
    if _is_module(f"{base}.{name}"):
        return f"{base}.{name}"
    defined_in = getattr(getattr(importlib.import_module(base), name, None), "__module__", None)
    return defined_in if isinstance(defined_in, str) and defined_in.startswith("signoff") else base


def _normalized(tree: ast.Module) -> str:
    """The tree without docstrings (any statement that is only a string) or positions."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            kept = [s for s in body if not _is_docstring(s)]
            setattr(node, "body", kept or [ast.Pass()])  # noqa: B010 (not every node type declares a body)
    return ast.dump(tree, annotate_fields=False, include_attributes=False)


def _is_docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def _patch_ids(tree: ast.Module) -> set[str]:
    """The ids given to `patched`/`deprecate_patch`: string literals, or names of the
    module's own string constants (`CHECKS = "..."`, `workflow.patched(CHECKS)`)."""
    constants = {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    ids = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in PATCH_CALLS):
            continue
        if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            ids.add(node.args[0].value)
        elif node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in constants:
            ids.add(constants[node.args[0].id])
    return ids


def _activity_names() -> dict[str, str]:
    """Method → activity type, from the `@activity.defn(name=...)` decorators of the
    activities' class (a name given as a constant is read from its module)."""
    module_name, _, class_name = ACTIVITIES.rpartition(".")
    module = importlib.import_module(module_name)
    (cls,) = [
        n
        for n in ast.parse(_source(module_name).read_text()).body
        if isinstance(n, ast.ClassDef) and n.name == class_name
    ]
    names = {}
    for method in cls.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for decorator in method.decorator_list:
            if isinstance(decorator, ast.Call) and ast.unparse(decorator.func) == "activity.defn":
                given = next((k.value for k in decorator.keywords if k.arg == "name"), None)
                if isinstance(given, ast.Constant):
                    names[method.name] = str(given.value)
                elif isinstance(given, ast.Name):
                    names[method.name] = str(getattr(module, given.id))
                else:
                    names[method.name] = method.name
    return names
