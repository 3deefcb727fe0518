"""What benches report: summaries of samples, the machine, tables, and `bench/results/*.json`."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import temporalio

from bench.common import BYTECODE, WORKER_PREFIX
from signoff.runtime.devserver import find_temporal_binary

REPO = Path(__file__).resolve().parent.parent
RESULTS = Path(os.environ.get("BENCH_RESULTS") or REPO / "bench" / "results")


def percentile(values: Sequence[float], p: float) -> float:
    """Linear-interpolated percentile, p in [0, 100]."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def summary(values: Sequence[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "mean": statistics.fmean(values),
        "p50": percentile(values, 50),
        "p95": percentile(values, 95),
        "min": min(values),
        "max": max(values),
    }


def machine() -> dict[str, Any]:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    mem_kb = int(Path("/proc/meminfo").read_text().split()[1])
    version = subprocess.run([str(find_temporal_binary()), "--version"], capture_output=True, text=True).stdout.strip()
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": round(mem_kb / 1024 / 1024, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "temporalio": temporalio.__version__,
        "temporal_cli": version,
        "loadavg": os.getloadavg(),
        "worker_bytecode": BYTECODE,
        "worker_prefix": WORKER_PREFIX,
    }


def fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[fmt(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + " |"  # noqa: E731
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([f"\n{title}", line(headers), sep, *(line(r) for r in cells)])


def write_results(name: str, data: dict[str, Any], tables: Sequence[str]) -> Path:
    """Print the tables and write `bench/results/<name>.json` (with the machine)."""
    for text in tables:
        print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    payload = {"bench": name, "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": machine(), **data}
    payload["tables"] = list(tables)
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    print(f"\nwrote {path}")
    return path


def target(ok: bool) -> str:
    return "met" if ok else "MISSED"
