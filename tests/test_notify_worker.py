"""`python worker.py` reads SIGNOFF_NOTIFY_URLS and SIGNOFF_NOTIFY_SECRET_FILE, or refuses to start."""

from __future__ import annotations

from pathlib import Path

from temporalio.client import Client

from tests.helpers import (
    Reply,
    ScriptedModelServer,
    ScriptedRequest,
    call,
    start_run,
    wait_pending,
)
from tests.processes import READY, Processes, clean_env
from tests.receiver import Receiver
from tests.waiting import wait_until


def one_command(request: ScriptedRequest) -> Reply:
    if request.round == 1:
        return Reply.tool_calls([call("run_command", "call_1", command="echo hi")])
    return Reply.text("done")


def worker_env(
    client: Client, task_queue: str, model: ScriptedModelServer, tmp_path: Path, **extra: str
) -> dict[str, str]:
    return clean_env(
        TEMPORAL_ADDRESS=client.service_client.config.target_host,
        SIGNOFF_TASK_QUEUE=task_queue,
        SIGNOFF_LLM_BASE_URL=model.base_url,
        SIGNOFF_LLM_MODEL="scripted",
        SIGNOFF_WORKSPACE=tmp_path,
        **extra,
    )


async def test_a_worker_configured_by_env_sends_signed_notices_with_its_links(
    client: Client, task_queue: str, procs: Processes, tmp_path: Path
) -> None:
    (tmp_path / "notify.secret").write_text("a-notify-secret-from-a-file\n")
    (tmp_path / "notify.secret").chmod(0o600)
    with Receiver() as receiver, ScriptedModelServer(one_command) as model:
        env = worker_env(
            client,
            task_queue,
            model,
            tmp_path,
            SIGNOFF_NOTIFY_URLS=f" {receiver.url} ,",
            SIGNOFF_NOTIFY_SECRET_FILE=str(tmp_path / "notify.secret"),
            SIGNOFF_UI_URL="https://temporal-ui.example.com/",
        )
        worker = procs.worker("worker", env)
        await worker.wait_for_output(READY)
        assert "notifications to http://127.0.0.1:" in worker.stdout() and "(signed)" in worker.stdout()
        assert "/hook" not in worker.stdout()
        handle = await start_run(client, task_queue)
        await wait_pending(handle)
        await wait_until(lambda: len(receiver.deliveries) == 1, 20, "no notice arrived")
        await handle.terminate()
    (notice,) = receiver.deliveries
    assert notice.signed_with(b"a-notify-secret-from-a-file")
    body = notice.json
    assert body["ui_url"] == f"https://temporal-ui.example.com/namespaces/default/workflows/{handle.id}"
    address = client.service_client.config.target_host
    digest = body["request"]["arguments_digest"]
    assert body["commands"][0] == f"signoff approve {handle.id} call_1 --digest {digest} --address {address}"


async def test_a_worker_refuses_to_start_with_a_notify_url_that_is_not_http(
    client: Client, task_queue: str, procs: Processes, tmp_path: Path
) -> None:
    with ScriptedModelServer(one_command) as model:
        env = worker_env(client, task_queue, model, tmp_path, SIGNOFF_NOTIFY_URLS="hooks.example.com/secret-path")
        worker = procs.worker("worker", env)
        code = await worker.wait_exit(30)
    assert code != 0 and "SIGNOFF_NOTIFY_URLS: entry 1 (hooks.example.com/...)" in worker.stderr()
    assert "secret-path" not in worker.stderr()
