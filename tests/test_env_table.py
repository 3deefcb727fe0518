"""The manual's tables of environment variables are generated from the declared table.

`signoff.config.environment.VARIABLES` declares every variable signoff reads (name, default,
parser, owner, one-line doc). Each table of variables in the manual sits between
`<!-- variables: NAME -->` and `<!-- /variables -->` (NAME one of `TABLES`) and is the rows of
the variables declared with `table=NAME`, in their order. `python -m tests.test_env_table`
rewrites those tables from the declarations; `test_the_manuals_tables_are_the_declared_ones`
fails when a page differs.
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

from signoff.config.environment import TABLES, VARIABLES, Environment, Variable
from signoff.errors import ConfigError

ROOT = Path(__file__).parent.parent
BLOCK = re.compile(r"(<!-- variables: (\w+) -->\n)(.*?)(<!-- /variables -->)", re.S)
HEADER = "| variable | default | read by | meaning |\n| --- | --- | --- | --- |\n"


def _row(variable: Variable[object]) -> str:
    return f"| `{variable}` | {variable.shown} | `{variable.owner}` | {variable.doc} |\n"


def table(name: str) -> str:
    """The generated table `name`: a row per variable declared with `table=name`."""
    return HEADER + "".join(_row(v) for v in VARIABLES if v.table == name)


def generated(text: str) -> str:
    """`text` with each of its tables of variables as the declarations make it."""
    return BLOCK.sub(lambda m: m[1] + table(m[2]) + m[4], text)


def pages() -> dict[Path, str]:
    return {ROOT / page: (ROOT / page).read_text() for page in sorted(set(TABLES.values()))}


def test_the_manuals_tables_are_the_declared_ones() -> None:
    """Regenerate them with `python -m tests.test_env_table`."""
    for path, text in pages().items():
        assert text == generated(text), f"{path.relative_to(ROOT)}: run python -m tests.test_env_table"


def test_each_table_is_on_its_page_once() -> None:
    for name, page in TABLES.items():
        assert [m[2] for m in BLOCK.finditer((ROOT / page).read_text())].count(name) == 1, (name, page)


def test_each_variable_is_declared_once_and_read_by_its_owner() -> None:
    """A signoff owner exists and names the variable (reads it, or checks it where several meet);
    the others are the SDKs' (signoff hands them the environment)."""
    assert len({str(v) for v in VARIABLES}) == len(VARIABLES)
    constants = {id(value): name for name, value in vars(sys.modules[Variable.__module__]).items()}
    unread = []
    for variable in VARIABLES:
        assert variable.table is None or variable.table in TABLES, variable
        assert "|" not in variable.doc + variable.shown, variable
        if variable.owner.startswith("signoff."):
            source = Path(importlib.import_module(variable.owner).__file__ or "").read_text()
            unread += [f"{variable.owner} never names {constants[id(variable)]}"] * (
                constants[id(variable)] not in source
            )
        else:
            assert variable.owner.startswith(("temporalio.", "opentelemetry.")), variable
    assert unread == []


def test_a_variable_is_its_name() -> None:
    variable = next(v for v in VARIABLES if v == "SIGNOFF_TASK_QUEUE")
    by_name: dict[str, int] = {variable: 1}
    assert by_name["SIGNOFF_TASK_QUEUE"] == 1
    assert f"{variable}=x" == "SIGNOFF_TASK_QUEUE=x"
    assert Environment({"SIGNOFF_TASK_QUEUE": " q "}).read(variable) == "q"
    assert Environment({"SIGNOFF_TASK_QUEUE": "  "}).read(variable) is None
    assert Environment({}).read(variable) is None


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("SIGNOFF_PAYLOAD_THRESHOLD", "lots", "SIGNOFF_PAYLOAD_THRESHOLD must be a number of bytes, got 'lots'"),
        ("SIGNOFF_OTEL", "maybe", "SIGNOFF_OTEL must be 1 or 0, got 'maybe'"),
        ("SIGNOFF_INBOX_SCOPE", "some", "SIGNOFF_INBOX_SCOPE must be all (every waiting call) or mine"),
        ("SIGNOFF_SIGNATURE_MAX_AGE", "soon", "SIGNOFF_SIGNATURE_MAX_AGE: 'soon' is not a duration"),
        ("SIGNOFF_MAX_CACHED_WORKFLOWS", "0", "SIGNOFF_MAX_CACHED_WORKFLOWS must be a whole number of runs from 1"),
        ("SIGNOFF_TOOL_ENV", "A=b", "SIGNOFF_TOOL_ENV has entry 1 that is not a variable name"),
        ("SIGNOFF_INBOX_TRUSTED_PROXIES", "proxy.local", "SIGNOFF_INBOX_TRUSTED_PROXIES: 'proxy.local' is not"),
        ("SIGNOFF_INBOX_ALLOWED_HOSTS", "http://x", "SIGNOFF_INBOX_ALLOWED_HOSTS: 'http://x' is not a host name"),
        ("TEMPORAL_TLS", "yes please", "TEMPORAL_TLS must be true or false, got 'yes please'"),
        ("TEMPORAL_TLS_DISABLE_HOST_VERIFICATION", "true", "is not supported by the Temporal Python SDK"),
    ],
)
def test_a_bad_value_says_what_is_wrong(name: str, value: str, message: str) -> None:
    variable = next(v for v in VARIABLES if v == name)
    with pytest.raises(ConfigError) as caught:
        Environment({name: value}).read(variable)
    assert message in str(caught.value)


if __name__ == "__main__":
    for path, text in pages().items():
        if text != generated(text):
            path.write_text(generated(text))
            print(f"rewrote {path.relative_to(ROOT)}")
