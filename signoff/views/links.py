"""Links for the CLI and for notifications: the Temporal Web UI (`SIGNOFF_UI_URL`, or the dev
server's UI when it is local) and a call's page in the inbox (`SIGNOFF_INBOX_URL`)."""

from __future__ import annotations

from urllib.parse import quote, urlencode

from signoff.config.environment import INBOX_URL_ENV, UI_URL_ENV, Environment

DEFAULT_UI_BASE = "http://localhost:8233"
LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "[::1]", "0.0.0.0"}


def ui_root(address: str, base: str | None = None, env: Environment | None = None) -> str | None:
    """The Web UI: `SIGNOFF_UI_URL`, else `base`, else localhost:8233 when the server is local."""
    root = (env or Environment()).read(UI_URL_ENV) or base
    if not root and address.rpartition(":")[0] in LOCAL_HOSTS:
        root = DEFAULT_UI_BASE
    return root.rstrip("/") if root else None


def ui_link(
    workflow_id: str, namespace: str, address: str, base: str | None = None, env: Environment | None = None
) -> str | None:
    """The Web UI page of a run (see `ui_root`); None when no UI is known."""
    root = ui_root(address, base, env)
    if not root:
        return None
    return f"{root}/namespaces/{quote(namespace, safe='')}/workflows/{quote(workflow_id, safe='')}"


def inbox_path(workflow_id: str, call_id: str) -> str:
    """A call's page in the inbox, relative to its root: `/call?run=RUN&id=CALL`."""
    return "/call?" + urlencode({"run": workflow_id, "id": call_id})


def inbox_root(env: Environment | None = None) -> str | None:
    """Where people reach the inbox (`SIGNOFF_INBOX_URL`), or None."""
    return (env or Environment()).read(INBOX_URL_ENV)


def inbox_link(workflow_id: str, call_id: str, root: str | None) -> str | None:
    """The call's page in the inbox at `root` (see `inbox_root`); None without one."""
    return f"{root}{inbox_path(workflow_id, call_id)}" if root else None
