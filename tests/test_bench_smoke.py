"""The benchmarks still run and check their results (timing is not asserted: benches are not tests)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


def test_round_overhead_bench_runs_and_validates_results(tmp_path: Path) -> None:
    env = {**os.environ, "BENCH_RESULTS": str(tmp_path)}
    command = [sys.executable, "-m", "bench.round_overhead", "--runs", "2", "--warmup", "1"]
    out = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    result = json.loads((tmp_path / "round_overhead.json").read_text())
    assert set(result["stats"]) >= {"signoff", "floor"}


def test_auto_mode_bench_runs_and_auto_mode_decides_its_calls(tmp_path: Path) -> None:
    env = {**os.environ, "BENCH_RESULTS": str(tmp_path)}
    command = [sys.executable, "-m", "bench.auto_mode", "--runs", "2", "--warmup", "0"]
    out = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    result = json.loads((tmp_path / "auto_mode.json").read_text())
    assert set(result["stats"]) == {"person", "auto"} and result["stats"]["auto"]["prompt_tokens"]["p50"] > 0


def test_mcp_calls_bench_runs_and_validates_results(tmp_path: Path) -> None:
    env = {**os.environ, "BENCH_RESULTS": str(tmp_path)}
    command = [sys.executable, "-m", "bench.mcp_calls", "--runs", "1", "--rounds", "2", "--calls", "5"]
    out = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    result = json.loads((tmp_path / "mcp_calls.json").read_text())
    assert set(result["stats"]) == {"plain", "plain, MCP agent", "MCP stdio", "MCP HTTP"}
    assert set(result["direct"]) == {"function", "MCP stdio", "MCP HTTP"}


def test_scale_bench_runs_and_classes_runs_by_the_workers_cache_counters(tmp_path: Path) -> None:
    env = {**os.environ, "BENCH_RESULTS": str(tmp_path)}
    command = [sys.executable, "-m", "bench.scale", "--runs", "40", "--cache", "20", "--sample", "3", "--handover", "4"]
    out = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    result = json.loads((tmp_path / "scale.json").read_text())
    samples = result["one_worker"]["samples"]
    # Every approved run was classed by the counters (else the bench fails). Which way is the
    # machine's: under load a replay can start from the normal queue and count no cache miss, so
    # all six may class as cached; the full bench reports `expected_as_classed` for that.
    assert len(samples["evicted"]) + len(samples["cached"]) == 6
    assert sum(result["one_worker"]["expected_as_classed"].values()) <= 6
    assert {k: v["n"] for k, v in result["handover"]["approve_to_done_s"].items()} == {
        "started on A, approved on B": 4,
        "started and approved on B": 4,
    }


def test_caller_check_bench_runs_and_both_ways_give_the_same_answer(tmp_path: Path) -> None:
    env = {**os.environ, "BENCH_RESULTS": str(tmp_path)}
    command = [sys.executable, "-m", "bench.caller_check", "--calls", "5"]
    out = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    stats = json.loads((tmp_path / "caller_check.json").read_text())["stats"]
    assert {name: stats[name]["cpu_ms"]["n"] for name in stats} == {"sdk_describe": 5, "raw_describe": 5}


def test_spent_bench_runs_and_the_record_is_one_start_per_gated_call(tmp_path: Path) -> None:
    env = {**os.environ, "BENCH_RESULTS": str(tmp_path)}
    command = [sys.executable, "-m", "bench.spent", "--runs", "1", "--warmup", "0"]
    out = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    result = json.loads((tmp_path / "spent.json").read_text())
    assert set(result["stats"]) == {"recorded", "unrecorded"}
    assert result["rpcs_added"]["StartWorkflowExecution"] == 1  # the record; each run checked it left one


def run_peers_bench(tmp_path: Path, *args: str) -> dict:
    env = {**os.environ, "BENCH_RESULTS": str(tmp_path)}
    tiny = ["--runs", "1", "--warmup", "0", "--parked", "2", "--crash-runs", "1", "--actions-runs", "1"]
    command = [sys.executable, "-m", "bench.peers", *tiny, *args]
    out = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    return json.loads((tmp_path / "peers.json").read_text())


def test_peers_bench_checks_every_run_of_signoff_and_the_floor_without_the_peers_extra(tmp_path: Path) -> None:
    result = run_peers_bench(tmp_path, "--systems", "signoff,floor")
    # One block and one metered run of each kind per system: 2 + 2 of each kind checked.
    assert result["checked"] == {"auto": 4, "approved": 4, "denied": 4}
    # The floor's runs bill what its workflow does: a start, one activity per model turn and
    # tool call, one accepted update (the server's own count agreed, or the bench failed).
    floor = {run: found["billable"] for run, found in result["stats"]["floor"]["actions"].items()}
    assert floor == {"auto": 4, "approval": 5, "denial": 4}


def test_peers_bench_runs_pydantic_ai_and_openai_agents_beside_signoff_and_checks_every_run(tmp_path: Path) -> None:
    for module in ("pydantic_ai.durable_exec.temporal", "temporalio.openai_agents"):
        pytest.importorskip(module, reason="the peers are an optional extra: pip install -e '.[peers]'")
    result = run_peers_bench(tmp_path)
    assert result["checked"] == {"auto": 8, "approved": 8, "denied": 8}
    assert set(result["stats"]) == {
        "signoff",
        "pydantic_ai",
        "openai_agents",
        "floor",
        "pydantic_ai@1s",
        "openai_agents@1s",
    }
    for kind in ("pydantic_ai", "openai_agents"):
        assert {"auto", "approval", "denial", "crash", "parked", "actions"} <= set(result["stats"][kind])


def test_sub_agents_bench_runs_and_a_delegated_call_costs_a_child_runs_history(tmp_path: Path) -> None:
    env = {**os.environ, "BENCH_RESULTS": str(tmp_path)}
    command = [sys.executable, "-m", "bench.sub_agents", "--runs", "1", "--warmup", "0", "--parked", "3"]
    out = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    result = json.loads((tmp_path / "sub_agents.json").read_text())
    plain, delegated = result["stats"]["plain"], result["stats"]["delegated"]
    assert delegated["actions"]["p50"] > plain["actions"]["p50"]  # the child's start, turns and reports
    assert set(result["memory"]) == {"plain", "delegated"}


def test_fleet_bench_finishes_every_run_once_through_a_worker_killed_and_one_added(tmp_path: Path) -> None:
    env = {**os.environ, "BENCH_RESULTS": str(tmp_path)}
    command = [sys.executable, "-m", "bench.fleet", "--smoke"]
    out = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    result = json.loads((tmp_path / "fleet.json").read_text())
    churn, cached = result["churn"], result["cached"]
    # Every run ended once (the bench checked each result and the tool log, or it failed).
    assert sum(churn["ended"].values()) == sum(cached["ended"].values()) == result["args"]["runs"]
    assert churn["churn"]["killed"] != churn["churn"]["added"] and churn["cache"] < cached["cache"]
    assert len(churn["peak_rss_kb"]) == result["args"]["workers"] + 1  # the added worker was sampled too
    assert {kind: len(levels) for kind, levels in result["saturation"].items()} == {"signoff": 1, "floor": 1}


def test_streams_bench_runs_and_bounds_the_signals_per_model_turn(tmp_path: Path) -> None:
    env = {**os.environ, "BENCH_RESULTS": str(tmp_path)}
    command = [sys.executable, "-m", "bench.streams", "--runs", "1", "--tokens", "60", "--pause", "0.002"]
    out = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    result = json.loads((tmp_path / "streams.json").read_text())
    assert 1 <= result["stats"]["signals"]["max"] <= result["max_signals"]
    assert result["stats"]["ttft_in_process"]["n"] == 1
