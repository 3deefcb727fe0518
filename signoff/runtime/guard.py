"""What a worker's workflows are handed for a payload that cannot be resolved: a value, never a failure.

(The worker's data converter also sends a run's refusals without tracebacks: `workflows/refusal.py`.)

The SDK resolves every payload of a workflow activation (the start input, each signal's
and update's argument, activity results) before any workflow code runs, and a payload
it cannot resolve fails the whole activation: the workflow task, retried for ever. A
stranger can send such payloads: an `ExternalStorageReference` whose digest is not in
the store, naming a driver no worker has, that is not even a well-formed reference, or
marked as a codec-encoded reference when it is none; or any reference to a worker that
has no payload store at all. So a worker's data converter (`guarded`) reads each such
payload as `not_a_payload(reason)`, a JSON object no model accepts, and the workflow
refuses it where it belongs: the start fails as `InvalidInput`, a signal is recorded as
`decision_ignored`, an update is rejected (CONTRACT v3 "Input limits").

What is not the payload's fault is not hidden: a store that cannot be reached now (a
network error, no permission) still fails the task, which is retried until it can, as
before. The drivers say which is which: `UnresolvablePayload` means the reference can
never be read (nothing is stored under it, or what is stored was altered).

This overrides two of the SDK's private steps (`DataConverter._decode_reference_payload_sequence`
and `_external_retrieve_payload_sequence`): the SDK has no public hook before an
activation is decoded. temporalio is pinned exactly, and tests/test_forged_payloads.py
sends each kind of payload above to a real worker, so an SDK change that bypasses this
fails there, not in production.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence

from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.converter import (
    DataConverter,
    ExternalStorage,
    StorageDriver,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
)

from signoff.runtime.filestore import UnresolvablePayload, not_a_payload
from signoff.runtime.storage import storage_problem
from signoff.workflows.refusal import quiet

NO_STORE_DRIVER = "signoff.none"

Step = Callable[[Sequence[Payload]], Awaitable[list[Payload]]]


class _StoreUnavailable(RuntimeError):
    """A payload store failed for a reason of its own (not the reference's): retry later."""


@dataclasses.dataclass(frozen=True)
class GuardedConverter(DataConverter):
    """A worker's data converter: a payload that cannot be resolved reads as `not_a_payload`.

    `replaying`: the converter of a replay (`signoff replay`), where a reference the store
    cannot resolve (missing, or of a driver this process lacks) is this process's
    configuration to fix and says so, rather than being read as refused; only payloads
    that are no reference at all (malformed, falsely marked) read as `not_a_payload` then.
    """

    replaying: bool = False

    async def _decode_reference_payload_sequence(self, payloads: Sequence[Payload]) -> list[Payload]:
        return await _each(super()._decode_reference_payload_sequence, payloads, self.replaying)

    async def _external_retrieve_payload_sequence(self, payloads: Sequence[Payload]) -> list[Payload]:
        return await _each(super()._external_retrieve_payload_sequence, payloads, self.replaying)


async def _each(step: Step, payloads: Sequence[Payload], replaying: bool) -> list[Payload]:
    """`step` over all payloads; when it fails, over each alone, each that cannot be resolved
    becoming `not_a_payload`."""
    try:
        return await step(payloads)
    except _StoreUnavailable:
        raise
    except Exception as exc:
        if replaying and storage_problem(exc) is not None:
            raise
        if len(payloads) == 1:
            return [not_a_payload(f"this payload cannot be resolved: {exc}")]
    return [(await _each(step, [payload], replaying))[0] for payload in payloads]


class _Guarded(StorageDriver):
    """A store's driver, saying which of its failures are the reference's (`UnresolvablePayload`)."""

    def __init__(self, driver: StorageDriver) -> None:
        self.driver = driver

    def name(self) -> str:
        return self.driver.name()

    def type(self) -> str:
        return self.driver.type()

    async def store(self, context: StorageDriverStoreContext, payloads: Sequence[Payload]) -> list[StorageDriverClaim]:
        return await self.driver.store(context, payloads)

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        try:
            return await self.driver.retrieve(context, claims)
        except UnresolvablePayload:
            raise
        except Exception as exc:
            raise _StoreUnavailable(f"the payload store {self.driver.name()} failed: {exc}") from exc

    async def aclose(self) -> None:
        close = getattr(self.driver, "aclose", None)
        if close is not None:
            await close()


class _NoStore(StorageDriver):
    """The driver of a worker without a payload store: it stores nothing and resolves nothing."""

    def name(self) -> str:
        return NO_STORE_DRIVER

    async def store(self, context: StorageDriverStoreContext, payloads: Sequence[Payload]) -> list[StorageDriverClaim]:
        raise AssertionError("the no-store driver is never selected")

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        raise UnresolvablePayload("this worker has no payload store (SIGNOFF_PAYLOAD_STORE)")


def guarded(converter: DataConverter, *, replaying: bool = False) -> GuardedConverter:
    """`converter` for a worker: the same conversion and store, with unresolvable payloads read
    as `not_a_payload`; without a store, every reference reads so (nothing is ever stored).
    `replaying`: for a replay (see `GuardedConverter`)."""
    if isinstance(converter, GuardedConverter):
        return converter
    storage = converter.external_storage
    if storage is None:  # replaying, a reference to a store then says none is configured (storage_problem)
        storage = ExternalStorage(drivers=[_NoStore()], driver_selector=lambda context, payload: None)
    else:
        drivers = [_Guarded(driver) for driver in storage.drivers]
        by_name: dict[str, StorageDriver] = {driver.name(): driver for driver in drivers}
        select = storage.driver_selector
        selector = None if select is None else lambda context, payload: _same(by_name, select(context, payload))
        storage = dataclasses.replace(storage, drivers=drivers, driver_selector=selector)
    fields = {f.name: getattr(converter, f.name) for f in dataclasses.fields(converter) if f.init}
    fields["failure_converter_class"] = quiet(converter.failure_converter_class)  # refusals without tracebacks
    return GuardedConverter(**{**fields, "external_storage": storage, "replaying": replaying})


def _same(by_name: dict[str, StorageDriver], driver: StorageDriver | None) -> StorageDriver | None:
    return None if driver is None else by_name[driver.name()]


def worker_client(client: Client) -> Client:
    """`client` with a guarded data converter (same connection), for a worker."""
    if isinstance(client.data_converter, GuardedConverter):
        return client
    config = client.config()
    config["data_converter"] = guarded(client.data_converter)
    return Client(**config)
