"""Sealing the state a run carries across continue-as-new (`signoff.seal`, `signoff.unseal`).

Any workflow can continue *as* `AgentRun` onto a task queue, with any state it likes. So a
run's own state is sealed by the worker before it continues as new, and checked by the
worker before the new run adopts it, both as local activities (they run in the worker that
runs the workflow task, and are refused when scheduled as ordinary activities, so no other
workflow can have state sealed):

- with a state key (`SIGNOFF_STATE_KEY_FILE`, the same file on every worker of the task
  queue; the embedded dev server's is made under `.signoff/`): the seal is HMAC-SHA256 over
  the workflow id, the chain (its first run's id) and the state's digest, so neither
  forged state nor a genuine sealed state copied from another run or chain is adopted;
- without one: nothing is sealed, and the check asks the server whether the run being
  continued is an `AgentRun` of this task queue. That stops a workflow of another type or
  queue from continuing into `AgentRun`, but not one that completes this queue's workflow
  tasks itself: set a key. (Either way, the tool activity's own check of the signatures is
  what keeps a gated call from running without a sign-off.)
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

from temporalio import activity
from temporalio.exceptions import ApplicationError

from signoff.activities.models import SEAL_ACTIVITY, UNSEAL_ACTIVITY, SealInput, SealOutput, UnsealInput, UnsealOutput
from signoff.config.environment import STATE_KEY_FILE_ENV
from signoff.config.smallfile import read_secret_bytes
from signoff.contract import WORKFLOW_TYPE
from signoff.errors import ConfigError

MIN_STATE_KEY_BYTES = 32
_CONTEXT = b"signoff continued state v1"


def read_state_key(path: str | os.PathLike[str]) -> bytes:
    """The state key in `path` (surrounding whitespace ignored).

    Raises:
        ConfigError: it cannot be read, or is shorter than 32 bytes.
    """
    key = read_secret_bytes(path, STATE_KEY_FILE_ENV)
    if len(key) < MIN_STATE_KEY_BYTES:
        raise ConfigError(
            f"{STATE_KEY_FILE_ENV}: the key in {path} is {len(key)} bytes; it must be at least {MIN_STATE_KEY_BYTES}. "
            'Make one with: python -c "import secrets; print(secrets.token_urlsafe(48))"'
        )
    return key


def local_state_key(path: Path) -> bytes:
    """The embedded dev server's state key: read from `path`, made there (0600) if missing."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        return read_state_key(path)
    with os.fdopen(fd, "w") as file:
        file.write(secrets.token_urlsafe(48) + "\n")
    return read_state_key(path)


def _mac(key: bytes, workflow_id: str, chain_id: str, digest: str) -> str:
    message = b"\n".join([_CONTEXT, workflow_id.encode(), chain_id.encode(), digest.encode()])
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def _local_only(what: str) -> str:
    info = activity.info()
    if not info.is_local:
        raise ApplicationError(
            f"{what} runs only as a local activity of an AgentRun on this worker; "
            f"it was scheduled by {info.workflow_type or 'no workflow'}",
            type="NotAnAgentRun",
            non_retryable=True,
        )
    return info.workflow_id or ""


def seal(key: bytes | None, input: SealInput) -> SealOutput:
    workflow_id = _local_only(SEAL_ACTIVITY)
    return SealOutput(seal=_mac(key, workflow_id, input.chain_id, input.digest) if key else "")


async def unseal(key: bytes | None, input: UnsealInput) -> UnsealOutput:
    workflow_id = _local_only(UNSEAL_ACTIVITY)
    if key is not None:
        if not input.seal:
            return UnsealOutput(
                error="the continued state is not sealed (this worker seals it: SIGNOFF_STATE_KEY_FILE)"
            )
        if not hmac.compare_digest(input.seal, _mac(key, workflow_id, input.chain_id, input.digest)):
            return UnsealOutput(
                error="the continued state's seal does not hold: it was not sealed by a worker "
                "with this state key for this workflow and chain"
            )
        return UnsealOutput()
    if input.seal:
        return UnsealOutput(
            error="the continued state is sealed, but this worker has no state key to check it "
            f"(set {STATE_KEY_FILE_ENV} as the other workers have it)"
        )
    return await _continues_an_agent_run(workflow_id, input.continued_run_id)


async def _continues_an_agent_run(workflow_id: str, run_id: str) -> UnsealOutput:
    info = activity.info()
    described = await activity.client().get_workflow_handle(workflow_id, run_id=run_id).describe()
    if described.workflow_type != WORKFLOW_TYPE or described.task_queue != info.task_queue:
        return UnsealOutput(
            error=f"the run it continues is a {described.workflow_type} on task queue "
            f"{described.task_queue!r}, not an {WORKFLOW_TYPE} of {info.task_queue!r}"
        )
    return UnsealOutput()
