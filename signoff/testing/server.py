"""The scripted model's HTTP server: OpenAI-compatible JSON and SSE on loopback."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import zip_longest
from typing import Any

from signoff.chat.openai import message_from_openai, message_to_openai
from signoff.messages import ChatMessage, ToolCall, Usage
from signoff.testing.script import Reply, Script, ScriptedRequest, _from_list


class ScriptedModelServer:
    """An OpenAI-compatible server answering from a script.

    Args:
        script: a function of `ScriptedRequest` returning a `Reply`, or replies in order.
        host: the address to bind.
        port: the port; 0 picks a free one.
        strict: answer 400, as OpenAI does, when a tool call has no tool message.
    """

    def __init__(
        self,
        script: Script | Sequence[Reply],
        host: str = "127.0.0.1",
        port: int = 0,
        strict: bool = True,
    ) -> None:
        self._script = script if callable(script) else _from_list(script)
        self._address = (host, port)
        self.strict = strict
        self._lock = threading.Lock()
        self._requests: list[ScriptedRequest] = []
        self._httpd: _HTTPServer | None = None

    @property
    def base_url(self) -> str:
        """The `/v1` root to put in `LLMConfig.base_url`."""
        if self._httpd is None:
            raise RuntimeError("server not started: use `with ScriptedModelServer(...)`")
        host, port = self._httpd.server_address[:2]
        host = host.decode() if isinstance(host, bytes) else host
        return f"http://{host}:{port}/v1"

    @property
    def requests(self) -> list[ScriptedRequest]:
        """Every request received so far, in order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def request_count(self) -> int:
        """How many requests have been received."""
        with self._lock:
            return len(self._requests)

    def start(self) -> ScriptedModelServer:
        """Bind and serve in a background thread; returns self."""
        self._httpd = _HTTPServer(self._address, _Handler)
        self._httpd.owner = self
        # A short poll interval keeps stop() fast; the idle wakeups cost nothing measurable.
        threading.Thread(target=self._httpd.serve_forever, args=(0.01,), daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop serving and close every connection."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.close_all()
            self._httpd = None

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _answer(self, request: ScriptedRequest) -> Reply:
        with self._lock:
            self._requests.append(request)
        problem = _unanswered_calls(request.messages) if self.strict else None
        if problem:
            return Reply.error(400, problem)
        try:
            return self._script(request)
        except Exception as exc:  # the test's script is at fault; say so in the response
            return Reply.error(500, f"script raised {exc!r}")


def _unanswered_calls(messages: list[ChatMessage]) -> str | None:
    """OpenAI's rule: each assistant tool call is answered by a tool message right after."""
    expected: list[str] = []
    for message in messages:
        if message.role == "tool":
            if message.tool_call_id not in expected:
                return f"tool message for unknown tool_call_id {message.tool_call_id!r}"
            expected.remove(message.tool_call_id)
            continue
        if expected:
            break
        expected = [c.id for c in message.tool_calls or []]
    return f"tool_call_ids without a tool message: {', '.join(expected)}" if expected else None


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # benchmarks open hundreds of connections at once
    owner: ScriptedModelServer

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client hanging up mid-response is routine here, not worth a traceback

    def close_all(self) -> None:
        """Close the listener and any idle keep-alive connection, so stop() is complete."""
        self.server_close()
        with self.connections_lock:
            for conn in self.connections:
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    # Buffered writes: a response leaves in one send (flushed by handle_one_request) rather
    # than a syscall per SSE event, which matters when benchmarks run thousands of turns.
    wbufsize = 1 << 16
    timeout = 60  # drop idle keep-alive connections eventually
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        with self.server.connections_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        with self.server.connections_lock:
            self.server.connections.discard(self.connection)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test and benchmark output clean

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._json(404, _error_body(f"no route {self.path}"))
            return
        try:
            raw = json.loads(body)
            request = ScriptedRequest(
                messages=[message_from_openai(m) for m in raw["messages"]],
                tools=[t["function"]["name"] for t in raw.get("tools") or []],
                model=raw.get("model", ""),
                raw=raw,
                headers={k.lower(): v for k, v in self.headers.items()},
            )
        except (ValueError, KeyError, TypeError) as exc:
            self._json(400, _error_body(f"invalid request: {exc}"))
            return
        reply = self.server.owner._answer(request)
        try:
            if reply.status != 200:
                retry = reply.retry_after
                extra = {"Retry-After": str(retry)} if retry is not None else {}
                self._json(reply.status, _error_body(reply.error_message), extra)
            elif raw.get("stream") and not reply.ignore_stream:
                self._stream(reply, request)
            else:
                self._json(200, _completion(reply, request), cut=reply.broken)
        except OSError:
            self.close_connection = True  # the client went away; nothing to tell it

    def _json(
        self,
        status: int,
        body: dict[str, Any],
        headers: dict[str, str] | None = None,
        cut: bool = False,
    ) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data[: len(data) // 2] if cut else data)
        self.close_connection = self.close_connection or cut

    def _stream(self, reply: Reply, request: ScriptedRequest) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        events = [f"data: {json.dumps(chunk)}" for chunk in _stream_chunks(reply, request)]
        if reply.stream_error is not None:
            kind = "event: error\n" if reply.error_event else ""
            events.append(f"{kind}data: {json.dumps(_error_body(reply.stream_error))}")
        for event in events + (["data: [DONE]"] if reply.done else []):
            payload = f"{event}\n\n".encode()
            self.wfile.write(b"%X\r\n%s\r\n" % (len(payload), payload))
            if reply.pause:
                self.wfile.flush()
                time.sleep(reply.pause)
        if reply.broken and reply.close:
            self.close_connection = True  # no terminating chunk: the client sees a cut body
        else:
            self.wfile.write(b"0\r\n\r\n")


def _error_body(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": None}}


def _split(text: str, parts: int) -> list[str]:
    size = max(1, -(-len(text) // max(1, parts)))  # ceiling division
    return [text[i : i + size] for i in range(0, len(text), size)]


def _calls(reply: Reply, request: ScriptedRequest) -> list[ToolCall]:
    calls = []
    for i, spec in enumerate(reply.calls, start=1):
        if not isinstance(spec, ToolCall):
            name, args = spec
            arguments = args if isinstance(args, str) else json.dumps(args)
            spec = ToolCall(id=f"call_{request.round}_{i}", name=name, arguments=arguments)
        calls.append(spec)
    return calls


def _usage(reply: Reply, request: ScriptedRequest, calls: list[ToolCall]) -> Usage:
    if reply.usage is not None:
        return reply.usage
    # Deterministic stand-in counts: roughly four characters a token, as real models go.
    prompt = sum(len(m.content or "") for m in request.messages) // 4 + len(request.messages)
    completion = (len(reply.content or "") + sum(len(c.arguments) for c in calls)) // 4 + 1
    total = prompt + completion
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=total)


def _stream_chunks(reply: Reply, request: ScriptedRequest) -> list[dict[str, Any]]:
    calls = _calls(reply, request)
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    deltas += [{"content": piece} for piece in _split(reply.content or "", reply.chunks)]
    per_call = [
        [
            {
                "index": i,
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": ""},
            }
        ]
        + [{"index": i, "function": {"arguments": p}} for p in _split(c.arguments, reply.chunks)]
        for i, c in enumerate(calls)
    ]
    # Real providers send one call after another; interleaving is the harder case to parse.
    rows = zip_longest(*per_call) if reply.interleave else per_call
    deltas += [{"tool_calls": [d]} for row in rows for d in row if d is not None]
    base = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0}
    base["model"] = request.model
    chunks = [{**base, "choices": [_choice(d, None)]} for d in deltas]
    if reply.broken or reply.stream_error is not None:
        return chunks
    chunks.append({**base, "choices": [_choice({}, reply.finish_reason)]})
    chunks.append({**base, "choices": [], "usage": _usage(reply, request, calls).model_dump()})
    return chunks


def _choice(delta: dict[str, Any], finish_reason: str | None) -> dict[str, Any]:
    return {"index": 0, "delta": delta, "finish_reason": finish_reason}


def _completion(reply: Reply, request: ScriptedRequest) -> dict[str, Any]:
    calls = _calls(reply, request)
    message = message_to_openai(ChatMessage.assistant(reply.content, calls))
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": request.model,
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
        "usage": _usage(reply, request, calls).model_dump(),
    }
