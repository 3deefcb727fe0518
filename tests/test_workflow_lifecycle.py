"""AgentRun lifecycle: bad input, provider errors and retries, cancellation, rounds, secrets."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowFailureError

from signoff.contract import AgentRunResult, RunOptions
from tests.helpers import (
    Reply,
    ScriptedModelServer,
    ScriptedRequest,
    agents_for,
    call,
    running_worker,
    start_run,
    wait_pending,
)


async def run_raw(client: Client, task_queue: str, raw: object) -> BaseException:
    handle = await client.start_workflow("AgentRun", raw, id=f"bad-{uuid.uuid4()}", task_queue=task_queue)
    with pytest.raises(WorkflowFailureError) as failure:
        await handle.result()
    return failure.value.cause


@pytest.mark.parametrize(
    "raw, message",
    [
        ({"agent": "default"}, "give exactly one of 'prompt' or 'messages'"),
        ({"prompt": "a", "messages": [{"role": "user", "content": "b"}]}, "exactly one"),
        ({"prompt": "a", "options": {"max_rounds": "many"}}, "options.max_rounds"),
        ({"prompt": "a", "options": {"max_round": 3}}, "options.max_round"),
        ("just a string", "AgentRunInput"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "messages.0.role"),
    ],
)
async def test_invalid_input_fails_the_run_at_once_naming_the_field(
    client: Client, task_queue: str, tmp_path: Path, raw: object, message: str
) -> None:
    with ScriptedModelServer([]) as model:  # the model is never asked
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            cause = await run_raw(client, task_queue, raw)
    assert message in str(cause)


async def test_unknown_agent_fails_listing_known_agents(client: Client, task_queue: str, tmp_path: Path) -> None:
    with ScriptedModelServer([]) as model:  # the model is never asked
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            cause = await run_raw(client, task_queue, {"agent": "nope", "prompt": "hi"})
    assert "unknown agent 'nope' (known agents: default)" in str(cause)


async def test_provider_400_fails_fast_with_status_and_message(client: Client, task_queue: str, tmp_path: Path) -> None:
    with ScriptedModelServer([Reply.error(400, "model 'x' does not exist")]) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            cause = await run_raw(client, task_queue, {"prompt": "hi"})
            assert model.request_count == 1
    assert "HTTP 400" in str(cause) and "model 'x' does not exist" in str(cause)


@pytest.mark.parametrize(
    "failure", [Reply.error(429, "slow down", retry_after=1), Reply.error(503, "overloaded"), Reply.cut()]
)
async def test_transient_provider_failures_are_retried(
    client: Client, task_queue: str, tmp_path: Path, failure: Reply
) -> None:
    with ScriptedModelServer([failure, Reply.text("recovered")]) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            result = await (await start_run(client, task_queue)).result()
            assert model.request_count == 2
    assert result.text == "recovered"


async def test_cancellation_denies_pending_calls_and_finishes_cancelled(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    script = [Reply.tool_calls([call("run_command", "call_1", command="rm -rf x")])]
    with ScriptedModelServer(script) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(client, task_queue)
            await wait_pending(handle)
            await handle.cancel()
            result: AgentRunResult = await handle.result()
    assert result.finish_reason == "cancelled"
    assert result.messages[-1].content == "Rejected: Run cancelled"
    assert [(a.approved, a.reason) for a in result.approvals] == [(False, "Run cancelled")]


async def test_max_rounds_ends_the_run(client: Client, task_queue: str, tmp_path: Path) -> None:
    def always_list(request: ScriptedRequest) -> Reply:
        return Reply.tool_calls([("list_dir", {})])

    with ScriptedModelServer(always_list) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            result = await (await start_run(client, task_queue, options=RunOptions(max_rounds=3))).result()
    assert (result.finish_reason, result.rounds, model.request_count) == ("max_rounds", 3, 3)


async def test_api_key_reaches_provider_but_not_history(
    client: Client, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-test-" + uuid.uuid4().hex
    monkeypatch.setenv("SIGNOFF_LLM_API_KEY", secret)
    script = [Reply.error(401, "invalid key")]
    with ScriptedModelServer(script) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await client.start_workflow(
                "AgentRun", {"prompt": "hi"}, id=f"key-{uuid.uuid4()}", task_queue=task_queue
            )
            with pytest.raises(WorkflowFailureError):
                await handle.result()
            history = await handle.fetch_history()
    assert model.requests[0].headers["authorization"] == f"Bearer {secret}"
    assert secret not in history.to_json()
