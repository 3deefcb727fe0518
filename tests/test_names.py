"""One meaning per name: no public name is defined at the top of two of signoff's modules.

A name that means two things in two places (`seal` the activity and `seal` the audit record's
chaining, two `Refusal`s) makes every reader stop and check which one an import brings. The
scan reads the syntax trees of every module of `signoff/` and lists each public name (not
starting `_`) that a module defines at its top: a class, a function, or an assigned name. Not
counted, by their shape rather than by a list: type variables (`T = TypeVar("T")`), loggers
(`log = logging.getLogger(...)`), the `@overload` signatures of one function, and `main`, the
function an entry point runs (`[project.scripts]`, `__main__.py`).
"""

from __future__ import annotations

import ast
import tomllib
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).parent.parent
PACKAGE = ROOT / "signoff"


def _entry_modules() -> set[Path]:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"].values()
    modules = {ROOT.joinpath(*target.split(":")[0].split(".")).with_suffix(".py") for target in scripts}
    return modules | set(PACKAGE.rglob("__main__.py"))


def _is_call_to(value: ast.expr | None, *names: str) -> bool:
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return called in names


def _is_overload(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(
        isinstance(d, ast.Name | ast.Attribute) and ast.unparse(d).endswith("overload") for d in node.decorator_list
    )


def defined_names(path: Path, entry: bool) -> set[str]:
    """The public names `path` defines at its top, less the shapes this module's docstring leaves out."""
    names = set()
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if not _is_overload(node) and not (entry and node.name == "main"):
                names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign) and not _is_call_to(node.value, "TypeVar", "getLogger"):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return {name for name in names if not name.startswith("_")}


def test_no_public_name_is_defined_in_two_modules() -> None:
    entries = _entry_modules()
    homes: dict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        for name in defined_names(path, path in entries):
            homes[name].append(str(path.relative_to(ROOT)))
    assert {name: where for name, where in homes.items() if len(where) > 1} == {}


def test_the_scan_sees_a_name_defined_twice(tmp_path: Path) -> None:
    one, two = tmp_path / "one.py", tmp_path / "two.py"
    one.write_text("def seal(): ...\nT = TypeVar('T')\n")
    two.write_text("class seal: ...\nlog = logging.getLogger(__name__)\n")
    assert defined_names(one, False) & defined_names(two, False) == {"seal"}
