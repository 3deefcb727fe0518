"""Determinism: the committed histories (tests/histories/manifest.json) replay on today's code,
those stated not to resume do not, and no change of workflow code goes unmarked."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer
from temporalio.workflow import NondeterminismError

from signoff.runtime.fingerprint import workflow_code
from signoff.runtime.replay import ReplayVerdict, as_its_own_run, load_history
from signoff.runtime.worker import sandbox_runner
from signoff.testing import replay_histories
from signoff.workflows.agent_run import CHECKS_STATE, SEALS_STATE, AgentRun
from signoff.workflows.instances import DRAWS_REQUESTS
from signoff.workflows.upgrade import UPGRADES
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
from tests.histories.manifest import HERE, Entry, Manifest, rule_broken
from tests.histories.record import RECORDERS

MANIFEST = Manifest.load()
RESUMING = [e for e in MANIFEST.entries() if e.resumes]
RETIRED = [e for e in MANIFEST.entries() if not e.resumes]
RULE = (
    "Workflow code changed ({changed}). A run in flight resumes only on code that issues the same commands. "
    "Guard the change with workflow.patched('<id>') (old runs keep the old path), or make it a new version "
    "(runs of the old one need its workers: docs/deploys.md, 'Deploys and parked runs'), then record it with "
    "`python -m tests.histories.accept --why '...'` (--new-version; --no-command-change for a refactor that "
    "cannot change any command). docs/deploys.md: 'Changing workflow code'."
)


def replayer() -> Replayer:
    """A bare replayer as the worker's (tests that replay a history they just made use it)."""
    return Replayer(workflows=[AgentRun], data_converter=pydantic_data_converter, workflow_runner=sandbox_runner())


def test_every_committed_history_is_in_the_manifest_and_every_current_shape_has_a_recorder() -> None:
    files = {p.relative_to(HERE).with_suffix("").as_posix() for p in HERE.rglob("*.json") if p.name != "manifest.json"}
    assert files == {e.name for e in MANIFEST.entries()}
    assert {e.name for e in MANIFEST.entries() if not e.frozen} == set(RECORDERS)
    assert all(e.why_not for e in RETIRED), "a history that need not resume says why"
    assert {e.version for e in MANIFEST.entries()} <= set(range(1, MANIFEST.version + 1))


def test_committed_histories_hold_no_stack_traces() -> None:
    """They would name the recording machine's paths; the recorder empties them (replay never reads them)."""
    assert not [e.name for e in MANIFEST.entries() if '"stackTrace"' in e.path.read_text()]


@pytest.mark.parametrize("entry", RESUMING, ids=[e.name for e in RESUMING])
def test_committed_history_resumes(entry: Entry) -> None:
    replay_histories(entry.path, **entry.replay_settings())


@pytest.mark.parametrize("entry", RETIRED, ids=[e.name for e in RETIRED])
def test_history_stated_not_to_resume_does_not(entry: Entry) -> None:
    (outcome,) = replay_histories(entry.path, check=False, **entry.replay_settings())
    assert outcome.verdict is ReplayVerdict.DIVERGES, f"{entry.name} resumes now: its manifest entry says it does not"


def test_workflow_code_is_the_manifests_or_the_change_is_marked() -> None:
    code, recorded = workflow_code(), MANIFEST.code
    changed = ", ".join(code.changed_since(recorded["modules"], recorded["activities"]))
    assert code.fingerprint == recorded["fingerprint"], RULE.format(changed=changed)
    assert list(code.patches) == recorded["patches"]


def test_every_change_in_the_log_was_made_safe() -> None:
    first, *later = MANIFEST.changes
    assert first["kind"] == "recorded"
    for previous, change in zip(MANIFEST.changes, later, strict=False):
        assert rule_broken(previous, change) is None, change
    last = MANIFEST.changes[-1]
    assert (last["fingerprint"], last["patches"], last["version"]) == (
        MANIFEST.code["fingerprint"],
        MANIFEST.code["patches"],
        MANIFEST.version,
    )


def test_the_verified_history_holds_its_verifications() -> None:
    """Replay needs no keys: each token's verification is a recorded local-activity marker."""
    history = load_history(HERE / "verified.json")
    markers = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED]
    assert len(markers) == 3  # the refused token and two valid ones


def _markers(name: str) -> list[str]:
    """The local activities and patches a committed history recorded, by marker name."""
    return [
        e.marker_recorded_event_attributes.marker_name
        for e in load_history(HERE / f"{name}.json").events
        if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
    ]


def test_the_v3_histories_hold_the_seal_and_its_check() -> None:
    assert _markers("sealed_continued_as_new") == ["core_patch", "core_local_activity"]  # the patch, the seal
    assert _markers("continued_run") == ["core_patch", "core_local_activity"]  # the patch, the check
    assert set(_markers("v3/signed")) == {"core_local_activity"}  # verifications only: signed decisions need no patch
    assert _carried("sealed_continued_as_new")["seal"]  # a worker with a state key sealed it
    assert _carried("continued_as_new")["seal"] == ""  # one without a key seals nothing (the check asks the server)


def test_requests_draw_their_instance_behind_a_patch_and_older_runs_draw_none() -> None:
    """v4's requests carry `binding.request`, drawn behind DRAWS_REQUESTS; v3's carry none, and
    still replay (tests/histories/v3/signed.json)."""
    assert _patches("signed") == [DRAWS_REQUESTS] and _patches("v3/signed") == []
    assert all(b.get("request") for b in _bindings("signed")) and _bindings("signed")
    assert not any("request" in b for b in _bindings("v3/signed")) and _bindings("v3/signed")


def _bindings(name: str) -> list[dict[str, Any]]:
    """The bindings of the requests a committed history's notices carried (the notify activity's input)."""
    found = []
    for event in load_history(HERE / f"{name}.json").events:
        if event.activity_task_scheduled_event_attributes.activity_type.name == "signoff.notify":
            notice = json.loads(event.activity_task_scheduled_event_attributes.input.payloads[0].data)
            request = (notice.get("notice") or notice).get("request") or {}
            found += [request["binding"]] if request.get("binding") else []
    return found


def test_a_reset_runs_history_replays_as_its_own_run() -> None:
    """Its requests draw from the run id: Temporal's Replayer alone gives it its first run's id and
    parts from the history where the new signature approved the call; signoff's replay does not."""
    history = load_history(HERE / "reset.json")
    bare = asyncio.run(replayer().replay_workflow(history, raise_on_replay_failure=False))
    assert isinstance(bare.replay_failure, NondeterminismError)
    (outcome,) = replay_histories(HERE / "reset.json")
    assert outcome.resumes and outcome.run_id == as_its_own_run(history).run_id != history.run_id
    assert _patches("reset") == [DRAWS_REQUESTS]


def _carried(name: str) -> dict[str, Any]:
    """The state a committed history's run continued as new with."""
    ended = load_history(HERE / f"{name}.json").events[-1].workflow_execution_continued_as_new_event_attributes
    return dict(json.loads(ended.input.payloads[0].data))


def test_the_continued_histories_continue_as_new() -> None:
    """Each ends its run by continuing as new (the v1/v2 `continued_as_new` recordings did not)."""
    for name in ("continued_as_new", "continued_between_rounds", "sealed_continued_as_new"):
        last = load_history(HERE / f"{name}.json").events[-1]
        assert last.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW, name
    for name in ("continued_as_new_next", "continued_run"):
        started = load_history(HERE / f"{name}.json").events[0]
        assert started.workflow_execution_started_event_attributes.continued_execution_run_id, name


def _patches(name: str) -> list[str]:
    """The workflow.patched ids a committed history recorded, in order."""
    return [
        json.loads(e.marker_recorded_event_attributes.details["patch-data"].payloads[0].data)["id"]
        for e in load_history(HERE / f"{name}.json").events
        if e.marker_recorded_event_attributes.marker_name == "core_patch"
    ]


def _target_changed(name: str) -> list[bool]:
    """What each workflow task of a committed history said: did the run's target version change?"""
    return [
        e.workflow_task_started_event_attributes.target_worker_deployment_version_changed
        for e in load_history(HERE / f"{name}.json").events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED
    ]


def test_the_moved_histories_moved_and_the_pinned_one_stayed() -> None:
    """The runs that moved saw their target change, and recorded the move's patch before continuing
    as new (their waiting call carried); the run recorded before the move existed saw it and stayed."""
    for name in ("moved_between_rounds", "moved_while_waiting"):
        assert _target_changed(name)[-1] and not _target_changed(name)[0], name
        assert _patches(name) == [UPGRADES, SEALS_STATE], name
        assert (
            load_history(HERE / f"{name}.json")
            .events[-1]
            .HasField("workflow_execution_continued_as_new_event_attributes")
        ), name
    assert [p["status"] for p in _carried("moved_while_waiting")["loop"]["pending"]] == ["awaiting", "done"]
    assert [p["status"] for p in _carried("moved_between_rounds")["loop"]["pending"]] == []
    assert not any(_target_changed("moved_into")) and _patches("moved_into") == [CHECKS_STATE]
    assert any(_target_changed("v3/stayed_pinned")) and _patches("v3/stayed_pinned") == []
    last = load_history(HERE / "v3/stayed_pinned.json").events[-1]
    assert last.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED


async def test_run_completes_with_every_step_replayed(client: Client, task_queue: str, tmp_path: Path) -> None:
    def script(request: ScriptedRequest) -> Reply:
        if request.round == 1:
            return Reply.tool_calls([call("run_command", "call_1", command="echo a"), call("list_dir", "call_2")])
        return Reply.text("done")

    with ScriptedModelServer(script) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path), max_cached_workflows=0):
            handle = await start_run(client, task_queue)
            await wait_pending(handle)
            await handle.execute_update("submit_tool_approval", {"call_id": "call_1", "approved": True})
            result = await handle.result()
        history = await handle.fetch_history()
    assert result.text == "done" and result.messages[2].content == "exit code: 0\na\n"
    replay_histories(history)
