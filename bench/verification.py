"""Bench 8, what checking a sign-off costs per gated call: `python -m bench.verification [--calls 2000]`.

In process, no server: the work the tool activity adds to an approved call under a verified
policy (`activities/tool.py` `SignOffs.problem`): verifying each bound token against the
worker's keys and checking it fits the call (`signoff.approval.evidence`), for one signature (quorum
1) and for two plus a requester token (quorum 2, separate_requester), with a person's
Ed25519 key (a JWKS of 20 people, found by `kid`) and with a shared HS256 secret. The
baseline is the same loop doing nothing but build the call (the floor of the measurement).
Also the workflow side's one verification per decision (`signoff.identify`: one `verify`).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import BenchError, run
from bench.report import table, write_results
from signoff.approval.evidence import CallToRun, sign_off_problem
from signoff.approval.identity import ApproverKeys, issue_token
from signoff.approval.policy import ApprovalPolicy
from signoff.approval.requests import Binding, ToolApprovalResponse
from signoff.approval.signatures import decision_claim, requester_claim
from signoff.signing.keys import SigningKey, new_key_pair

BINDING = Binding(workflow_id="wf", chain_id="run-1", call_id="call_1", tool="deploy", arguments_digest="a" * 64)
CALL = CallToRun(
    workflow_id="wf",
    chain_id="run-1",
    call_id="call_1",
    tool="deploy",
    arguments_digest="a" * 64,
    run_digest="a" * 64,
    at=datetime.now(UTC),
)
APPROVAL = decision_claim(BINDING, ToolApprovalResponse(call_id="call_1", approved=True))


def _keys(folder: Path) -> tuple[ApproverKeys, dict[str, SigningKey], ApproverKeys, Path]:
    entries, signers = [], {}
    for index in range(20):
        pem, entry = new_key_pair(f"person{index}", kid=f"person{index}-1")
        (folder / f"{index}.pem").write_bytes(pem)
        (folder / f"{index}.pem").chmod(0o600)
        entries.append(entry)
        signers[f"person{index}"] = SigningKey.load(folder / f"{index}.pem", f"person{index}-1")
    (folder / "jwks.json").write_text(json.dumps({"keys": entries}))
    (folder / "secret").write_text("s" * 48)
    (folder / "secret").chmod(0o600)
    return ApproverKeys.load(folder / "jwks.json"), signers, ApproverKeys.load(folder / "secret"), folder / "secret"


def _check(keys: ApproverKeys, policy: ApprovalPolicy, tokens: list[str], requester: str | None) -> None:
    approvals = [keys.verify(t, CALL.at, expired_ok=True) for t in tokens]
    who = keys.verify(requester, CALL.at, expired_ok=True) if requester else None
    if sign_off_problem(policy, CALL, approvals, who) is not None:
        raise BenchError("a genuine sign-off was refused")


def _per_call(calls: int, work: Any) -> float:
    for _ in range(min(calls, 100)):
        work()  # warm up
    started = time.perf_counter()
    for _ in range(calls):
        work()
    return (time.perf_counter() - started) / calls


async def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args(argv)
    jwks, signers, shared, secret = _keys(Path(tempfile.mkdtemp(prefix="signoff-bench-verify-")))
    one, two = ApprovalPolicy(verified=True), ApprovalPolicy(verified=True, quorum=2, separate_requester=True)
    person = [signers["person3"].sign(APPROVAL), signers["person17"].sign(APPROVAL)]
    asker = signers["person9"].sign(requester_claim("wf"))
    hs = [issue_token(secret, name, signs=APPROVAL) for name in ("alice", "bob")]
    hs_asker = issue_token(secret, "carol", signs=requester_claim("wf"))
    cases = {
        "floor (build the call, check nothing)": lambda: CALL.tool,
        "Ed25519, quorum 1": lambda: _check(jwks, one, person[:1], None),
        "Ed25519, quorum 2 + requester": lambda: _check(jwks, two, person, asker),
        "HS256, quorum 1": lambda: _check(shared, one, hs[:1], None),
        "HS256, quorum 2 + requester": lambda: _check(shared, two, hs, hs_asker),
        "identify (workflow side, per decision), Ed25519": lambda: jwks.verify(person[0]),
    }
    figures = {name: _per_call(args.calls, work) * 1000 for name, work in cases.items()}
    rows = [[name, ms, ms * 1000] for name, ms in figures.items()]
    text = table(
        f"Checking a sign-off, per gated call ({args.calls} calls each, in process)",
        ["check", "ms per call", "µs per call"],
        rows,
    )
    data = {"args": vars(args), "ms_per_call": figures}
    write_results("verification", data, [text])
    return data


if __name__ == "__main__":
    run(main)
