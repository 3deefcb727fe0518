"""The pieces of `signoff demo` that need no Temporal: its model, workspace and banner.

The demo works offline on a fresh machine: with no `SIGNOFF_LLM_BASE_URL` it serves
the built-in scripted model (`signoff.testing.demo_script`) in-process.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from signoff.chat.base import ChatClient
from signoff.chat.config import LLMConfig
from signoff.chat.openai import OpenAIChatClient
from signoff.cli.style import Style
from signoff.config.environment import DATA_DIR, DEMO_NO_KEY_ENV, LLM_BASE_URL_ENV, Environment
from signoff.testing import ScriptedModelServer, demo_script

DEMO_PROMPT = "What is in the workspace? List its files."
DEMO_WORKSPACES = DATA_DIR / "demo-workspace"
SCRIPTED_MODEL = (
    "built-in scripted model (no LLM configured; set SIGNOFF_LLM_BASE_URL/SIGNOFF_LLM_MODEL/"
    "SIGNOFF_LLM_API_KEY to use a real one)"
)


def configured_model(env: Environment | None = None) -> LLMConfig | None:
    """The provider of `SIGNOFF_LLM_*` when `SIGNOFF_LLM_BASE_URL` is set, else None.

    Raises:
        ConfigError: `SIGNOFF_LLM_BASE_URL` is set but the configuration cannot work.
    """
    env = env or Environment()
    return LLMConfig.from_env(env) if env.read(LLM_BASE_URL_ENV) else None


@contextlib.contextmanager
def demo_model(config: LLMConfig | None) -> Iterator[tuple[str, Callable[[], ChatClient]]]:
    """A label for the screen and a chat-client factory for the demo's worker.

    `config`'s provider, or (None) the scripted model, served in-process until the block ends.
    """
    if config is not None:
        yield f"{config.model} at {config.base_url} (from SIGNOFF_LLM_*)", lambda: OpenAIChatClient(config)
        return
    with ScriptedModelServer(demo_script) as server:
        scripted = LLMConfig(base_url=server.base_url, model="scripted", api_key_env=DEMO_NO_KEY_ENV)
        yield SCRIPTED_MODEL, lambda: OpenAIChatClient(scripted)


def demo_workspace(parent: Path = DEMO_WORKSPACES) -> Path:
    """A fresh directory for the demo's tools, so its commands touch nothing of yours."""
    parent.mkdir(parents=True, exist_ok=True)
    workspace = Path(tempfile.mkdtemp(prefix="run-", dir=parent))
    (workspace / "README.txt").write_text("A scratch workspace made by `signoff demo`.\n")
    return workspace


INBOX_HINT = "add --inbox to decide in a browser (or: signoff inbox --local-user NAME)"


def demo_banner(
    style: Style,
    address: str,
    started: bool,
    ui: str | None,
    model: str,
    workspace: Path,
    task_queue: str,
    inbox: str | None = None,
) -> list[str]:
    """What the demo is made of: server, Web UI, inbox, model, workspace, worker."""
    server = "embedded dev server, started for this demo" if started else "already running"
    rows = [
        ("Temporal", f"{address} ({server})"),
        ("Web UI", ui or "-"),
        ("inbox", f"{inbox} (decide there, or here)" if inbox else INBOX_HINT),
        ("model", model),
        ("workspace", str(workspace)),
        ("worker", f"in this process, task queue {task_queue}"),
    ]
    title = style.paint("signoff demo: an agent whose shell commands wait for your sign-off", "bold")
    return [title, *(f"  {name:<10} {value}" for name, value in rows), ""]
