"""`signoff inbox` from the command line: it refuses to serve without knowing who decides, and
`signoff demo --inbox` serves it beside the demo's run, where a decision ends the demo."""

from __future__ import annotations

import asyncio
import html
import re
from pathlib import Path

import httpx
import pytest
from temporalio.client import Client

from tests.cli_harness import cli_env, spawn
from tests.waiting import assert_eventually


@pytest.mark.parametrize(
    ("args", "settings", "said"),
    [
        ([], {}, "must know who is deciding"),
        (["--local-user", "alice", "--host", "0.0.0.0"], {}, "listen on 127.0.0.1"),
        (["--local-user", "alice"], {"SIGNOFF_INBOX_TRUSTED_PROXIES": "10.0.0.5"}, "not both"),
        ([], {"SIGNOFF_INBOX_TRUSTED_PROXIES": "proxy.internal"}, "not an IP address"),
        (
            ["--local-user", "alice"],
            {"SIGNOFF_INBOX_SIGNING_KEY_FILE": "/nonexistent/inbox.key"},
            "SIGNOFF_INBOX_SIGNING_KEY_FILE",
        ),
        (["--local-user", "alice"], {"SIGNOFF_INBOX_ALLOWED_HOSTS": "https://inbox.example.com"}, "no scheme"),
        (["--local-user", "alice"], {"SIGNOFF_INBOX_ALLOWED_HOSTS": "*.example.com"}, "no scheme, path or wildcard"),
        (["--local-user", "alice"], {"SIGNOFF_INBOX_SCOPE": "everyone"}, "must be all"),
        (
            ["--local-user", "alice"],
            {"SIGNOFF_SLACK_BOT_TOKEN_FILE": "/nonexistent/t"},
            "SIGNOFF_SLACK_SIGNING_SECRET_FILE",
        ),
        (
            ["--local-user", "alice"],
            {"SIGNOFF_SLACK_BOT_TOKEN_FILE": "/nonexistent/t", "SIGNOFF_SLACK_SIGNING_SECRET_FILE": "/nonexistent/s"},
            "SIGNOFF_SLACK_USERS",
        ),
    ],
)
async def test_the_inbox_will_not_serve_settings_that_cannot_work(
    client: Client, args: list[str], settings: dict[str, str], said: str
) -> None:
    environment = {**cli_env(client.service_client.config.target_host, "unused"), **settings}
    process = await spawn(environment, "inbox", *args)
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode == 2, out.decode() + err.decode()
    assert said in err.decode()


INBOX_ROW = re.compile(r"inbox\s+(http://127\.0\.0\.1:\d+) \(decide there")


async def test_the_demo_offers_the_inbox_and_a_call_approved_there_finishes_the_run(
    client: Client, tmp_path: Path
) -> None:
    env = cli_env(client.service_client.config.target_host, "unused")
    demo = await spawn(env, "demo", "--inbox", cwd=tmp_path)
    assert demo.stdin is not None and demo.stdout is not None
    demo.stdin.close()  # nobody at a terminal: the demo waits for a decision made elsewhere
    seen = b""
    while (found := INBOX_ROW.search(seen.decode())) is None:
        seen += await asyncio.wait_for(demo.stdout.readline(), timeout=60)
        assert seen, "the demo ended before printing its banner"
    async with httpx.AsyncClient(base_url=found[1]) as browser:

        async def waiting_call() -> str:
            listing = await browser.get("/")
            link = re.search(r'<a href="(/call\?[^"]+)">run_command</a>', listing.text)
            assert listing.status_code == 200 and link is not None
            return html.unescape(link[1])

        page = await browser.get(await assert_eventually(waiting_call, 60))
        assert "you are <strong>tester</strong>" in page.text
        form = dict(re.findall(r'<input type="hidden" name="(csrf|run|id|digest)" value="([^"]*)">', page.text))
        decided = await browser.post("/call/decide", data={**form, "action": "approve"})
        assert 'data-outcome="approved"' in decided.text
    out, err = await asyncio.wait_for(demo.communicate(), timeout=60)
    text = (seen + out).decode()
    assert demo.returncode == 0, text + err.decode()
    assert "approved by tester" in text and "finished: stop" in text
