"""DNS rebinding: the inbox and the codec server answer only the `Host` names that are theirs.

A page on another site whose name re-resolves to 127.0.0.1 is same-origin to the browser, so
it could read a page's CSRF token and post the inbox's forms as the local user. Here Chromium
resolves `evil.example` to 127.0.0.1 (`--host-resolver-rules`), as it would after the rebind,
and real HTTP requests carry foreign `Host` headers to a real `signoff inbox` (the stack's,
behind its proxy, and one with `--local-user`) and a real `signoff codec-server`.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from signoff.runtime.hosts import AllowedHosts
from tests.inbox_harness import Stack, inbox_stack
from tests.processes import REPO, clean_env, free_port
from tests.test_codec import key_line, write_keys
from tests.test_web_ui import CHROMIUM
from tests.waiting import assert_eventually

EVIL = "evil.example"


@pytest.fixture(scope="module")
async def stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    async with inbox_stack(tmp_path_factory.mktemp("inbox-hosts")) as built:
        yield built


async def pending(handle: Any) -> Any:
    calls = await handle.query("pending_approvals")
    assert calls
    return calls


async def local_inbox(stack: Stack, *args: str, **env: str) -> str:
    """Another `signoff inbox` on the stack's server (`--local-user alice` unless told); its URL."""
    port = free_port()
    address = stack.client.service_client.config.target_host
    proc = stack.procs.start(
        f"inbox-{port}",
        [sys.executable, str(REPO / "client.py"), "inbox", "--port", str(port), *(args or ("--local-user", "alice"))],
        clean_env(TEMPORAL_ADDRESS=address, **env),
    )
    await proc.wait_for_output("signoff: inbox on")
    return f"http://127.0.0.1:{port}"


async def status_without_host(port: int, path: str = "/") -> str:
    """The status line of an HTTP/1.0 request that names no host at all."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.0\r\n\r\n".encode())
    await writer.drain()
    line = await reader.readline()
    writer.close()
    return line.decode().strip()


async def test_every_route_of_the_inbox_answers_a_foreign_host_421_and_reaches_nothing(stack: Stack) -> None:
    handle = await stack.start([("run_command", {"command": "echo host-check"})])
    (call,) = await assert_eventually(lambda: pending(handle))
    port = int(stack.url.rsplit(":", 1)[1])
    alice = {"X-Forwarded-User": "alice"}
    async with httpx.AsyncClient(base_url=stack.url, headers=alice) as own:
        page = await own.get(f"/call?run={handle.id}&id={call['call_id']}")
        token = re.search(r'name="csrf" value="([0-9a-f]{64})"', page.text)
        assert page.status_code == 200 and token is not None  # the inbox's own name: served
    form = {
        "run": handle.id,
        "id": call["call_id"],
        "digest": call["arguments_digest"],
        "action": "approve",
        "csrf": token[1],
        "call": json.dumps([handle.id, call["call_id"], call["arguments_digest"]]),
    }
    rebound = {**alice, "Host": f"{EVIL}:{port}", "Origin": f"http://{EVIL}:{port}"}
    async with httpx.AsyncClient(base_url=stack.url, headers=rebound, cookies=own.cookies) as evil:
        answers = [
            await evil.get("/"),
            await evil.get(f"/call?run={handle.id}&id={call['call_id']}"),  # the page that holds the token
            await evil.get("/events"),
            await evil.get("/rows?key=x"),
            await evil.get("/static/inbox.js"),
            await evil.get("/favicon.ico"),
            await evil.post("/call/decide", data=form),
            await evil.post("/decide", data=form),
        ]
    assert [a.status_code for a in answers] == [421] * len(answers)
    for answer in answers:
        assert answer.headers["content-type"].startswith("text/plain")
        assert f"does not answer for host '{EVIL}:{port}'" in answer.text
        assert "SIGNOFF_INBOX_ALLOWED_HOSTS" in answer.text
        assert "csrf" not in answer.text and "host-check" not in answer.text
    assert await status_without_host(port) == "HTTP/1.1 421 Misdirected Request"
    assert len(await handle.query("pending_approvals")) == 1  # nothing was decided
    await handle.terminate()


async def test_a_page_whose_name_rebinds_to_loopback_cannot_read_or_decide_as_the_local_user(stack: Stack) -> None:
    from playwright.async_api import async_playwright

    handle = await stack.start([("run_command", {"command": "echo rebinding-victim"})])
    (call,) = await assert_eventually(lambda: pending(handle))
    own = await local_inbox(stack)
    port = int(own.rsplit(":", 1)[1])
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", f"--host-resolver-rules=MAP {EVIL} 127.0.0.1"]
        )
        try:
            page = await browser.new_page()
            answer = await page.goto(f"http://{EVIL}:{port}/call?run={handle.id}&id={call['call_id']}")
            assert answer is not None and answer.status == 421
            assert "rebinding-victim" not in await page.content()
            assert await page.locator("input[name=csrf]").count() == 0
            form = {"run": handle.id, "id": call["call_id"], "digest": call["arguments_digest"], "action": "approve"}
            # the rebinding page's own script: same-origin to the browser, so it may read what it gets
            statuses = await page.evaluate(
                """async (form) => [
                  (await fetch("/", {credentials: "include"})).status,
                  (await fetch("/call/decide", {method: "POST", body: new URLSearchParams(form)})).status,
                  (await fetch("/events")).status,
                ]""",
                form,
            )
            assert statuses == [421, 421, 421]
            answer = await page.goto(f"http://localhost:{port}/call?run={handle.id}&id={call['call_id']}")
            assert answer is not None and answer.status == 200  # its own names still work
            await page.locator("#arguments", has_text="rebinding-victim").wait_for()
        finally:
            await browser.close()
    assert len(await handle.query("pending_approvals")) == 1
    await handle.terminate()


async def test_the_origin_is_checked_against_the_inbox_hosts_never_against_the_requests_host(stack: Stack) -> None:
    handle = await stack.start([("run_command", {"command": "echo origin-check"})])
    (call,) = await assert_eventually(lambda: pending(handle))
    async with httpx.AsyncClient(base_url=stack.url, headers={"X-Forwarded-User": "alice"}) as alice:
        page = await alice.get(f"/call?run={handle.id}&id={call['call_id']}")
        token = re.search(r'name="csrf" value="([0-9a-f]{64})"', page.text)
        assert token is not None
        form = {"run": handle.id, "id": call["call_id"], "digest": call["arguments_digest"], "action": "approve"}
        foreign = await alice.post("/call/decide", data={**form, "csrf": token[1]}, headers={"Origin": "null"})
        assert foreign.status_code == 403
        stream = await alice.get("/events", headers={"Origin": f"http://{EVIL}"})
        assert stream.status_code == 403
        own = await alice.post("/call/decide", data={**form, "csrf": token[1]}, headers={"Origin": stack.url})
        assert own.status_code == 200 and 'data-outcome="approved"' in own.text
    assert (await handle.result()).approvals[0].approver == "alice"


async def test_bound_to_every_address_it_answers_loopback_names_and_configured_hosts_only(stack: Stack) -> None:
    url = await local_inbox(
        stack,
        "--host",
        "0.0.0.0",
        SIGNOFF_INBOX_TRUSTED_PROXIES="127.0.0.1",
        SIGNOFF_INBOX_URL="https://inbox.example.com",
        SIGNOFF_INBOX_ALLOWED_HOSTS="inbox.internal, Ops.Example.com.:9443",
    )
    port = int(url.rsplit(":", 1)[1])
    async with httpx.AsyncClient(base_url=url, headers={"X-Forwarded-User": "alice"}) as http:

        async def status(host: str, path: str = "/") -> int:
            return (await http.get(path, headers={"Host": host})).status_code

        for admitted in (
            f"127.0.0.1:{port}",
            f"localhost:{port}",
            f"[::1]:{port}",
            "inbox.example.com",  # SIGNOFF_INBOX_URL's: any port
            "inbox.example.com:443",
            "INBOX.internal.:8765",
            "ops.example.com:9443",
        ):
            assert await status(admitted) == 200, admitted
        for refused in (
            f"0.0.0.0:{port}",
            f"127.0.0.1:{port + 1}",
            f"{EVIL}:{port}",
            "inbox.example.com.evil.example",
            "ops.example.com",
            "ops.example.com:9444",
            "",
            "inbox.internal:8765:1",
        ):
            assert await status(refused) == 421, refused
        assert await status(EVIL, "/healthz") == 200  # says "ok" to a probe that names a pod's address


async def test_the_codec_server_answers_only_its_own_hosts_and_origins(tmp_path: Path, stack: Stack) -> None:
    keys = write_keys(tmp_path / "codec.keys", key_line("h1"))
    port = free_port()
    codec = stack.procs.start(
        f"codec-{port}",
        [sys.executable, str(REPO / "client.py"), "codec-server", "--port", str(port), "--origin", "http://ui:8233"],
        clean_env(SIGNOFF_CODEC_KEYS=keys, SIGNOFF_INBOX_ALLOWED_HOSTS="codec.internal"),
    )
    await codec.wait_for_output("codec server on")
    body = {"payloads": [{"metadata": {"encoding": "anNvbi9wbGFpbg=="}, "data": "eyJhIjogMX0="}]}
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:

        async def status(**headers: str) -> int:
            return (await http.post("/encode", json=body, headers=headers)).status_code

        assert await status() == 200
        assert await status(Host=f"localhost:{port}", Origin="http://ui:8233") == 200  # the Web UI's origin
        assert await status(Host="codec.internal") == 200
        assert await status(Host=f"{EVIL}:{port}") == 421
        assert await status(Host=f"{EVIL}:{port}", Origin=f"http://{EVIL}:{port}") == 421
        assert await status(Origin=f"http://{EVIL}:{port}") == 403
        refused = await http.post("/decode", json=body, headers={"Host": f"{EVIL}:{port}"})
        assert "does not answer for host" in refused.text and "eyJhIjogMX0=" not in refused.text
    assert await status_without_host(port) == "HTTP/1.1 421 Misdirected Request"


def test_allowed_hosts_name_the_socket_the_public_url_and_the_configured_names() -> None:
    loopback = AllowedHosts.of(("127.0.0.1", 8765), "https://Inbox.Example.com/", ["inbox.internal:9000", "other"])
    assert loopback.exact == {"127.0.0.1:8765", "localhost:8765", "[::1]:8765", "inbox.internal:9000"}
    assert loopback.names == {"inbox.example.com", "other"}
    assert loopback.admits("INBOX.EXAMPLE.COM.") and loopback.admits("other:1")
    assert not loopback.admits("inbox.internal") and not loopback.admits(None) and not loopback.admits("x y")
    assert loopback.admits_origin("https://inbox.example.com") and loopback.admits_origin("http://localhost:8765")
    assert not loopback.admits_origin("null") and not loopback.admits_origin("http://user@localhost:8765")
    assert AllowedHosts.of(("0.0.0.0", 80)).exact == {"127.0.0.1:80", "localhost:80", "[::1]:80"}
    assert AllowedHosts.of(("::", 80)).exact == {"127.0.0.1:80", "localhost:80", "[::1]:80"}
    assert AllowedHosts.of(("10.0.0.5", 8765), "http://localhost:4180").exact == {"10.0.0.5:8765", "localhost:4180"}
    assert AllowedHosts.of(("fd00::5", 1)).exact == {"[fd00::5]:1"}
    assert AllowedHosts.of(("127.0.0.1", 80)).admits("localhost")  # a browser leaves out port 80


if not Path(CHROMIUM).exists() and not os.environ.get("CI"):  # .ci/run installs it: there, a missing one fails
    pytestmark = pytest.mark.skip(reason=f"no chromium at {CHROMIUM}: apt-get install chromium (.ci/run does)")


async def test_bound_to_every_address_it_prints_a_url_it_answers(stack: Stack) -> None:
    """`signoff inbox --host 0.0.0.0` prints a loopback URL, never `http://0.0.0.0:PORT` (which it
    answers 421), and says which names other machines may use."""
    port = free_port()
    proc = stack.procs.start(
        f"inbox-any-{port}",
        [sys.executable, str(REPO / "client.py"), "inbox", "--host", "0.0.0.0", "--port", str(port)],
        clean_env(
            TEMPORAL_ADDRESS=stack.client.service_client.config.target_host, SIGNOFF_INBOX_TRUSTED_PROXIES="127.0.0.1"
        ),
    )
    await proc.wait_for_output("421 to any other")
    (url,) = re.findall(r"signoff: inbox on (\S+)", proc.stdout())
    assert url == f"http://127.0.0.1:{port}"
    assert "SIGNOFF_INBOX_ALLOWED_HOSTS" in proc.stdout() and "0.0.0.0" not in proc.stdout()
    async with httpx.AsyncClient() as http:
        assert (await http.get(url, headers={"X-Forwarded-User": "alice"})).status_code == 200
