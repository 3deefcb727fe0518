"""Experiment: the tool activity without the spent-signature record (`signoff.activities.spent`).

A worker run through this module (`bench.spent` starts one so, beside a normal one) verifies the
signatures that authorise a gated call as usual, but records nothing: `SpentSignatures.spend`
answers "unspent" without asking the server. The baseline of what the record costs; never a
configuration (a worker without the record runs a reset run's call again).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from signoff.activities.spent import SpentSignatures
from signoff.approval.evidence import Counted


async def _unrecorded(self: SpentSignatures, counted: Sequence[Counted], quorum: int) -> str | None:
    return None


if __name__ == "__main__":
    sys.argv = sys.argv[1:]
    from signoff.runtime import worker

    SpentSignatures.spend = _unrecorded  # type: ignore[method-assign]
    worker.main(sys.argv[1:])
