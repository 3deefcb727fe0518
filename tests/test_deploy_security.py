"""docker-compose.yml is safe by default: localhost-only ports, keys as secret files, MinIO inside.

Read through `docker compose config` (no engine needed), so what is checked is what
compose would run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from signoff.runtime.storage import PayloadStore
from tests.test_deploy import ROOT, compose_command

yaml = pytest.importorskip("yaml")


def compose_config(directory: Path, **env: str) -> dict[str, Any]:
    command = compose_command()
    if command is None:
        pytest.skip("neither `docker compose` nor `docker-compose` is installed")
    environment = {k: v for k, v in os.environ.items() if not k.startswith("SIGNOFF_")} | env
    out = subprocess.run(
        [*command, "config"], cwd=directory, capture_output=True, text=True, check=False, env=environment
    )
    assert out.returncode == 0, out.stderr
    config: dict[str, Any] = yaml.safe_load(out.stdout)
    return config


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The compose file alone, as in a fresh clone: no secret files have been made."""
    directory = tmp_path_factory.mktemp("clone")
    shutil.copy(ROOT / "docker-compose.yml", directory)
    assert not (directory / "secrets").exists()
    return compose_config(directory)


def published(port: str | dict[str, Any]) -> tuple[str | None, str]:
    """(host address, host port) from compose v1's `ip:port:port/tcp` or v2's long syntax."""
    if isinstance(port, dict):
        return port.get("host_ip"), str(port.get("published"))
    host, _, _container = port.rpartition(":")
    ip, _, host_port = host.rpartition(":")
    return ip or None, host_port


def test_every_published_port_listens_on_localhost_only(config: dict[str, Any]) -> None:
    ports = {name: [published(p) for p in service.get("ports", [])] for name, service in config["services"].items()}
    assert ports["temporal"] == [("127.0.0.1", "7233")]
    assert ports["temporal-ui"] == [("127.0.0.1", "8080")]
    assert ports["oauth2-proxy"] == [("127.0.0.1", "4180")]
    published_services = {name for name, bound in ports.items() if bound}
    assert published_services == {"temporal", "temporal-ui", "oauth2-proxy"}  # MinIO, DB, the inbox itself: none


def test_keys_reach_the_worker_as_secret_files_not_environment(config: dict[str, Any]) -> None:
    worker = config["services"]["worker"]
    env = worker["environment"]
    assert env["SIGNOFF_LLM_API_KEY_FILE"] == "/run/secrets/llm_api_key"
    assert env["SIGNOFF_S3_SECRET_ACCESS_KEY_FILE"] == "/run/secrets/minio_password"
    assert env["SIGNOFF_STATE_KEY_FILE"] == "/run/secrets/state_key"
    assert {s["source"] for s in worker["secrets"]} == {
        "llm_api_key",
        "minio_password",
        "state_key",
        "inbox_signing_key",
    }
    for service in config["services"].values():
        assert not {"SIGNOFF_LLM_API_KEY", "AWS_SECRET_ACCESS_KEY", "MINIO_ROOT_PASSWORD"} & set(
            service.get("environment") or {}
        )
    assert config["secrets"]["llm_api_key"]["file"].endswith("secrets/llm_api_key.txt")


def test_worker_stores_large_payloads_in_the_bucket_minio_setup_creates(config: dict[str, Any]) -> None:
    services = config["services"]
    store = PayloadStore(services["worker"]["environment"]["SIGNOFF_PAYLOAD_STORE"])
    assert store.kind == "s3"
    assert f"mc mb --ignore-existing store/{store.bucket}" in " ".join(services["minio-setup"]["command"])
    assert services["worker"]["environment"]["AWS_ENDPOINT_URL"] == "http://minio:9000"
    assert "minio-setup" in services["worker"]["depends_on"]


def test_gitignore_keeps_secret_files_out_of_the_repository() -> None:
    assert "secrets/" in (ROOT / ".gitignore").read_text().splitlines()


def test_secret_files_never_enter_the_image_build_context() -> None:
    assert "secrets" in (ROOT / ".dockerignore").read_text().splitlines()


def test_the_inbox_trusts_only_its_proxy_which_signs_people_in_and_its_key_verifies_on_the_worker(
    config: dict[str, Any],
) -> None:
    services = config["services"]
    inbox, proxy, worker = services["inbox"], services["oauth2-proxy"], services["worker"]
    proxy_ip = proxy["networks"]["inbox"]["ipv4_address"]
    inbox_ip = inbox["networks"]["inbox"]["ipv4_address"]
    assert inbox["environment"]["SIGNOFF_INBOX_TRUSTED_PROXIES"] == proxy_ip
    assert f"--upstream=http://{inbox_ip}:8765/" in proxy["command"]
    assert "--pass-user-headers=true" in proxy["command"]
    assert any(arg.startswith("--client-secret-file=/run/secrets/") for arg in proxy["command"])
    assert inbox["command"][:2] == ["signoff", "inbox"]
    key = "/run/secrets/inbox_signing_key"
    assert inbox["environment"]["SIGNOFF_INBOX_SIGNING_KEY_FILE"] == key
    assert worker["environment"]["SIGNOFF_APPROVER_KEYS"] == key
    assert inbox["environment"]["SIGNOFF_PAYLOAD_STORE"] == worker["environment"]["SIGNOFF_PAYLOAD_STORE"]
    assert worker["environment"]["SIGNOFF_INBOX_URL"] == "http://localhost:4180"


def test_the_public_inbox_address_is_one_setting_for_the_proxy_the_inbox_and_the_worker(tmp_path: Path) -> None:
    """The inbox answers only the Host of SIGNOFF_INBOX_URL (and its own address): behind the proxy,
    which passes the browser's Host on, that setting must be the proxy's public address."""
    shutil.copy(ROOT / "docker-compose.yml", tmp_path)
    services = compose_config(tmp_path, SIGNOFF_INBOX_URL="https://inbox.example.com")["services"]
    inbox, proxy, worker = services["inbox"], services["oauth2-proxy"], services["worker"]
    assert inbox["environment"]["SIGNOFF_INBOX_URL"] == "https://inbox.example.com"
    assert worker["environment"]["SIGNOFF_INBOX_URL"] == "https://inbox.example.com"
    assert "--redirect-url=https://inbox.example.com/oauth2/callback" in proxy["command"]
    assert "--pass-host-header=true" in proxy["command"]
    assert inbox["environment"]["SIGNOFF_INBOX_SCOPE"] == "all"
