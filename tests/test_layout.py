"""The installed distribution claims no generic top-level name (issue 9).

Temporal projects commonly keep `workflows.py`, `activities.py`, `worker.py` and
`client.py` at their root. signoff's repository has the same layout, but installs as one
package, `signoff`, so from such a project the `signoff` command and the worker still
import their own code, never the project's.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from temporalio.client import Client

from signoff.contract import AgentRunResult
from tests.helpers import Reply, ScriptedModelServer, ScriptedRequest, call, start_run, wait_pending
from tests.processes import READY, REPO, Processes, clean_env

BIN = Path(sys.executable).parent
GENERIC = ("workflows", "activities", "worker", "client")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's Temporal project: its own modules with the samples' names, each a trap."""
    root = tmp_path / "myproject"
    root.mkdir()
    for name in GENERIC:
        (root / f"{name}.py").write_text(f'raise SystemExit("imported the project\'s own {name}.py")\n')
    return root


def test_the_wheel_installs_one_top_level_package(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(tmp_path), str(REPO)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("signoff-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"signoff"}
    for part in (
        "workflows/agent_run.py",
        "activities/tool.py",
        "cli/main.py",
        "runtime/worker.py",
        "inbox/templates/call.html",
        "inbox/static/inbox.js",
        "inbox/static/inbox.css",
        "inbox/static/favicon.ico",
        "inbox/static/favicon.svg",
        "inbox/templates/confirm.html",
    ):
        assert f"signoff/{part}" in names


async def test_demo_works_from_a_project_with_the_samples_layout(client: Client, project: Path) -> None:
    address = client.service_client.config.target_host
    env = clean_env(TEMPORAL_ADDRESS=address, PYTHONPATH=project, USER="tester")
    done = subprocess.run(
        [str(BIN / "signoff"), "demo", "--yes"], cwd=project, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "imported the project" not in done.stdout + done.stderr
    assert "approved by tester" in done.stdout


def echo(request: ScriptedRequest) -> Reply:
    if request.round == 1:
        return Reply.tool_calls([call("run_command", "call_1", command="echo from the worker")])
    return Reply.text(request.last.content or "")


@pytest.mark.parametrize("command", [["signoff-worker"], ["python", "-m", "signoff.runtime.worker"]])
async def test_the_worker_works_from_a_project_with_the_samples_layout(
    client: Client, task_queue: str, project: Path, tmp_path: Path, command: list[str]
) -> None:
    argv = [sys.executable, *command[1:]] if command[0] == "python" else [str(BIN / command[0])]
    procs = Processes(tmp_path)
    try:
        with ScriptedModelServer(echo) as model:
            env = clean_env(
                TEMPORAL_ADDRESS=client.service_client.config.target_host,
                SIGNOFF_TASK_QUEUE=task_queue,
                SIGNOFF_LLM_BASE_URL=model.base_url,
                SIGNOFF_LLM_MODEL="scripted",
                SIGNOFF_WORKSPACE=tmp_path,
                PYTHONPATH=project,
            )
            worker = procs.start("worker", argv, env, cwd=project)
            await worker.wait_for_output(READY)
            handle = await start_run(client, task_queue)
            await wait_pending(handle)
            await handle.execute_update("submit_tool_approval", {"call_id": "*", "approved": True})
            result: AgentRunResult = await handle.result()
    finally:
        procs.cleanup()
        print(procs.report())
    assert result.text == "exit code: 0\nfrom the worker\n"


LINKED = ("workflows", "activities")  # at the top of the repository, as Temporal's samples have them
TEMPORAL_SIDE = ("workflows", "activities", "cli", "runtime")


@pytest.mark.parametrize("name", LINKED)
def test_the_top_level_links_lead_into_signoff(name: str) -> None:
    link = REPO / name
    assert link.is_symlink() and link.resolve() == (REPO / "signoff" / name).resolve()


@pytest.mark.parametrize("module", ["workflows", "workflows.agent_run", "activities", "activities.tool"])
def test_importing_a_linked_folder_by_its_top_level_name_is_refused(module: str) -> None:
    """From the repository's root, `import workflows.agent_run` would load a second `AgentRun`."""
    done = subprocess.run(
        [sys.executable, "-c", f"import {module}"], cwd=REPO, env=clean_env(), capture_output=True, text=True
    )
    assert done.returncode == 1
    top = module.split(".")[0]
    assert f"ImportError: import signoff.{top}, not {top}" in done.stderr, done.stderr


def test_no_code_imports_the_temporal_side_by_a_top_level_name() -> None:
    """Every import of the Temporal side says `signoff.`: one name per file, in tracebacks as in git."""
    offenders = []
    for path in sorted(REPO.glob("**/*.py")):
        relative = path.relative_to(REPO)
        if relative.parts[0] in {".venv", "build", *LINKED} or "node_modules" in relative.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            offenders += [f"{relative}:{node.lineno} {n}" for n in names if n.split(".")[0] in TEMPORAL_SIDE]
    assert offenders == []
