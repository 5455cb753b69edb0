"""Every cap, size and timeout is a named constant, and its value is pinned here.

Changing a limit is a deliberate act: change the constant, this pin and the
docs together. Each tool adds its own section as its caps land.
"""

from __future__ import annotations

from libcommon import cliapp, locks, paths


def test_libcommon_limits() -> None:
    assert locks.LOCK_TIMEOUT_S == 30.0
    assert cliapp.REQUEST_MAX_BYTES == 16 * 1024 * 1024
    assert paths.SLUG_HASH_CHARS == 12
    assert paths.SESSION_ID_PATTERN.pattern == r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
    assert paths.RESERVED_ID_SUFFIXES == (".jsonl", ".lock", ".partial", ".guard", ".tmp", ".index")


def test_check_limits() -> None:
    from ax_check import check, parsers, progress, units

    assert check.DEFAULT_TIMEOUT_S == 1800.0
    assert check.MAX_TIMEOUT_S == 24 * 3600.0
    assert check.MAX_TARGETS == 64
    assert check.MAX_TARGET_CHARS == 1024
    assert check.EXEC_OUTPUT_BYTES == 64 * 1024
    assert parsers.MAX_SIGNALS == 50
    assert parsers.MAX_FINDINGS == 100
    assert parsers.MAX_DETAIL_CHARS == 300
    assert parsers.MAX_LINE_BYTES == 8 * 1024
    assert parsers.OUTPUT_HEAD_BYTES == 4 * 1024
    assert parsers.OUTPUT_TAIL_BYTES == 12 * 1024
    assert progress.PROGRESS_INTERVAL_S == 1.0
    assert units.MAX_UNITS == 256
    assert units.MAX_DIR_ENTRIES == 4096
    assert units.MAX_MANIFEST_BYTES == 1024 * 1024
