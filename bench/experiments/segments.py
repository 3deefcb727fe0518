"""Where an approval run's decision → finished time goes, event by event: the server's
own timestamps between consecutive history events after the update was accepted, median
over sequential runs, signoff beside the floor. `python -m bench.experiments.segments`."""

from __future__ import annotations

import argparse
import itertools
import statistics
import uuid
from collections import defaultdict

from temporalio.api.enums.v1 import EventType

from bench.anatomy import label
from bench.approval_latency import _seconds
from bench.common import bench_env, run, workers
from bench.runs import START, approve, finish, history_events, wait_paused


def segments(events) -> list[tuple[str, float]]:
    kinds = [e.event_type for e in events]
    accepted = kinds.index(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED)
    start = max(i for i in range(accepted) if kinds[i] == EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED) - 1
    out = []
    for a, b in itertools.pairwise(events[start:]):
        name = EventType.Name(b.event_type).removeprefix("EVENT_TYPE_")
        out.append((f"{name} {label(b)}".strip(), (_seconds(b) - _seconds(a)) * 1000))
    return out


async def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args(argv)
    queues = {"signoff": f"bench-{uuid.uuid4().hex[:8]}", "floor": f"floor-{uuid.uuid4().hex[:8]}"}
    found: dict[str, list[list[tuple[str, float]]]] = defaultdict(list)
    async with bench_env() as bench, workers(bench, *queues.items()):
        for i in range(args.runs + 3):
            for kind, queue in queues.items():
                handle = await START[kind](bench.client, queue, "gated_noop", 1)
                await wait_paused(bench.client, handle.id)
                await approve(handle, kind)
                await finish(handle, "gated_noop", 1)
                if i >= 3:
                    found[kind].append(segments(await history_events(bench.client, handle.id)))
    for kind, runs in found.items():
        print(f"\n{kind}: {len(runs)} runs")
        shape = [name for name, _ in runs[0]]
        same = [r for r in runs if [n for n, _ in r] == shape]
        total = 0.0
        for j, name in enumerate(shape):
            med = statistics.median(r[j][1] for r in same)
            total += med
            print(f"  {med:7.2f} ms  {name}")
        first = statistics.median(r[0][1] for r in same)
        print(f"  {total:7.2f} ms  total of medians ({len(same)} runs of this shape)")
        print(f"  {total - first:7.2f} ms  from the update's workflow task to the end")


if __name__ == "__main__":
    run(main)
