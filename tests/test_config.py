"""A worker's configuration in one place: the environment is read by `signoff.config.environment`
alone, every variable is named there, and the secret files are one registry the file guard reads."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from signoff.config import environment
from signoff.config.environment import STATE_KEY_FILE_ENV, Environment
from signoff.config.secrets import SECRET_FILE_VARIABLES, secret_paths
from signoff.errors import ConfigError
from signoff.runtime.deployment import DeploymentSettings
from signoff.runtime.fingerprint import workflow_code
from signoff.runtime.settings import read_approver_keys, read_limits
from signoff.signing.derived import ServedRuns
from signoff.tools import ReadFile, ScopePolicy, WorkspaceScope
from tests import docs
from tests.helpers import agents_for, worker_settings
from tests.test_secret_files import READERS

ROOT = Path(__file__).parent.parent
READER = ROOT / "signoff" / "config" / "environment.py"
VARIABLE = re.compile(r"(SIGNOFF|TEMPORAL)_[A-Z0-9_]+")
SDK_VARIABLES = ("TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY")
"""Read by the SDK's client configuration from what `signoff.runtime.connection.temporal_variables` gives it."""


def signoff_modules() -> list[Path]:
    return sorted((ROOT / "signoff").rglob("*.py"))


def test_no_module_but_the_environment_reads_the_process_environment() -> None:
    offenders = []
    for path in signoff_modules():
        if path == READER:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "os"
                and node.attr in ("environ", "environb", "getenv", "getenvb")
            ):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} os.{node.attr}")
            if isinstance(node, ast.ImportFrom) and node.module == "os":
                offenders += [f"{path.relative_to(ROOT)}:{node.lineno} from os import {a.name}" for a in node.names]
    assert offenders == []


def test_every_variable_name_is_defined_in_the_environment_module() -> None:
    """A name elsewhere is a message's prose (an f-string part), never a constant of its own."""
    offenders = []
    for path in signoff_modules():
        if path == READER:
            continue
        tree = ast.parse(path.read_text(), str(path))
        prose = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values}
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and VARIABLE.fullmatch(node.value)
                and id(node) not in prose
            ):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value}")
    assert offenders == []


def test_the_documented_variables_keep_their_names() -> None:
    """Every variable the configuration tables (docs/configuration.md) name is one `signoff.config.environment`
    declares."""
    page = docs.page("configuration.md")
    sections = ("## Configuration (environment)", "## Connecting to a secured cluster")
    tables = "".join(docs.section(page, heading) for heading in sections)
    documented = {name for name in re.findall(r"`((?:SIGNOFF|TEMPORAL)_[A-Z0-9_]+)", tables) if not name.endswith("_")}
    declared = {value for name, value in vars(environment).items() if name.endswith("_ENV") and isinstance(value, str)}
    assert {name for name in documented if name.startswith("SIGNOFF_")} <= declared
    read_by_the_sdk = {name for name in documented if name.startswith("TEMPORAL_")} - declared
    assert all(name in SDK_VARIABLES or name.startswith("TEMPORAL_TLS_") for name in read_by_the_sdk), read_by_the_sdk
    assert len(documented) > 40


def test_the_core_of_configuration_knows_nothing_of_temporal() -> None:
    code = "import sys, signoff.config.environment, signoff.config.secrets; print('temporalio' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_workflow_code_never_imports_the_environment() -> None:
    assert not {"signoff.config.environment", "signoff.runtime.settings"} & set(workflow_code().modules)


def test_every_secret_file_a_reader_is_tested_for_is_registered() -> None:
    assert set(READERS) <= set(SECRET_FILE_VARIABLES)


def test_secret_paths_are_the_registered_variables_that_are_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    env = Environment({"SIGNOFF_CODEC_KEYS": "/k", "SIGNOFF_TASK_QUEUE": "q", "SIGNOFF_NOTIFY_SECRET_FILE": ""})
    assert secret_paths(env) == {"SIGNOFF_CODEC_KEYS": "/k"}


async def test_file_tools_refuse_the_state_key_a_local_worker_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(STATE_KEY_FILE_ENV, raising=False)
    assert worker_settings(agents_for(tmp_path), {}, local=True).state_key
    read = ReadFile(WorkspaceScope(tmp_path, ScopePolicy.ALLOW))
    result = await read.execute({"path": ".signoff/state.key"})
    assert result.is_error and f"the worker's own secret file ({STATE_KEY_FILE_ENV})" in result.content, result
    (tmp_path / "notes.txt").write_text("hello")
    assert (await read.execute({"path": "notes.txt"})).content == "hello"


def test_a_worker_reads_its_settings_from_the_environment_it_is_given(tmp_path: Path) -> None:
    (tmp_path / "policies.json").write_text('{"run_command": {"approvers": ["alice"]}}')
    env = {
        "SIGNOFF_MAX_TOOL_OUTPUT": "2_048",
        "SIGNOFF_POLICY_FILE": str(tmp_path / "policies.json"),
        "SIGNOFF_DEPLOYMENT_NAME": "ops",
        "SIGNOFF_BUILD_ID": "b1",
        "SIGNOFF_MAX_CACHED_WORKFLOWS": "10",
        "SIGNOFF_NOTIFY_URLS": "https://hooks.example.com/x",
        "SIGNOFF_SIGNATURE_MAX_AGE": "90m",
    }
    settings = worker_settings(agents_for(tmp_path), env)
    assert settings.signature_max_age == timedelta(minutes=90)
    assert settings.limits.max_tool_output == 2048
    assert settings.policies.for_tool("run_command").approvers == ("alice",)
    assert settings.deployment is not None and (settings.deployment.name, settings.deployment.build_id) == ("ops", "b1")
    assert settings.max_cached_workflows == 10
    assert settings.notify is not None and settings.notify.urls == ("https://hooks.example.com/x",)
    assert settings.verifier is None and settings.state_key is None


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("SIGNOFF_MAX_TOOL_OUTPUT", "lots", "SIGNOFF_MAX_TOOL_OUTPUT='lots' is not a whole number"),
        ("SIGNOFF_MAX_CALLS_PER_TURN", "0", "SIGNOFF_MAX_CALLS_PER_TURN: Input should be greater than or equal to 1"),
        ("SIGNOFF_BUILD_ID", "b1", "SIGNOFF_BUILD_ID is set but SIGNOFF_DEPLOYMENT_NAME is not"),
        ("SIGNOFF_APPROVER_AUDIENCE", "a", "SIGNOFF_APPROVER_ISSUER/SIGNOFF_APPROVER_AUDIENCE are set but"),
        ("SIGNOFF_OTEL", "maybe", "SIGNOFF_OTEL must be 1 or 0, got 'maybe'"),
        ("SIGNOFF_PAYLOAD_THRESHOLD", "big", "SIGNOFF_PAYLOAD_THRESHOLD must be a number of bytes, got 'big'"),
        ("SIGNOFF_MAX_CACHED_WORKFLOWS", "0", "must be a whole number of runs from 1 to 100,000, got '0'"),
        ("SIGNOFF_SIGNATURE_MAX_AGE", "a day", "SIGNOFF_SIGNATURE_MAX_AGE: 'a day' is not a duration; use e.g. 90s"),
    ],
)
def test_a_value_that_cannot_work_is_named_with_its_variable(variable: str, value: str, message: str) -> None:
    env = Environment({variable: value})
    read = {
        "SIGNOFF_MAX_TOOL_OUTPUT": lambda: read_limits(env),
        "SIGNOFF_MAX_CALLS_PER_TURN": lambda: read_limits(env),
        "SIGNOFF_BUILD_ID": lambda: DeploymentSettings.from_env(env),
        "SIGNOFF_APPROVER_AUDIENCE": lambda: read_approver_keys(env),
        "SIGNOFF_OTEL": lambda: env.read(environment.OTEL_ENV),
        "SIGNOFF_PAYLOAD_THRESHOLD": lambda: env.read(environment.PAYLOAD_THRESHOLD_ENV),
        "SIGNOFF_MAX_CACHED_WORKFLOWS": lambda: env.read(environment.MAX_CACHED_WORKFLOWS_ENV),
        "SIGNOFF_SIGNATURE_MAX_AGE": lambda: env.read(environment.SIGNATURE_MAX_AGE_ENV),
    }[variable]
    with pytest.raises(ConfigError, match=re.escape(message)):
        read()


@pytest.mark.parametrize(
    ("given", "served"),
    [
        ({}, ("signoff",)),
        ({"SIGNOFF_TASK_QUEUE": "ops"}, ("ops",)),
        ({"SIGNOFF_TASK_QUEUE": "ops", "SIGNOFF_SERVED_TASK_QUEUES": " ops, ops-eu ,"}, ("ops", "ops-eu")),
        ({"SIGNOFF_SERVED_TASK_QUEUES": "*"}, ("*",)),
    ],
)
def test_signers_sign_for_the_task_queue_workers_serve_unless_told_more(
    given: dict[str, str], served: tuple[str, ...]
) -> None:
    assert ServedRuns.from_env(Environment(given)).task_queues == served
