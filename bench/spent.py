"""Bench 13, what spending a signature once costs per gated call: `python -m bench.spent [--runs 30]`.

Runs that each wait for one approval of `gated_noop` under a verified policy (a JWKS with a
person's Ed25519 key; each decision signed as a signer signs it, once the run pauses, not
timed), approved by update, on two workers alternating (ABBA):

- `recorded`: signoff as it is: the tool activity spends the signature in the server's record
  (`signoff.activities.spent`: one `StartWorkflowExecution` of `signoff-spent-<digest>`);
- `unrecorded`: the same worker run through `bench/experiments/no_spent_record.py`, which
  records nothing (the path without the record: the baseline, never a configuration).

Reports decision → finished and the tool activity's started → completed (server clock),
p50/p95, `recorded ÷ unrecorded`, the frontend RPCs of one run of each (the dev server's own
`service_requests`, read before and after, polls left out) and whether each recorded run left
exactly its record.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
import uuid
from pathlib import Path

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import DescribeWorkflowExecutionRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from bench.anatomy import POLLS, SETTLE, rpc_counts
from bench.common import BenchEnv, BenchError, bench_env, free_port, run, workers
from bench.governance import TOOL, signed_approval, tool_seconds
from bench.report import summary, table, write_results
from bench.runs import START, finish, history_events, wait_paused
from signoff.approval.evidence import Counted
from signoff.approval.identity import read_verified
from signoff.approval.signatures import DecisionClaim
from signoff.approval.spent import RECORD_TYPE, record_id
from signoff.signing.keys import SigningKey, new_key_pair

KINDS = ("recorded", "unrecorded")


async def one(bench: BenchEnv, kind: str, queue: str, key: SigningKey) -> dict[str, float]:
    client = bench.client
    handle = await START["signoff"](client, queue, TOOL, 1)
    await wait_paused(client, handle.id)
    decision = await signed_approval(client, key, handle)
    t_decided = time.perf_counter()
    await handle.execute_update("submit_tool_approval", decision)
    await finish(handle, TOOL, 1)
    t_done = time.perf_counter()
    kept = await _record_type(client, decision["token"])
    if (kept == RECORD_TYPE) != (kind == "recorded"):
        raise BenchError(f"{handle.id} ({kind}): its signature's record is {kept or 'absent'}")
    events = await history_events(client, handle.id)
    return {"decision_to_finished": t_done - t_decided, "tool_activity": tool_seconds(events)}


async def _record_type(client: Client, token: str) -> str | None:
    """The workflow type of the record that spent `token` (None: there is none)."""
    identity = read_verified(token)
    assert isinstance(identity.claim, DecisionClaim)
    record = record_id(Counted(identity, identity.claim, grant_use=False))
    request = DescribeWorkflowExecutionRequest(
        namespace=client.namespace, execution=WorkflowExecution(workflow_id=record)
    )
    try:
        described = await client.workflow_service.describe_workflow_execution(request)
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return None  # nothing recorded
        raise
    return described.workflow_execution_info.type.name


async def rpcs_of_one(bench: BenchEnv, kind: str, queue: str, key: SigningKey, metrics: str) -> dict[str, int]:
    """The frontend RPCs of one approved run (the signer's two questions included)."""
    await asyncio.sleep(SETTLE)  # the counters are reported, not live: let earlier requests land
    before = await rpc_counts(metrics)
    await one(bench, kind, queue, key)
    await asyncio.sleep(SETTLE)
    counted = await rpc_counts(metrics) - before
    return {op: n for op, n in sorted(counted.items()) if op not in POLLS}


async def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="signoff-bench-spent-"))
    pem, entry = new_key_pair("bench", kid="bench-1")
    (folder / "bench.pem").write_bytes(pem)
    (folder / "bench.pem").chmod(0o600)
    (folder / "approvers.json").write_text(json.dumps({"keys": [entry]}))
    (folder / "policies.json").write_text(json.dumps({TOOL: {"verified": True}}))
    key = SigningKey.load(folder / "bench.pem", "bench-1")
    queues = {kind: f"{kind}-{uuid.uuid4().hex[:8]}" for kind in KINDS}
    verified = {
        "SIGNOFF_POLICY_FILE": str(folder / "policies.json"),
        "SIGNOFF_APPROVER_KEYS": str(folder / "approvers.json"),
    }
    env = {queue: verified for queue in queues.values()}
    prefixes = {queues["unrecorded"]: ["-m", "bench.experiments.no_spent_record"]}
    samples: dict[str, list[dict[str, float]]] = {k: [] for k in KINDS}
    port = free_port()
    metrics = f"http://127.0.0.1:{port}/metrics"
    async with (
        bench_env("--metrics-port", str(port)) as bench,
        workers(bench, *(("signoff", q) for q in queues.values()), env=env, prefixes=prefixes),
    ):
        for _ in range(args.warmup):
            for kind, queue in queues.items():
                await one(bench, kind, queue, key)
        rpcs = {kind: await rpcs_of_one(bench, kind, queue, key, metrics) for kind, queue in queues.items()}
        for i in range(args.runs):
            order = list(KINDS) if i % 2 == 0 else list(KINDS)[::-1]
            for kind in order:
                samples[kind].append(await one(bench, kind, queues[kind], key))
    stats = {k: {m: summary([s[m] for s in v]) for m in v[0]} for k, v in samples.items()}
    base = stats["unrecorded"]
    rows = [
        [
            kind,
            s["decision_to_finished"]["p50"] * 1000,
            s["decision_to_finished"]["p95"] * 1000,
            s["tool_activity"]["p50"] * 1000,
            s["tool_activity"]["p95"] * 1000,
            s["decision_to_finished"]["p50"] / base["decision_to_finished"]["p50"],
            s["tool_activity"]["p50"] / base["tool_activity"]["p50"],
            sum(rpcs[kind].values()),
            rpcs[kind].get("StartWorkflowExecution", 0),
        ]
        for kind, s in stats.items()
    ]
    text = table(
        f"What spending a signature costs: {args.runs} verified runs each, one approval (ms)",
        [
            "worker",
            "decision→finished p50",
            "p95",
            "tool activity p50",
            "p95",
            "vs unrecorded",
            "tool vs unrecorded",
            "frontend RPCs/run",
            "of them StartWorkflowExecution",
        ],
        rows,
    )
    extra = {op: rpcs["recorded"].get(op, 0) - rpcs["unrecorded"].get(op, 0) for op in rpcs["recorded"]}
    data = {"args": vars(args), "stats": stats, "rpcs": rpcs, "rpcs_added": extra, "raw": samples}
    write_results("spent", data, [text, f"RPCs the record adds per run: {json.dumps(extra)}"])
    return data


if __name__ == "__main__":
    run(main)
