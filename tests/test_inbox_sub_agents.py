"""The inbox shows a sub-agent's waiting call with its path (top, child, tool) and links the top
run: in the list (whose filter by the top run lists its sub-agents' calls too) and on the call's
page, over real HTTP to the real inbox process."""

from __future__ import annotations

import html
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.inbox_harness import Stack, inbox_stack
from tests.waiting import assert_eventually

ALICE = {"X-Forwarded-User": "alice"}


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Stack]:
    async with inbox_stack(tmp_path) as built:
        yield built


async def test_a_sub_agents_call_shows_its_path_and_links_the_top_run_in_the_list_and_on_its_page(
    stack: Stack,
) -> None:
    task = "calls: " + json.dumps([["run_command", {"command": "echo sub-agent-path-marker"}]])
    top = await stack.start([("research", {"task": task})], agent="lead")

    async def waiting() -> dict[str, Any]:
        (item,) = await top.query("pending_approvals")
        assert item["workflow_id"].startswith(f"{top.id}--"), item
        return dict(item)

    item = await assert_eventually(waiting, 30.0)
    child = item["workflow_id"]
    path = f'<a class="mono top" href="/?run={top.id}"'
    async with httpx.AsyncClient(base_url=stack.url, headers=ALICE, timeout=30) as alice:

        async def listed(url: str) -> str:
            text = html.unescape((await alice.get(url)).text)
            assert "sub-agent-path-marker" in text, text[-2000:]
            return text

        for url in ("/", f"/?run={top.id}"):  # the top run's filter lists its sub-agent's call
            text = await assert_eventually(lambda url=url: listed(url), 30.0)  # type: ignore[misc]
            shown = f'{top.id}</a> \u203a <span class="mono">{child}</span> \u203a run_command'
            assert path in text and shown in text
        page = html.unescape((await alice.get(f"/call?run={child}&id={item['call_id']}")).text)
    assert 'id="path"' in page and path in page
    await top.terminate()
