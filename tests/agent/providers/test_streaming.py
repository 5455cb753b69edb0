"""The shared retry arithmetic: backoff, Retry-After parsing and its cap."""

from __future__ import annotations

import email.utils
import time

import pytest

from ax_agent.providers.streaming import parse_retry_after, retry_delay


def test_backoff_doubles_up_to_its_cap() -> None:
    assert [retry_delay(n, None) for n in range(1, 7)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]


def test_retry_after_wins_unless_it_is_too_long() -> None:
    assert retry_delay(1, 2.5) == 2.5
    assert retry_delay(1, 60.0) == 60.0
    assert retry_delay(1, 61.0) is None


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, None),
        ({"retry-after": "7"}, 7.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after": "-3"}, 0.0),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after-ms": "soon", "retry-after": "9"}, 9.0),
        ({"retry-after": "whenever"}, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(headers) == expected


def test_parse_retry_after_as_an_http_date() -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    seconds = parse_retry_after({"retry-after": when})
    assert seconds is not None and 25 < seconds <= 30
