"""The side-by-side bench's tables: per run, each system beside the floor (ratio in the same run),
and billable Temporal Cloud Actions per run and per 10,000 runs a day."""

from __future__ import annotations

import argparse
from typing import Any

from bench.peers.systems import LABELS, RUNS
from bench.report import table

# Temporal Cloud's Pay-As-You-Go price of its first 5M Actions a month, USD per million
# (https://docs.temporal.io/cloud/pricing, "Action pricing"); later tiers are cheaper.
PRICE_PER_MILLION = 50.0
RUNS_PER_DAY, DAYS = 10_000, 30


def cell(value: float | None, floor: float | None, unit: str, scale: float = 1.0, digits: int = 1) -> str:
    """`61.2 ms (1.02x)`, with the ratio to the floor's; the floor's own `60.0 ms (1.00)`; `—` where
    not measured."""
    if value is None:
        return "—"
    text = f"{value * scale:,.{digits}f}{unit}"
    if not floor:
        return text
    return f"{text} ({value / floor:.2f}{'' if value == floor else '×'})"


def history_cell(run: dict[str, Any], floor: dict[str, Any] | None) -> str:
    size = f"{run['events']['p50']:.0f} ev / {run['bytes']['p50'] / 1000:.1f} kB / {run['payloads']['p50']:.0f} pl"
    return f"{size} ({run['bytes']['p50'] / floor['bytes']['p50']:.2f}×)" if floor else size


ROWS: list[tuple[str, str, str, str, str, float]] = [
    # label, run, metric, statistic, unit, scale
    ("auto run: start → result p50", "auto", "start_to_result", "p50", " ms", 1000),
    ("auto run: start → result p95", "auto", "start_to_result", "p95", " ms", 1000),
    ("worker CPU per auto run (mean)", "auto", "worker_cpu", "mean", " ms", 1000),
    ("approval: start → paused p50", "approval", "start_to_paused", "p50", " ms", 1000),
    ("approval: decision → result p50", "approval", "decision_to_result", "p50", " ms", 1000),
    ("approval: decision → result p95", "approval", "decision_to_result", "p95", " ms", 1000),
    ("worker CPU per approval run (mean)", "approval", "worker_cpu", "mean", " ms", 1000),
    ("crash: new worker start → first run done p50", "crash", "to_first_done_s", "p50", " s", 1),
    ("crash: new worker start → all runs done p50", "crash", "to_all_done_s", "p50", " s", 1),
    ("crash: new worker start → ready p50", "crash", "worker_ready_s", "p50", " s", 1),
]


def figure(found: dict[str, Any], run: str, metric: str, statistic: str) -> float | None:
    return found.get(run, {}).get(metric, {}).get(statistic)


def side_by_side(out: dict[str, dict[str, Any]], systems: list[str], args: argparse.Namespace) -> str:
    floor = out.get("floor", {})
    rows = [
        [label, *(cell(figure(out[k], r, m, s), figure(floor, r, m, s), unit, scale) for k in systems)]
        for label, r, m, s, unit, scale in ROWS
        if any(figure(out[k], r, m, s) is not None for k in systems)
    ]
    sticky = [cell(figure(out.get(f"{k}@1s", {}), "crash", "to_first_done_s", "p50"), None, " s", 1) for k in systems]
    if any(c != "—" for c in sticky):
        rows.append(["crash, peers' sticky timeout at signoff's 1 s: → first run done p50", *sticky])
    for run in RUNS:
        history = [history_cell(out[k][run], floor.get(run)) for k in systems]
        rows.append([f"history, {run} run: events / bytes / payloads", *history])
    parked_figures = (
        (f"RSS per parked run ({args.parked} parked)", "per_parked_run_kb", " kB", 0),
        (f"{args.parked} parked: approved → all done", "approve_to_done_s", " s", 2),
    )
    for label, key, unit, digits in parked_figures if args.parked else ():
        found = {k: out[k]["parked"][key] for k in systems}
        rows.append([label, *(cell(found[k], found.get("floor"), unit, 1, digits) for k in systems)])
    title = (
        f"signoff and its peers on Temporal: {args.runs} interleaved blocks (auto, approval, denial) per system, "
        "one dev server, one scripted model; (ratio to the floor, same run)"
    )
    return table(title, ["per run", *(LABELS[k] for k in systems)], rows)


def actions_cell(found: dict[str, Any], floor: dict[str, Any] | None) -> str:
    """`9 (4 + 5 heartbeats) (1.80x)`: billable Actions per run, those no history shows apart."""
    billable, heartbeats = found["billable"], found["heartbeats"]
    text = f"{billable:g}"
    if heartbeats:
        text += f" ({found['history']:g} + {heartbeats:g} heartbeats)"
    elif heartbeats is None:
        text += " (history only)"
    if not floor:
        return text
    return f"{text} ({billable / floor['billable']:.2f}{'' if billable == floor['billable'] else '×'})"


def per_day_cell(found: dict[str, Any]) -> str:
    """`2.4M / $120`: a month of 10,000 such runs a day, in Actions and at the first tier's price."""
    month = found["billable"] * RUNS_PER_DAY * DAYS
    return f"{month / 1e6:.2f}M / ${month / 1e6 * PRICE_PER_MILLION:,.0f}"


def actions_table(out: dict[str, dict[str, Any]], systems: list[str], metered_runs: int) -> str:
    floor = out.get("floor", {}).get("actions", {})
    rows = [[f"{run} run", *(actions_cell(out[k]["actions"][run], floor.get(run)) for k in systems)] for run in RUNS]
    rows += [
        [
            f"{RUNS_PER_DAY:,} {run} runs a day, {DAYS} days: Actions / list price",
            *(per_day_cell(out[k]["actions"][run]) for k in systems),
        ]
        for run in RUNS
    ]
    source = (
        f"heartbeats (in no history) from the dev server's `action` metric over {metered_runs} runs of each kind, "
        "which matched the histories' count"
        if metered_runs
        else "heartbeats not measured (`--actions-runs 0`)"
    )
    title = (
        "Billable Temporal Cloud Actions per run (docs.temporal.io/cloud/actions), counted from each run's history; "
        f"{source}; price at Pay-As-You-Go's first tier, ${PRICE_PER_MILLION:.0f} per million, before plan allowances"
    )
    return table(title, ["Actions", *(LABELS[k] for k in systems)], rows)
