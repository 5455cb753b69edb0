"""libcommon.clock (timestamps, injected clock and ids) and libcommon.errors (exit table)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import pytest

from libcommon import clock
from libcommon.errors import (
    AxError,
    CorruptStore,
    ExitStatus,
    Fenced,
    NotTrusted,
    OperationFailed,
    Unsupported,
    UsageError,
)

TS_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
RANDOM_ID_RE = re.compile(r"^s-\d{8}T\d{6}-[0-9a-f]{8}$")
START = datetime(2026, 11, 30, 10, 0, 0, 123_456, tzinfo=UTC)

# --- clock ----------------------------------------------------------------------------


def test_timestamp_format_in_utc() -> None:
    assert clock.timestamp(START) == "2026-11-30T10:00:00.123Z"
    assert clock.timestamp(START.replace(microsecond=0)) == "2026-11-30T10:00:00.000Z"
    assert clock.timestamp(START.replace(microsecond=999_999)) == "2026-11-30T10:00:00.999Z"


@pytest.mark.parametrize("hours", [2, -5, 14, -12])
def test_timestamp_converts_non_utc_input(hours: int) -> None:
    zone = timezone(timedelta(hours=hours))
    local = START.astimezone(zone)
    assert local.utcoffset() == timedelta(hours=hours)
    assert clock.timestamp(local) == "2026-11-30T10:00:00.123Z"


def test_timestamp_across_midnight() -> None:
    late = datetime(2026, 12, 31, 23, 30, 0, 5_000, tzinfo=timezone(timedelta(hours=-3)))
    assert clock.timestamp(late) == "2027-01-01T02:30:00.005Z"


def test_system_clock_is_utc_and_now() -> None:
    stamp = clock.timestamp()
    assert TS_RE.fullmatch(stamp)
    reading = clock.now()
    assert reading.utcoffset() == timedelta(0)
    assert abs(reading - datetime.now(UTC)) < timedelta(seconds=5)


def test_step_clock_and_sequential_ids_under_use() -> None:
    with clock.use(clock.StepClock(START), clock.SequentialIds()):
        assert clock.now() == START
        assert clock.timestamp() == "2026-11-30T10:00:00.124Z"
        assert clock.timestamp() == "2026-11-30T10:00:00.125Z"
        assert clock.new_id("s") == "s-0001"
        assert clock.new_id("call") == "call-0002"
    # Restored afterwards: the system clock and random ids again.
    assert abs(clock.now() - datetime.now(UTC)) < timedelta(seconds=5)
    first, second = clock.new_id("s"), clock.new_id("s")
    assert RANDOM_ID_RE.fullmatch(first), first
    assert first != second


def test_step_clock_custom_step() -> None:
    step = clock.StepClock(START, step=timedelta(seconds=2))
    assert [step.now() for _ in range(3)] == [START + timedelta(seconds=2 * i) for i in range(3)]


def test_use_restores_after_an_exception() -> None:
    with pytest.raises(RuntimeError), clock.use(clock.StepClock(START), clock.SequentialIds()):
        raise RuntimeError("boom")
    assert clock.now() != START
    assert RANDOM_ID_RE.fullmatch(clock.new_id("s"))


def test_use_swaps_only_what_is_given_and_nests() -> None:
    ids = clock.SequentialIds()
    with clock.use(ids=ids):
        assert clock.new_id("a") == "a-0001"
        assert abs(clock.now() - datetime.now(UTC)) < timedelta(seconds=5)
        with clock.use(clock=clock.StepClock(START)):
            assert clock.now() == START
            assert clock.new_id("a") == "a-0002"  # ids kept from the outer block
        assert clock.now() != START
        assert clock.new_id("a") == "a-0003"
    assert RANDOM_ID_RE.fullmatch(clock.new_id("s"))


def test_random_ids_use_the_injected_clock() -> None:
    with clock.use(clock.StepClock(START)):
        new = clock.new_id("s")
    assert new.startswith("s-20261130T100000-")
    assert RANDOM_ID_RE.fullmatch(new)


# --- errors ---------------------------------------------------------------------------


def test_exit_status_table_matches_design() -> None:
    assert {status.name: int(status) for status in ExitStatus} == {
        "OK": 0,
        "FAILED": 1,
        "USAGE": 2,
        "UNTRUSTED": 3,
        "FENCED": 4,
        "UNSUPPORTED": 5,
        "TIMEOUT": 124,
        "SPAWN_ERROR": 127,
        "ABORTED": 130,
        "BROKEN_PIPE": 141,
    }


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (AxError("x"), 1),
        (OperationFailed("x"), 1),
        (UsageError("x"), 2),
        (NotTrusted("x"), 3),
        (Fenced("x"), 4),
        (Unsupported("x", reason="no-pty"), 5),
        (CorruptStore("/s/f.json", "bad"), 1),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, AxError) else str(v),
)
def test_every_error_has_its_design_status(error: AxError, status: int) -> None:
    assert error.status == status
    assert isinstance(error.status, ExitStatus)
    assert isinstance(error, AxError)
    assert isinstance(error, Exception)


def test_every_axerror_subclass_is_in_the_table() -> None:
    expected: dict[type[AxError], int] = {
        OperationFailed: 1,
        UsageError: 2,
        NotTrusted: 3,
        Fenced: 4,
        Unsupported: 5,
        CorruptStore: 1,
    }
    assert set(AxError.__subclasses__()) == set(expected)
    for cls, status in expected.items():
        assert cls.status == status


def test_error_message_hint_and_reason() -> None:
    error = UsageError("bad flag", hint="try -h")
    assert (error.message, error.hint, str(error)) == ("bad flag", "try -h", "bad flag")
    assert AxError("plain").hint is None
    unsupported = Unsupported("no pty here", reason="no-pty", hint="use pipes")
    assert (unsupported.reason, unsupported.hint) == ("no-pty", "use pipes")


def test_corrupt_store_names_path_and_line() -> None:
    with_line = CorruptStore("/state/s.jsonl", "not valid JSON", line=7)
    assert with_line.message == "corrupt store /state/s.jsonl:7: not valid JSON"
    assert (with_line.path, with_line.line, with_line.problem) == (
        "/state/s.jsonl",
        7,
        "not valid JSON",
    )
    assert with_line.hint
    assert CorruptStore("/state/t.json", "bad").message == "corrupt store /state/t.json: bad"
