"""Sign what you see (issue 27, findings 1 and 2): a signer derives what it signs, it never copies it.

The attack, as the red team ran it: a victim run waits for alice to approve `touch <marker>`
under a verified policy; the attacker's own workflow *named* `AgentRun`, on a queue of its own
served by its own worker (`tests/deputy.py`), advertises a waiting call `echo harmless` (with
that call's own digest) whose `binding` is the victim's, and forwards whatever decision it is
sent to the victim. Alice decides it in the inbox (over HTTP, as her browser would) or with
`signoff approve` / `signoff sign` and her own Ed25519 key (`signoff keys new`). Before, the
victim's `touch` ran, audited as approved by alice. Now the signer refuses (HTTP 409, exit 1)
saying which fact differs, or, when the deputy's binding is its own, signs a token that binds
only the deputy's run, which the victim refuses. The marker never appears.
"""

# ruff: noqa: F811 - the harness's fixtures are imported by name and taken as parameters

from __future__ import annotations

import html
import re
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.client import Client, WorkflowHandle

from signoff.approval.identity import ApproverKeys, read_verified
from signoff.approval.policy import PolicyBook
from signoff.approval.signatures import DecisionClaim
from tests.cli_harness import Cli, cli, cli_environ, served  # noqa: F401
from tests.deputy import HARMLESS_DIGEST, DeputyAgentRun, deputy
from tests.governance import wait_event
from tests.helpers import Reply, ScriptedRequest, call, start_run, wait_pending
from tests.processes import REPO, Processes, clean_env, free_port
from tests.test_cli_signing import new_key

VERIFIED = {"run_command": {"verified": True, "approvers": ["alice"]}}
CSRF = re.compile(r'name="csrf" value="([0-9a-f]{64})"')


def touching(marker: Path) -> Any:
    def script(request: ScriptedRequest) -> Reply:
        if request.round == 1:
            return Reply.tool_calls([call("run_command", "call_1", command=f"touch {marker}")])
        return Reply.text("done")

    return script


@asynccontextmanager
async def victim(client: Client, task_queue: str, tmp_path: Path, cli: Cli) -> AsyncIterator[WorkflowHandle[Any, Any]]:
    """The victim: its worker trusts alice's key and the inbox's service key; its run waits for
    alice to approve `touch <marker>`."""
    await new_key(cli, tmp_path, "alice")
    await new_key(cli, tmp_path, "inbox", "--service")
    keys = ApproverKeys.load(tmp_path / "jwks.json")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with served(
        client, task_queue, workspace, touching(tmp_path / "PWNED"), verifier=keys, policies=PolicyBook.parse(VERIFIED)
    ):
        handle = await start_run(client, task_queue)
        await wait_pending(handle)
        yield handle


async def still_waiting(handle: WorkflowHandle[Any, Any], marker: Path) -> None:
    """Nothing the deputy was sent approved the victim's call: it waits, and never ran."""
    (pending,) = await handle.query("pending_approvals")
    assert pending["call_id"] == "call_1" and "touch" in pending["arguments"]["command"]
    assert not marker.exists()
    await handle.terminate()


# --- the inbox ---------------------------------------------------------------------------


async def inbox(procs: Processes, client: Client, tmp_path: Path, served_queues: str) -> str:
    """`signoff inbox --local-user alice`, signing with its service key; its URL."""
    port = free_port()
    process = procs.start(
        f"inbox-{uuid.uuid4().hex[:4]}",
        [sys.executable, str(REPO / "client.py"), "inbox", "--port", str(port), "--local-user", "alice"],
        clean_env(
            TEMPORAL_ADDRESS=client.service_client.config.target_host,
            SIGNOFF_INBOX_SIGNING_KEY_FILE=tmp_path / "inbox.pem",
            SIGNOFF_SERVED_TASK_QUEUES=served_queues,
        ),
    )
    await process.wait_for_output("signoff: inbox on")
    return f"http://127.0.0.1:{port}"


async def approve_in_inbox(url: str, run: str, digest: str) -> tuple[str, int, str]:
    """Alice opens the call's page and approves it as shown: (the pages, the answer's status and text)."""
    async with httpx.AsyncClient(base_url=url, timeout=30) as browser:
        listing = await browser.get("/", params={"run": run})
        page = await browser.get("/call", params={"run": run, "id": "call_1"})
        token = CSRF.search(listing.text)
        assert listing.status_code == 200 and page.status_code == 200 and token is not None, listing.text
        form = {"csrf": token[1], "run": run, "id": "call_1", "digest": digest, "action": "approve"}
        answer = await browser.post("/call/decide", data=form)
        return html.unescape(listing.text + page.text), answer.status_code, html.unescape(answer.text)


@pytest.mark.parametrize("served_queues", ["victim", "victim,deputy"], ids=["deputy-queue-not-served", "served"])
async def test_the_inbox_refuses_to_sign_a_call_whose_binding_is_another_runs(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli, procs: Processes, served_queues: str
) -> None:
    """Finding 1: with its queue served or not, the deputy's call is not signed: 409, and why."""
    async with victim(client, task_queue, tmp_path, cli) as run:
        (wanted,) = await run.query("pending_approvals")
        async with deputy(client, run, wanted) as lying:
            queue = (await lying.describe()).task_queue
            queues = served_queues.replace("victim", task_queue).replace("deputy", queue)
            url = await inbox(procs, client, tmp_path, queues)
            shown, status, answer = await approve_in_inbox(url, lying.id, HARMLESS_DIGEST)
            forwarded = await lying.query("pending_approvals")
        await still_waiting(run, tmp_path / "PWNED")
    assert f"AgentRun on {queue}" in shown and "echo harmless" in shown  # the row and page say where it runs
    assert status == 409, answer
    if served_queues == "victim":
        assert f"is on task queue {queue!r}, which is not one your workers serve" in answer
    else:
        assert "this run's request does not match what it shows" in answer
        assert f"its binding names workflow {run.id!r}, and it is run {lying.id!r}" in answer
        assert f"its binding names chain {wanted['binding']['chain_id']!r}, the server says" in answer
        assert "the arguments it shows digest to" in answer
    assert forwarded[0]["binding"]["workflow_id"] == run.id  # the deputy lied throughout


async def test_a_token_the_inbox_signs_for_a_deputy_binds_only_the_deputys_run(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli, procs: Processes
) -> None:
    """A deputy whose binding is its own gets a signature, for its own run: the victim ignores it."""
    async with victim(client, task_queue, tmp_path, cli) as run:
        (wanted,) = await run.query("pending_approvals")
        async with deputy(client, run, wanted, honest=True) as honest:
            url = await inbox(procs, client, tmp_path, "*")
            _, status, answer = await approve_in_inbox(url, honest.id, HARMLESS_DIGEST)
            await wait_event(run, "decision_ignored")
            sent = await honest.query(DeputyAgentRun.sent)
        await still_waiting(run, tmp_path / "PWNED")
    assert status == 200 and 'data-outcome="approved"' in answer, answer
    assert_binds_only(sent, honest)


# --- the CLI, with a person's own key -------------------------------------------------------


@pytest.mark.parametrize(
    "command", [["approve"], ["deny"], ["sign"], ["extend", "--seconds", "3600"]], ids=lambda c: c[0]
)
@pytest.mark.parametrize("served_queues", ["", "*"], ids=["own-queue-only", "any-queue"])
async def test_the_cli_refuses_to_sign_with_a_persons_key_for_a_deputy(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli, command: list[str], served_queues: str
) -> None:
    """Finding 2: `signoff approve|deny|sign|extend DEPUTY call_1` with alice's own Ed25519 key:
    exit 1, why, nothing sent."""
    alice = {"SIGNOFF_APPROVER_KEY_FILE": str(tmp_path / "alice.pem")}
    async with victim(client, task_queue, tmp_path, cli) as run:
        (wanted,) = await run.query("pending_approvals")
        async with deputy(client, run, wanted) as lying:
            queue = (await lying.describe()).task_queue
            verb, *flags = command
            done = await cli(verb, lying.id, "call_1", *flags, SIGNOFF_SERVED_TASK_QUEUES=served_queues, **alice)
            sent = await lying.query(DeputyAgentRun.sent)
        await still_waiting(run, tmp_path / "PWNED")
    assert done.code == 1, done
    assert "eyJ" not in done.out + done.err and sent == []  # no token printed, nothing sent
    if not served_queues:
        assert f"is on task queue {queue!r}, which is not one your workers serve ({task_queue!r}" in done.err
    else:
        assert "this run's request does not match what it shows" in done.err
        assert f"its binding names workflow {run.id!r}, and it is run {lying.id!r}" in done.err


async def test_what_the_cli_signs_for_a_deputy_binds_only_the_deputys_run(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli
) -> None:
    alice = {"SIGNOFF_APPROVER_KEY_FILE": str(tmp_path / "alice.pem"), "SIGNOFF_SERVED_TASK_QUEUES": "*"}
    async with victim(client, task_queue, tmp_path, cli) as run:
        (wanted,) = await run.query("pending_approvals")
        async with deputy(client, run, wanted, honest=True) as honest:
            done = await cli("approve", honest.id, "call_1", **alice)
            await wait_event(run, "decision_ignored")
            sent = await honest.query(DeputyAgentRun.sent)
        await still_waiting(run, tmp_path / "PWNED")
    assert done.code == 0, done
    assert f"signed for run {honest.id}: AgentRun on task queue 'attacker-" in done.out  # it says what it signed
    assert_binds_only(sent, honest)


def assert_binds_only(sent: list[Any], deputy_run: WorkflowHandle[Any, Any]) -> None:
    """The signed decision the deputy got (and forwarded, and the victim ignored) names the
    deputy's own run, chain and arguments."""
    (payload,) = sent
    (decision,) = payload if isinstance(payload, list) else [payload]
    claim = read_verified(decision["token"]).claim
    assert isinstance(claim, DecisionClaim)
    assert (claim.workflow_id, claim.chain_id) == (deputy_run.id, deputy_run.result_run_id)
    assert (claim.call_id, claim.arguments_digest) == ("call_1", HARMLESS_DIGEST)
