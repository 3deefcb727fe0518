"""One text of "how to decide this call", bound to its digest and safe to paste."""

from __future__ import annotations

import json
import shlex

from signoff.approval.digest import arguments_digest
from signoff.approval.requests import ToolApprovalRequest
from signoff.views.howto import decide_commands, decision_input, temporal_commands
from signoff.workflows.details import describe_pending

HOSTILE_ID = "c1'; rm -rf ~; echo '"
DIGEST = arguments_digest({"command": "ls"})


def test_pasted_commands_name_the_call_and_its_digest_whatever_the_ids_hold() -> None:
    approve, deny = decide_commands("run 1", HOSTILE_ID, DIGEST)
    assert shlex.split(approve) == ["signoff", "approve", "run 1", HOSTILE_ID, "--digest", DIGEST]
    assert shlex.split(deny) == ["signoff", "deny", "run 1", HOSTILE_ID, "--digest", DIGEST, "--reason", "why not"]


def test_temporal_commands_carry_the_digest_in_their_json_input() -> None:
    update, signal = temporal_commands("run-1", HOSTILE_ID, DIGEST)
    words = shlex.split(update)
    assert words[:4] == ["temporal", "workflow", "update", "execute"]
    assert json.loads(words[-1]) == {
        "call_id": HOSTILE_ID,
        "approved": True,
        "approver": "you",
        "arguments_digest": DIGEST,
    }
    assert json.loads(shlex.split(signal)[-1])["arguments_digest"] == DIGEST
    assert json.loads(decision_input("c1", "", False)) == {"call_id": "c1", "approved": False, "reason": "why not"}


def test_the_web_ui_details_use_the_same_commands() -> None:
    request = ToolApprovalRequest(
        call_id="call_1", name="run_command", arguments={"command": "ls"}, arguments_digest=DIGEST
    )
    details = describe_pending("run-1", [request])
    for line in (*decide_commands("run-1", "call_1", DIGEST), *temporal_commands("run-1", "call_1", DIGEST)):
        assert line in details.splitlines()
