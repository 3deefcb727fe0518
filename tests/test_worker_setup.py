"""The worker registers the search attributes it needs, or prints commands that do."""

from __future__ import annotations

import shlex
import subprocess

import pytest
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from signoff.contract import SEARCH_ATTRIBUTES
from signoff.runtime.devserver import find_temporal_binary
from signoff.runtime.storage import data_converter
from signoff.runtime.worker import ensure_search_attributes


async def bare_server() -> WorkflowEnvironment:
    """A dev server with none of signoff's search attributes."""
    return await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(find_temporal_binary()), data_converter=data_converter(None)
    )


async def registered(client: Client) -> set[str]:
    response = await client.operator_service.list_search_attributes(ListSearchAttributesRequest(namespace="default"))
    return set(response.custom_attributes) & set(SEARCH_ATTRIBUTES)


async def test_worker_registers_missing_search_attributes() -> None:
    env = await bare_server()
    try:
        assert await registered(env.client) == set()
        await ensure_search_attributes(env.client, "default")
        assert await registered(env.client) == set(SEARCH_ATTRIBUTES)
    finally:
        await env.shutdown()


async def test_printed_commands_register_them_where_the_worker_may_not(capsys: pytest.CaptureFixture[str]) -> None:
    env = await bare_server()
    try:
        await ensure_search_attributes(env.client, "no-such-namespace")
        printed = capsys.readouterr().err
        commands = [line.strip() for line in printed.splitlines() if line.strip().startswith("temporal ")]
        assert len(commands) == len(SEARCH_ATTRIBUTES), printed
        address = env.client.service_client.config.target_host
        for command in commands:
            args = shlex.split(command.replace("no-such-namespace", "default"))
            command_line = [str(find_temporal_binary()), *args[1:], "--address", address]
            subprocess.run(command_line, check=True, capture_output=True)
        assert await registered(env.client) == set(SEARCH_ATTRIBUTES)
    finally:
        await env.shutdown()
