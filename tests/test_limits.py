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
