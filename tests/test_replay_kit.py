"""The replay kit: `signoff replay` and `signoff.testing.replay_histories` say which saved runs
the installed code would resume, and for those it would not, why in plain words and how to see it.

Incompatible code is real code: the v1 histories against today's code, a copy of the installed
package with one line of the workflow changed, and test-only variants of `AgentRun`.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowHistory

from signoff.runtime.fingerprint import workflow_code
from signoff.runtime.replay import ReplayVerdict, load_history, plain_words
from signoff.testing import HistoryReplayError, replay_histories
from tests.helpers import Reply, ScriptedModelServer, ScriptedRequest, agents_for, call, running_worker, start_run
from tests.histories.manifest import HERE, Manifest, private_copy
from tests.histories.record import parked
from tests.processes import REPO, clean_env, package_copy
from tests.waiting import assert_eventually
from tests.workflow_variants import ToolsInReverse, WaitsBeforeTheModel

V1 = HERE / "v1" / "approved.json"
UPSERT = "workflow.upsert_search_attributes([SIGNOFF_AGENT.value_set(agent)])"


def replay_cli(*args: str | Path, cwd: Path | None = None, **env: str | Path) -> subprocess.CompletedProcess[str]:
    """`signoff replay ...` in a subprocess (in `cwd`, else a scratch directory), with the test's
    environment less any signoff settings. A Temporal address is configured (never reached by
    a replay of files), so no embedded dev server's payload store is assumed."""
    command = [sys.executable, "-m", "signoff.cli.main", "replay", *map(str, args)]
    env = {"TEMPORAL_ADDRESS": "127.0.0.1:9", "PYTHONPATH": REPO, **env}
    with tempfile.TemporaryDirectory() as scratch:
        return subprocess.run(
            command, cwd=cwd or scratch, env=clean_env(NO_COLOR="1", **env), capture_output=True, text=True, timeout=120
        )


def installed_copy(tmp_path: Path, edit: str) -> Path:
    """A copy of the installed package whose workflow code has `UPSERT` replaced by `edit`."""
    return package_copy(tmp_path / "site", UPSERT, edit)


def test_a_v1_history_would_not_resume_and_the_cli_says_why_in_plain_words() -> None:
    done = replay_cli(V1)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "WOULD NOT RESUME" in done.stdout
    assert (
        "where the history records event 5 (UpsertWorkflowSearchAttributes), the installed code fails the run "
        "(InvalidInput: invalid AgentRunInput: continued: Extra inputs are not permitted)"
    ) in done.stdout
    assert f"shows it: signoff replay --verbose {V1}" in done.stdout
    assert "0 would resume, 1 would not, 0 could not be checked" in done.stdout


def test_verbose_shows_the_sdk_error_and_the_events_around_it() -> None:
    done = replay_cli("--verbose", V1)
    assert done.returncode == 1
    assert "[TMPRL1100] Nondeterminism error: Fail workflow machine does not handle this event" in done.stdout
    assert "    > event 5 (UpsertWorkflowSearchAttributes)" in done.stdout
    assert "event 6 (ActivityTaskScheduled: signoff.chat)" in done.stdout


def test_an_incompatible_change_of_the_installed_code_is_reported_with_the_command_that_shows_it(
    tmp_path: Path,
) -> None:
    """Someone drops the `SignoffAgent` upsert: runs started before would not resume."""
    site = installed_copy(tmp_path, "pass  # the agent's search attribute is no longer set")
    history = HERE / "approved.json"
    done = replay_cli(history, cwd=site, PYTHONPATH=site)
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        "where the history records event 5 (UpsertWorkflowSearchAttributes), the installed code schedules an activity"
    ) in done.stdout
    assert "Guard such a change with workflow.patched(...)" in done.stdout
    assert f"shows it: signoff replay --verbose {history}" in done.stdout
    assert "installed workflow code " in done.stdout and replay_cli(history).returncode == 0


def test_the_same_change_behind_workflow_patched_resumes_old_runs_and_is_in_the_fingerprint(tmp_path: Path) -> None:
    site = installed_copy(tmp_path, f'if not workflow.patched("no-agent-attribute"):\n            {UPSERT}')
    done = replay_cli(HERE / "approved.json", HERE / "parked.json", cwd=site, PYTHONPATH=site)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 would resume, 0 would not" in done.stdout
    code = "from signoff.runtime.fingerprint import workflow_code; print(workflow_code().patches)"
    patches = subprocess.run(
        [sys.executable, "-c", code],
        cwd=site,
        env=clean_env(PYTHONPATH=site),
        capture_output=True,
        text=True,
        check=True,
    )
    assert patches.stdout.strip() == repr(tuple(sorted({*workflow_code().patches, "no-agent-attribute"})))


def test_histories_that_resume_exit_0_and_json_gives_one_object_per_run() -> None:
    done = replay_cli("--json", HERE / "approved.json", HERE / "parked.json", V1)
    assert done.returncode == 1
    outcomes = [json.loads(line) for line in done.stdout.splitlines()]
    assert [o["verdict"] for o in outcomes] == ["resumes", "resumes", "would not resume"]
    assert outcomes[2]["event_id"] == 5 and outcomes[2]["command"] == f"signoff replay --verbose {V1}"
    assert replay_cli(HERE / "approved.json", HERE / "v2" / "approved.json").returncode == 0


def test_an_encrypted_history_cannot_be_checked_without_its_keys_and_resumes_with_them() -> None:
    history = HERE / "encrypted.json"
    without = replay_cli(history)
    assert without.returncode == 3, without.stdout + without.stderr
    assert (
        "its payloads are encrypted with the key(s) history-test, which this process does not have "
        "(SIGNOFF_CODEC_KEYS is not set)"
    ) in without.stdout
    assert "0 would resume, 0 would not, 1 could not be checked" in without.stdout
    assert replay_cli(history, SIGNOFF_CODEC_KEYS=private_copy(HERE / "codec.keys")).returncode == 0


def test_a_stored_history_needs_the_workers_payload_store(tmp_path: Path) -> None:
    history, keys = HERE / "stored.json", private_copy(HERE / "codec.keys")
    without = replay_cli(history, SIGNOFF_CODEC_KEYS=keys)
    assert without.returncode == 3
    assert (
        "external payload store (signoff.file), and this process has none: set SIGNOFF_PAYLOAD_STORE" in without.stdout
    )
    elsewhere = replay_cli(history, SIGNOFF_CODEC_KEYS=keys, SIGNOFF_PAYLOAD_STORE=(tmp_path / "empty").as_uri())
    assert elsewhere.returncode == 3 and "SIGNOFF_PAYLOAD_STORE" in elsewhere.stdout, elsewhere.stdout
    store = (HERE / "payloads").absolute().as_uri()
    assert replay_cli(history, SIGNOFF_CODEC_KEYS=keys, SIGNOFF_PAYLOAD_STORE=store).returncode == 0


def test_what_is_not_a_history_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "notes.json").write_text('{"events": [{"eventId": "1", "eventType": "EVENT_TYPE_TIMER_FIRED"}]}')
    (tmp_path / "garbage.json").write_text("not json")
    for args, says in [
        ((), "give histories to replay"),
        ((tmp_path / "garbage.json",), "is not JSON"),
        ((tmp_path / "notes.json",), "its first event must be WorkflowExecutionStarted"),
        ((tmp_path / "missing.json",), "cannot read"),
        (("--save", tmp_path, HERE / "approved.json"), "--save writes the histories --query fetches"),
        (("--query", "x", "--limit", "0"), "give a number of runs, 1 or more"),
    ]:
        done = replay_cli(*args)
        assert (done.returncode, says in done.stderr) == (2, True), (args, done.stderr)


def test_a_history_of_another_workflow_cannot_be_checked() -> None:
    history = load_history(HERE / "approved.json")
    history.events[0].workflow_execution_started_event_attributes.workflow_type.name = "Invoice"
    (outcome,) = replay_histories(history, check=False)
    assert (
        outcome.verdict is ReplayVerdict.UNREADABLE
        and outcome.reason == "it is a history of 'Invoice', not of 'AgentRun'"
    )


def test_replay_histories_raises_naming_each_run_that_would_not_resume() -> None:
    with pytest.raises(HistoryReplayError) as raised:
        replay_histories(HERE / "approved.json", HERE / "quorum.json", workflows=[WaitsBeforeTheModel])
    message = str(raised.value)
    assert message.startswith("2 of 2 histories would not resume on the installed code:")
    assert (
        "approved.json (would not resume): where the history records event 6 (ActivityTaskScheduled: "
        "signoff.chat), the installed code starts a timer"
    ) in message
    assert [o.event_id for o in raised.value.outcomes] == [6, 6]


def test_replay_histories_takes_directories_and_patterns() -> None:
    outcomes = replay_histories(HERE / "v2", str(HERE / "v1" / "*.json"), check=False)
    frozen = {str(e.path): e.resumes for e in Manifest.load().entries() if e.name.startswith(("v1/", "v2/"))}
    assert {o.source: o.verdict is ReplayVerdict.RESUMES for o in outcomes} == frozen
    assert sum(frozen.values()) == 10 and len(frozen) == 17  # v2: 10 resume, 3 do not; v1: 4 do not


def test_replay_alone_misses_calls_of_one_activity_type_started_in_another_order() -> None:
    """Replay compares each command's kind, activity type and id, not its input: starting a
    turn's tool calls in reverse replays cleanly, though each call would get another's result.
    So a change of workflow code is caught by its fingerprint too (tests/test_replay.py)."""
    (outcome,) = replay_histories(HERE / "parallel_limit.json", workflows=[ToolsInReverse])
    assert outcome.resumes


def test_plain_words_for_the_sdks_other_messages() -> None:
    history = load_history(HERE / "approved.json")
    cases = {
        "Nondeterminism error: No command scheduled for event HistoryEvent(id: 12, ActivityTaskScheduled)": (
            "the history records event 12 (ActivityTaskScheduled: signoff.tool), which the installed code never"
        ),
        "Activity type of scheduled event 'signoff.tool' does not match activity type of activity command "
        "'signoff.chat'": "the history scheduled the activity 'signoff.tool' where the installed code schedules "
        "'signoff.chat'",
        "Non-deprecated patch marker encountered for change fix-1, but there is no corresponding change command!": (
            "the history has the patch marker fix-1, but the installed code no longer calls workflow.patched(fix-1)"
        ),
        "Missing associated machine for LocalActivity(1)": "the result of a local activity (a marker)",
        "something else entirely": "the installed code fails the workflow task: something else entirely",
    }
    for message, says in cases.items():
        assert says in plain_words(message, history)[1], message


def script(request: ScriptedRequest) -> Reply:
    if request.last.role == "user":
        return Reply.tool_calls([call("run_command", "call_1", command="echo hi")])
    return Reply.text("done")


async def test_query_fetches_parked_runs_from_the_server_saves_them_and_they_replay_as_files(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    address = client.service_client.config.target_host
    with ScriptedModelServer(script) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            run = await start_run(client, task_queue, f"park {uuid.uuid4()}")
            await parked(run)
            query = f'SignoffStatus="AwaitingApproval" AND WorkflowId="{run.id}"'

            async def listed() -> None:
                assert [e async for e in client.list_workflows(f'WorkflowId="{run.id}" AND {query}')]

            await assert_eventually(listed, 30)
            saved = tmp_path / "saved"
            done = await asyncio.to_thread(replay_cli, "--query", query, "--save", saved, TEMPORAL_ADDRESS=address)
            await run.terminate("done")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{run.id}/{run.result_run_id}  (workflow {run.id}, run {run.result_run_id}): resumes" in done.stdout
    (file,) = saved.glob("*.json")
    assert replay_histories(file)[0].resumes


async def test_a_history_saved_by_temporal_workflow_show_replays(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    from signoff.runtime.devserver import find_temporal_binary

    with ScriptedModelServer(script) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            run = await start_run(client, task_queue)
            await parked(run)
            show = [
                str(find_temporal_binary()),
                "workflow",
                "show",
                "--workflow-id",
                run.id,
                "--output",
                "json",
                "--address",
                client.service_client.config.target_host,
            ]
            shown = await asyncio.to_thread(subprocess.run, show, capture_output=True, text=True, check=True)
            await run.terminate("done")
    (tmp_path / "shown.json").write_text(shown.stdout)
    (outcome,) = replay_histories(tmp_path / "shown.json")
    assert (outcome.workflow_id, outcome.run_id) == (run.id, run.result_run_id)
    assert isinstance(load_history(tmp_path / "shown.json"), WorkflowHistory)
