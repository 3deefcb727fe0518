"""How to decide a waiting call: the commands an operator can paste.

One text for every place that tells people how to decide (the Web UI's current
details, the CLI's approval block, notifications). Each command names the call *and*
the digest of its arguments, so pasting it decides only the call that was shown: if
the model asked something else under the same id meanwhile, the decision is refused.
Everything that came from a run is shell-quoted.
"""

from __future__ import annotations

import json
import shlex

from signoff.contract import SIGNAL_APPROVAL, UPDATE_APPROVAL


def decide_commands(workflow_id: str, call_id: str, digest: str = "", options: str = "") -> tuple[str, str]:
    """The `signoff approve ...` and `signoff deny ...` lines for one call.

    Args:
        digest: the call's `arguments_digest` (bound with `--digest` when given).
        options: connection flags to append, e.g. ` --address host:7233`.
    """
    target = f"{shlex.quote(workflow_id)} {shlex.quote(call_id)}"
    bound = f" --digest {shlex.quote(digest)}" if digest else ""
    return f"signoff approve {target}{bound}{options}", f"signoff deny {target}{bound} --reason 'why not'{options}"


def decision_input(call_id: str, digest: str, approved: bool) -> str:
    """The JSON input of a decision bound to `digest` (for the update or the signal)."""
    decision: dict[str, object] = {"call_id": call_id, "approved": approved}
    decision.update({"approver": "you"} if approved else {"reason": "why not"})
    if digest:
        decision["arguments_digest"] = digest
    return json.dumps(decision)


def temporal_commands(workflow_id: str, call_id: str, digest: str = "") -> tuple[str, str]:
    """The `temporal` CLI lines: approve through the validated update, deny by signal."""
    wid = shlex.quote(workflow_id)
    approve = shlex.quote(decision_input(call_id, digest, True))
    deny = shlex.quote(decision_input(call_id, digest, False))
    return (
        f"temporal workflow update execute --workflow-id {wid} --name {UPDATE_APPROVAL} --input {approve}",
        f"temporal workflow signal --workflow-id {wid} --name {SIGNAL_APPROVAL} --input {deny}",
    )
