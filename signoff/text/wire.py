"""Payloads without the defaults: what a run records of a model, and what it can leave out.

A model that derives from `Compact` leaves out, in the payloads signoff's data converter
writes, every field whose value is its default; pydantic fills them in again when the
payload is read. Only payloads are compact: `model_dump` (digests, seals, sizes) and
JSON shapes the contract names (query answers, the run's result) keep every field, so a
digest computed before this existed is the one computed now. A default is part of the
workflow code (`runtime.fingerprint`): changing one is a change that needs a patch or a
new version, or a payload recorded before would read differently.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

from pydantic import BaseModel, SerializationInfo, SerializerFunctionWrapHandler, model_serializer

WIRE = "signoff.wire"
"""The serialization context key under which `Compact` models leave their defaults out."""

WIRE_CONTEXT = {WIRE: True}


def on_the_wire(info: SerializationInfo) -> bool:
    context = info.context
    return isinstance(context, dict) and bool(context.get(WIRE))


@functools.cache
def _optional_fields(model: type[BaseModel]) -> tuple[tuple[str, str, Any], ...]:
    """(name, alias, default) of each field of `model` that has a default, worked out once: a
    default factory's value is made here, not at every payload (pydantic inspects the factory's
    signature each time it is called for)."""
    return tuple(
        (name, field.serialization_alias or name, field.get_default(call_default_factory=True))
        for name, field in model.model_fields.items()
        if not field.is_required()
    )


class Compact(BaseModel):
    """A model whose payloads leave out the fields at their defaults (see the module).

    `absent_when_none`: fields left out of every dump when None, payload or not (so digests
    of models that never had them stay what they were)."""

    absent_when_none: ClassVar[frozenset[str]] = frozenset()

    @model_serializer(mode="wrap")
    def _compact(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        if not isinstance(data, dict):
            return data
        for name in self.absent_when_none:
            if data.get(name, False) is None:
                del data[name]
        if not on_the_wire(info):
            return data
        for name, alias, default in _optional_fields(type(self)):
            key = alias if info.by_alias else name
            if key in data and getattr(self, name) == default:
                del data[key]
        return data
