"""A worker checks its policies at start: verified approvers need keys it has (issue 10)."""

from __future__ import annotations

import json
from pathlib import Path

from temporalio.client import Client

from tests.processes import READY, Processes, clean_env


def env_for(client: Client, tmp_path: Path, task_queue: str, **extra: str | Path) -> dict[str, str]:
    (tmp_path / "policies.json").write_text(json.dumps({"run_command": {"verified": True, "approvers": ["alice"]}}))
    return clean_env(
        TEMPORAL_ADDRESS=client.service_client.config.target_host,
        SIGNOFF_TASK_QUEUE=task_queue,
        SIGNOFF_WORKSPACE=tmp_path,
        SIGNOFF_POLICY_FILE=tmp_path / "policies.json",
        **extra,
    )


async def test_a_worker_whose_policies_need_keys_it_lacks_refuses_to_start_naming_them(
    client: Client, procs: Processes, task_queue: str, tmp_path: Path
) -> None:
    worker = procs.worker("worker", env_for(client, tmp_path, task_queue))
    code = await worker.wait_exit(30)
    last = worker.stderr().strip().splitlines()[-1]
    assert code != 0 and READY not in worker.stdout()
    assert "policies need verified approvers or requesters (default/run_command)" in last
    assert "SIGNOFF_APPROVER_KEYS" in last


async def test_with_keys_it_starts_and_says_what_it_verifies_with(
    client: Client, procs: Processes, task_queue: str, tmp_path: Path
) -> None:
    (tmp_path / "approver.key").write_text("s" * 48)
    (tmp_path / "approver.key").chmod(0o600)
    env = env_for(client, tmp_path, task_queue, SIGNOFF_APPROVER_KEYS=tmp_path / "approver.key")
    worker = procs.worker("worker", env)
    await worker.wait_for_output(READY)
    assert "approver tokens: HS256" in worker.stdout() and "s" * 48 not in worker.stdout()
    assert "approval policies for: run_command" in worker.stdout()


async def test_a_worker_whose_secret_key_file_others_can_read_refuses_to_start_naming_it_and_the_fix(
    client: Client, procs: Processes, task_queue: str, tmp_path: Path
) -> None:
    """Issue 27: an HS256 secret that group or others may read is a secret others may hold."""
    key = tmp_path / "approver.key"
    key.write_text("s" * 48)
    key.chmod(0o644)
    worker = procs.worker("worker", env_for(client, tmp_path, task_queue, SIGNOFF_APPROVER_KEYS=key))
    code = await worker.wait_exit(30)
    last = worker.stderr().strip().splitlines()[-1]
    assert code != 0 and READY not in worker.stdout()
    assert f"{key} can be read by group and others (mode 0644)" in last and f"chmod 600 {key}" in last, last
    assert "s" * 48 not in worker.stderr() + worker.stdout()
