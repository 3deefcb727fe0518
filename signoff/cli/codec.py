"""`signoff codec-server`: serve the deployment's payload keys to the Web UI and `temporal`.

It needs `SIGNOFF_CODEC_KEYS` (the same key file as the workers) and no Temporal
connection: the Web UI and the `temporal` CLI fetch history themselves and only ask it to
decrypt (`runtime/codec_server.py`).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any
from urllib.parse import urlsplit

from signoff.config.environment import (
    CODEC_KEYS_ENV,
    CODEC_SERVER_TOKEN_FILE_ENV,
    INBOX_ALLOWED_HOSTS_ENV,
    INBOX_URL_ENV,
    UI_URL_ENV,
    Environment,
)
from signoff.config.smallfile import ExposedSecret, read_small_file
from signoff.errors import CommandError, ConfigError
from signoff.runtime.codec import CodecKeys
from signoff.views.links import DEFAULT_UI_BASE

DEFAULT_CODEC_PORT = 8081
MAX_TOKEN_FILE_BYTES = 4096


def add_codec_parser(sub: Any) -> None:
    p = sub.add_parser("codec-server", help="decrypt payloads for the Temporal Web UI and `temporal --codec-endpoint`")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=DEFAULT_CODEC_PORT, help=f"port (default {DEFAULT_CODEC_PORT})")
    p.add_argument(
        "--origin",
        action="append",
        default=[],
        metavar="URL",
        help=f"a browser origin allowed to call, the Web UI's (repeatable; default ${UI_URL_ENV} or {DEFAULT_UI_BASE})",
    )
    p.add_argument(
        "--auth-token-file",
        metavar="PATH",
        help=f"require `Authorization: Bearer <the file's token>` (env {CODEC_SERVER_TOKEN_FILE_ENV})",
    )
    p.add_argument(
        "--allow-namespace",
        action="append",
        default=[],
        metavar="NS",
        help="serve only this namespace, by the X-Namespace header (repeatable; default: any)",
    )


def origins(given: list[str], env: Environment | None = None) -> list[str]:
    """The allowed origins, each `scheme://host[:port]` (a path given with one is dropped)."""
    found = []
    for url in given or [(env or Environment()).read(UI_URL_ENV) or DEFAULT_UI_BASE]:
        parts = urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise CommandError(f"--origin takes the Web UI's http(s)://host[:port], got {url!r}", 2)
        found.append(f"{parts.scheme}://{parts.netloc}")
    return found


def read_token(path: str | None) -> str | None:
    if not path:
        return None
    try:
        token = read_small_file(path, MAX_TOKEN_FILE_BYTES).decode("utf-8", "replace").strip()
    except ExposedSecret as exc:
        raise CommandError(f"the codec server's token file: {exc}") from None
    except (OSError, ValueError) as exc:
        why = getattr(exc, "strerror", None) or exc
        raise CommandError(f"cannot read the codec server's token file {path}: {why}") from None
    if len(token) < 16:
        raise CommandError(f"the token in {path} is too short: use at least 16 random characters")
    return token


def cmd_codec_server(args: argparse.Namespace, env: Environment | None = None) -> int:
    """Serve until interrupted."""
    import uvicorn

    from signoff.runtime.codec_server import codec_app
    from signoff.runtime.hosts import AllowedHosts, bound_socket

    env = env or Environment()
    try:
        keys = CodecKeys.from_env(env)
        extra_hosts = env.read(INBOX_ALLOWED_HOSTS_ENV)
    except ConfigError as exc:
        raise CommandError(str(exc), 2) from None
    if keys is None:
        raise CommandError(f"the codec server needs the workers' key file: set {CODEC_KEYS_ENV}", 2)
    allowed = origins(args.origin, env)
    token = read_token(args.auth_token_file or env.read(CODEC_SERVER_TOKEN_FILE_ENV))
    endpoint = f"http://{args.host}:{args.port}"
    try:
        sock = bound_socket(args.host, args.port)
    except OSError as exc:  # the port is taken, or the address is not this machine's
        print(f"signoff: the codec server could not listen on {endpoint}: {exc}", file=sys.stderr)
        return 1
    with sock:
        hosts = AllowedHosts.of(sock.getsockname()[:2], env.read(INBOX_URL_ENV), extra_hosts)
        app = codec_app(keys, hosts=hosts, origins=allowed, token=token, namespaces=args.allow_namespace)
        print(
            f"signoff: codec server on {endpoint} ({keys.describe()}; origins {', '.join(allowed)}; "
            f"hosts {hosts.describe()}; {'bearer token required' if token else 'no auth'})\n"
            f"signoff: Web UI: temporal server start-dev --ui-codec-endpoint {endpoint} (or the UI's Codec Server "
            f"setting); CLI: temporal workflow show --codec-endpoint {endpoint} ...",
            flush=True,
        )
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", proxy_headers=False))
        try:
            asyncio.run(server.serve(sockets=[sock]))
        except (OSError, SystemExit) as exc:
            print(f"signoff: the codec server stopped serving on {endpoint}: {exc}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            return 130
    return 0
