"""TLS for the tests: certificates made here, and a TLS-terminating proxy to a dev server.

`temporal server start-dev` speaks only plaintext, so a secured cluster is played by
`TlsProxy`: it accepts TLS (ALPN `h2`, optionally requiring a client certificate) on
127.0.0.1 and forwards the bytes to the dev server's plaintext port.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

SERVER_NAME = "temporal.test"
_KeyAndCert = tuple[ec.EllipticCurvePrivateKey, x509.Certificate]


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _certificate(subject: str, issuer: _KeyAndCert | None, usage: x509.ObjectIdentifier | None) -> _KeyAndCert:
    """A CA (no `issuer`: self-signed) or a leaf for `usage` (server or client auth)."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    signer_key, issuer_name = (issuer[0], issuer[1].subject) if issuer else (key, _name(subject))
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=usage is None, path_length=None), critical=True)
    )
    if usage is None:
        builder = builder.add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    else:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(subject)]), critical=False)
    return key, builder.sign(signer_key, hashes.SHA256())


def _write(directory: Path, name: str, pair: _KeyAndCert) -> tuple[Path, Path]:
    cert, key = directory / f"{name}.pem", directory / f"{name}.key"
    cert.write_bytes(pair[1].public_bytes(serialization.Encoding.PEM))
    key.write_bytes(
        pair[0].private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    key.chmod(0o600)
    return cert, key


@dataclass(frozen=True)
class Certs:
    """PEM files: the server's CA and certificate, a client CA and a client certificate."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_ca: Path
    client_cert: Path
    client_key: Path
    stranger_cert: Path  # a client certificate from a CA the server does not trust
    stranger_key: Path

    @classmethod
    def make(cls, directory: Path) -> Certs:
        ca = _certificate("signoff test CA", None, None)
        client_ca = _certificate("signoff test client CA", None, None)
        stranger_ca = _certificate("a stranger's CA", None, None)
        server = _write(directory, "server", _certificate(SERVER_NAME, ca, ExtendedKeyUsageOID.SERVER_AUTH))
        client = _write(directory, "client", _certificate("worker", client_ca, ExtendedKeyUsageOID.CLIENT_AUTH))
        stranger = _write(directory, "stranger", _certificate("worker", stranger_ca, ExtendedKeyUsageOID.CLIENT_AUTH))
        return cls(
            ca=_write(directory, "ca", ca)[0],
            server_cert=server[0],
            server_key=server[1],
            client_ca=_write(directory, "client-ca", client_ca)[0],
            client_cert=client[0],
            client_key=client[1],
            stranger_cert=stranger[0],
            stranger_key=stranger[1],
        )


class TlsProxy:
    """Terminates TLS on 127.0.0.1 and forwards each connection to `upstream` (host:port)."""

    def __init__(self, upstream: str, certs: Certs, require_client_cert: bool = False) -> None:
        self.upstream = upstream
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(certs.server_cert, certs.server_key)
        self.context.set_alpn_protocols(["h2"])  # gRPC clients insist on HTTP/2
        if require_client_cert:
            self.context.verify_mode = ssl.CERT_REQUIRED
            self.context.load_verify_locations(certs.client_ca)
        self.connections = 0  # TLS handshakes that succeeded
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def address(self) -> str:
        assert self._server is not None
        return f"127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.context)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        host, _, port = self.upstream.rpartition(":")
        try:
            up_reader, up_writer = await asyncio.open_connection(host, int(port))
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            writer.close()
