"""A non-dumpable process: another process of its user cannot read its environment.

The reader is started the way `run_command` starts a tool (`/bin/sh -c`, a direct
child, so `$PPID` is the hardened process). The same-user case needs a non-root user,
so it runs as `nobody` with any Python that user may execute, loading
`signoff/runtime/hardening.py` by path (it needs only the standard library).
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys

import pytest

from tests.processes import REPO

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_DUMPABLE is Linux's")

SECRET = "sk-hardening-probe-3e9f1a7c"
HARDENING = REPO / "signoff" / "runtime" / "hardening.py"
PROBE = r"""
import importlib.util, subprocess, sys
spec = importlib.util.spec_from_file_location("hardening", sys.argv[1])
hardening = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hardening)
before = hardening.is_dumpable()
if sys.argv[2] == "harden":
    hardening.harden_process()
print(f"dumpable {before} -> {hardening.is_dumpable()}")
done = subprocess.run(["/bin/sh", "-c", "cat /proc/$PPID/environ"], capture_output=True)
print(done.stdout.decode(errors="replace").replace("\0", "\n") + done.stderr.decode(errors="replace"))
"""


def probe(python: str, mode: str, user: str | None = None) -> str:
    """Run the probe (`harden` or `plain`) with the secret in its environment; its output."""
    env = {"PATH": os.defpath, "SIGNOFF_LLM_API_KEY": SECRET}
    done = subprocess.run(
        [python, "-c", PROBE, str(HARDENING), mode],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        user=user,
        cwd="/",
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def python_for_nobody() -> str:
    """A Python interpreter the user `nobody` can run, or skip."""
    if os.geteuid() != 0:
        pytest.skip("running a process as another user needs root")
    try:
        pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("this machine has no user 'nobody'")
    for candidate in (sys.executable, shutil.which("python3"), "/usr/bin/python3"):
        try:
            trial = subprocess.run(
                [candidate or "", "-c", "pass"], user="nobody", capture_output=True, check=False, cwd="/"
            )
        except OSError:  # not executable by that user (e.g. below /root)
            continue
        if trial.returncode == 0:
            return str(candidate)
    pytest.skip("no Python interpreter that the user 'nobody' may run")


def test_a_process_of_the_same_user_reads_an_unhardened_processes_environment() -> None:
    output = probe(python_for_nobody(), "plain", user="nobody")
    assert "dumpable True -> True" in output and f"SIGNOFF_LLM_API_KEY={SECRET}" in output


def test_a_process_of_the_same_user_cannot_read_a_hardened_processes_environment() -> None:
    output = probe(python_for_nobody(), "harden", user="nobody")
    assert "dumpable True -> False" in output
    assert SECRET not in output and "Permission denied" in output


@pytest.mark.skipif(os.geteuid() != 0, reason="shows what root can do")
def test_root_still_reads_a_hardened_processes_environment_hence_signoff_tool_user() -> None:
    output = probe(sys.executable, "harden")
    assert "dumpable True -> False" in output and SECRET in output
