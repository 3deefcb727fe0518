"""The fuzzer's short profile, with the test suite: 150 generated cases (tests/fuzz/harness.py).

The long run is `python -m tests.fuzz --cases 2000` (tests/fuzz/__main__.py).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from tests.fuzz.harness import Harness
from tests.fuzz.strategies import Case, cases

SHORT_CASES = 150


@pytest.fixture(scope="module")
def harness() -> Iterator[Harness]:
    harness = Harness()
    yield harness
    harness.close()


@settings(
    max_examples=SHORT_CASES,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
@given(case=cases)
def test_no_generated_case_wedges_a_run(harness: Harness, case: Case) -> None:
    harness.run(case)
