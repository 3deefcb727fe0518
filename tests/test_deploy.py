"""The deployment files stay valid: docker-compose.yml and the Dockerfile it builds."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


def compose_command() -> list[str] | None:
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return None


def test_compose_file_is_valid_and_has_the_deployment() -> None:
    command = compose_command()
    if command is None:
        pytest.skip("neither `docker compose` nor `docker-compose` is installed")
    out = subprocess.run([*command, "config"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    for service in ("postgresql:", "temporal:", "temporal-ui:", "worker:", "setup:"):
        assert f"  {service}" in out.stdout


def test_dockerfile_copies_what_exists() -> None:
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY "):
            for source in line.split()[1:-1]:
                assert (ROOT / source).exists(), source
