"""Connection settings: Temporal's standard client configuration, read as the `temporal` CLI reads it.

No server here (see test_tls.py for real TLS/mTLS connections): what each setting turns
into, and that settings which cannot work fail when built, saying what to do.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from temporalio.service import TLSConfig

from signoff.config.environment import DEFAULT_PAYLOAD_THRESHOLD, Environment
from signoff.errors import ConfigError
from signoff.runtime.connection import ConnectionSettings
from signoff.runtime.storage import PayloadStore
from tests.processes import REPO, clean_env, free_port
from tests.tls import SERVER_NAME, Certs


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return Certs.make(tmp_path_factory.mktemp("certs"))


def test_nothing_configured_means_the_local_default_and_the_embedded_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    settings = ConnectionSettings.load(Environment({}))
    assert (settings.address, settings.namespace, settings.task_queue) == ("localhost:7233", "default", "signoff")
    assert not settings.configured and settings.tls is False and settings.api_key is None
    local_store = PayloadStore((tmp_path / ".signoff" / "payloads").as_uri(), DEFAULT_PAYLOAD_THRESHOLD)
    assert settings.payload_store == local_store


def test_an_address_from_the_environment_is_configured_and_keeps_payloads_inline() -> None:
    settings = ConnectionSettings.load(
        Environment(
            {
                "TEMPORAL_ADDRESS": "temporal.internal:7233",
                "TEMPORAL_NAMESPACE": "prod",
                "SIGNOFF_TASK_QUEUE": "ops",
            }
        )
    )
    assert (settings.address, settings.namespace, settings.task_queue) == ("temporal.internal:7233", "prod", "ops")
    assert settings.configured and settings.payload_store is None


def test_api_key_reaches_the_connect_config_with_tls_on_and_is_never_shown() -> None:
    settings = ConnectionSettings.load(
        Environment({"TEMPORAL_ADDRESS": "ns.acct.tmprl.cloud:7233", "TEMPORAL_API_KEY": "key-1234567890"})
    )
    assert settings.api_key == "key-1234567890"
    assert settings.tls is True  # the system's roots, as the temporal CLI does for an API key
    assert settings.describe() == "ns.acct.tmprl.cloud:7233 (namespace default; TLS, API key)"
    assert "key-1234567890" not in repr(settings)


def test_api_key_in_clear_text_to_a_remote_server_is_refused() -> None:
    with pytest.raises(ConfigError, match="clear text"):
        ConnectionSettings.load(
            Environment({"TEMPORAL_ADDRESS": "temporal.example:7233", "TEMPORAL_API_KEY": "k", "TEMPORAL_TLS": "false"})
        )
    local = ConnectionSettings.load(
        Environment({"TEMPORAL_ADDRESS": "localhost:7233", "TEMPORAL_API_KEY": "k", "TEMPORAL_TLS": "false"})
    )
    assert local.tls is False and local.api_key == "k"


def test_tls_settings_become_the_sdks_tls_config(certs: Certs) -> None:
    settings = ConnectionSettings.load(
        Environment(
            {
                "TEMPORAL_ADDRESS": "temporal.test:7233",
                "TEMPORAL_TLS_SERVER_CA_CERT_PATH": str(certs.ca),
                "TEMPORAL_TLS_SERVER_NAME": SERVER_NAME,
                "TEMPORAL_TLS_CLIENT_CERT_PATH": str(certs.client_cert),
                "TEMPORAL_TLS_CLIENT_KEY_PATH": str(certs.client_key),
            }
        )
    )
    assert settings.tls == TLSConfig(
        server_root_ca_cert=certs.ca.read_bytes(),
        domain=SERVER_NAME,
        client_cert=certs.client_cert.read_bytes(),
        client_private_key=certs.client_key.read_bytes(),
    )
    assert settings.security == ["TLS", "client certificate"]
    assert "PRIVATE KEY" not in repr(settings)


def test_a_client_certificate_without_its_key_is_refused(certs: Certs) -> None:
    with pytest.raises(ConfigError, match="TEMPORAL_TLS_CLIENT_KEY_PATH"):
        ConnectionSettings.load(
            Environment({"TEMPORAL_ADDRESS": "t:7233", "TEMPORAL_TLS_CLIENT_CERT_PATH": str(certs.client_cert)})
        )


def test_a_missing_certificate_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope.pem"
    environ = {"TEMPORAL_ADDRESS": "t:7233", "TEMPORAL_TLS_SERVER_CA_CERT_PATH": str(missing)}
    with pytest.raises(ConfigError, match=re.escape(f"cannot read the TLS file {missing}")):
        ConnectionSettings.load(Environment(environ))


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("TEMPORAL_TLS_DISABLE_HOST_VERIFICATION", "true", "not supported by the Temporal Python SDK"),
        ("TEMPORAL_TLS", "maybe", "TEMPORAL_TLS must be true or false"),
        ("TEMPORAL_CONFIG_FILE", "/no/such/temporal.toml", "does not name a readable file"),
        ("TEMPORAL_PROFILE", "nope", "Profile 'nope' not found"),
    ],
)
def test_settings_that_cannot_work_fail_when_built(name: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ConnectionSettings.load(Environment({"TEMPORAL_ADDRESS": "t:7233", name: value}))


def write_profiles(path: Path, certs: Certs, address: str = "secure.test:7233") -> Path:
    path.write_text(f"""
[profile.default]
address = "plain.test:7233"

[profile.secure]
address = "{address}"
namespace = "payments"

[profile.secure.tls]
server_name = "{SERVER_NAME}"
server_ca_cert_path = "{certs.ca}"
client_cert_path = "{certs.client_cert}"
client_key_path = "{certs.client_key}"
""")
    return path


def test_a_profile_from_the_config_file_is_used(tmp_path: Path, certs: Certs) -> None:
    toml = write_profiles(tmp_path / "temporal.toml", certs)
    env = {"TEMPORAL_CONFIG_FILE": str(toml)}
    assert ConnectionSettings.load(Environment(env)).address == "plain.test:7233"  # the `default` profile
    secure = ConnectionSettings.load(Environment(env | {"TEMPORAL_PROFILE": "secure"}))
    assert (secure.address, secure.namespace, secure.profile) == ("secure.test:7233", "payments", "secure")
    assert isinstance(secure.tls, TLSConfig) and secure.tls.client_cert == certs.client_cert.read_bytes()
    assert ConnectionSettings.load(Environment(env), profile="secure") == secure


def test_environment_overrides_the_profile_and_flags_override_both(tmp_path: Path, certs: Certs) -> None:
    env = {
        "TEMPORAL_CONFIG_FILE": str(write_profiles(tmp_path / "temporal.toml", certs)),
        "TEMPORAL_PROFILE": "secure",
        "TEMPORAL_NAMESPACE": "from-env",
    }
    assert ConnectionSettings.load(Environment(env)).namespace == "from-env"
    flagged = ConnectionSettings.load(Environment(env), address="flag.test:7233", namespace="from-flag")
    assert (flagged.address, flagged.namespace) == ("flag.test:7233", "from-flag")


def test_grpc_metadata_from_the_environment_is_sent_but_not_shown() -> None:
    settings = ConnectionSettings.load(
        Environment({"TEMPORAL_ADDRESS": "t:7233", "TEMPORAL_GRPC_META_X_AUTH_TOKEN": "s3cret"})
    )
    assert settings.rpc_metadata == {"x-auth-token": "s3cret"}
    assert "s3cret" not in repr(settings)


def run_cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REPO / "client.py"), *args],
        env=clean_env(**env),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_cli_names_address_tls_and_api_key_when_it_cannot_connect_and_never_the_key() -> None:
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    done = run_cli("pending", TEMPORAL_ADDRESS=address, TEMPORAL_API_KEY="key-abcdefghijkl")
    assert done.returncode == 1, done
    assert f"cannot connect to Temporal at {address} (namespace default; TLS, API key)" in done.stderr
    assert "Check the address, TLS settings" in done.stderr
    assert "key-abcdefghijkl" not in done.stderr + done.stdout
    assert "Traceback" not in done.stderr


def test_cli_unknown_profile_is_a_usage_error(tmp_path: Path, certs: Certs) -> None:
    toml = write_profiles(tmp_path / "temporal.toml", certs)
    done = run_cli("pending", "--profile", "staging", TEMPORAL_CONFIG_FILE=str(toml))
    assert done.returncode == 2, done
    assert "Profile 'staging' not found" in done.stderr and "Traceback" not in done.stderr
