"""The ``server`` fixture: a fake model server on loopback, closed after the test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from agent.providers.fakes import FakeServer


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = FakeServer()
    yield fake
    fake.close()
