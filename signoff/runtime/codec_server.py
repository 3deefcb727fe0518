"""`signoff codec-server`: Temporal's codec-server protocol over signoff's payload encryption.

The Temporal Web UI and `temporal --codec-endpoint URL` send what they show to
`POST /decode` (and what a person types, a signal or update input, to `POST /encode`) as
`{"payloads": [{"metadata": {...}, "data": "<base64>"}]}` (the protobuf JSON of
`temporal.api.common.v1.Payloads`) with the header `X-Namespace`, and get the same shape
back, so they show runs decrypted: inputs, results, activity and timer summaries, failures,
query answers and the current details that say how to decide.

- CORS: the Web UI calls from the browser, so its origin must be allowed (`origins`);
  credentials are allowed, for the UI's "include cross-origin credentials".
- Auth: with a token, every request needs `Authorization: Bearer <token>` (`temporal
  --codec-auth "Bearer <token>"`). Without one, whoever reaches the port can decrypt:
  bind it to 127.0.0.1 (the default), or put it behind your proxy's login.
- Hosts: as the inbox, it answers only a `Host` naming its listening address, the host of
  `SIGNOFF_INBOX_URL` or one of `SIGNOFF_INBOX_ALLOWED_HOSTS` (421 otherwise:
  `signoff.runtime.hosts`), so a page that DNS-rebinds its own name to 127.0.0.1 cannot call
  it as same-origin; a request whose `Origin` is neither an allowed origin nor one of those
  hosts is refused (403).
- A payload that cannot be decrypted (another deployment's key) comes back as it was.
"""

from __future__ import annotations

import hmac
from collections.abc import Sequence

from google.protobuf import json_format
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from temporalio.api.common.v1 import Payloads

from signoff.runtime.codec import CodecKeys, EncryptionCodec
from signoff.runtime.hosts import AllowedHosts, HostCheck

MAX_BODY_BYTES = 64 * 1024 * 1024
"""A request may hold many payloads of up to 2 MB each (Temporal's blob limit)."""
_NAMESPACE_HEADER = "X-Namespace"


def codec_app(
    keys: CodecKeys,
    *,
    hosts: AllowedHosts,
    origins: Sequence[str] = (),
    token: str | None = None,
    namespaces: Sequence[str] = (),
) -> Starlette:
    """The codec server's ASGI app.

    Args:
        keys: the deployment's codec keys (the last encrypts).
        hosts: the `Host` values it answers for (`AllowedHosts.of` its socket and settings).
        origins: browser origins allowed to call (the Web UI's, e.g. `http://localhost:8233`).
        token: the bearer token every request must carry, or None for none.
        namespaces: the namespaces served (by `X-Namespace`); empty serves every one.
    """
    codec = EncryptionCodec(keys, strict=False)
    allowed = frozenset(o.rstrip("/").lower() for o in origins)

    async def transform(request: Request) -> Response:
        origin = request.headers.get("origin")
        if origin is not None and origin.rstrip("/").lower() not in allowed and not hosts.admits_origin(origin):
            return PlainTextResponse("requests from other sites are refused", status_code=403)
        refusal = _refusal(request, token, namespaces)
        if refusal is not None:
            return refusal
        body = await read_body(request)
        if body is None:
            return PlainTextResponse(f"at most {MAX_BODY_BYTES} bytes in one request", status_code=413)
        payloads = Payloads()
        try:
            json_format.Parse(body, payloads)
        except json_format.ParseError as exc:
            return PlainTextResponse(
                f'expected {{"payloads": [...]}} (temporal.api.common.v1.Payloads): {exc}', status_code=400
            )
        change = codec.encrypt if request.url.path.endswith("/encode") else codec.decrypt
        out = Payloads(payloads=[change(p) for p in payloads.payloads])
        return JSONResponse(json_format.MessageToDict(out))

    async def health(request: Request) -> Response:
        return PlainTextResponse("signoff codec server: POST /encode, /decode\n")

    routes = [
        Route("/encode", transform, methods=["POST"]),
        Route("/decode", transform, methods=["POST"]),
        Route("/", health, methods=["GET"]),
    ]
    cors = Middleware(
        CORSMiddleware,
        allow_origins=list(origins),
        allow_credentials=True,
        allow_methods=["POST"],
        allow_headers=["Content-Type", _NAMESPACE_HEADER, "Authorization"],
        max_age=600,
    )
    return Starlette(routes=routes, middleware=[Middleware(HostCheck, hosts=hosts), cors])


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes | None:
    """The request's body, or None once it is over `limit` bytes (read no further)."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _refusal(request: Request, token: str | None, namespaces: Sequence[str]) -> Response | None:
    if token is not None:
        given = request.headers.get("Authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            return PlainTextResponse(
                "a bearer token is required", status_code=401, headers={"WWW-Authenticate": "Bearer"}
            )
    namespace = request.headers.get(_NAMESPACE_HEADER)
    if namespaces and namespace not in namespaces:
        return PlainTextResponse(f"namespace {namespace!r} is not served here", status_code=403)
    return None


__all__ = ["MAX_BODY_BYTES", "codec_app", "read_body"]
