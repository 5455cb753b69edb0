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


def test_ax_log_limits() -> None:
    from ax_log import envelope, events, intake, reader, revert, snapshots, writer

    assert envelope.SCHEMA_VERSION == 1
    assert events.CUSTOM_KIND_PATTERN.pattern == r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$"
    assert writer.APPEND_LOCK_TIMEOUT_S == 30.0
    assert writer.LOCK_POLL_MIN_S == 0.0002
    assert writer.LOCK_POLL_MAX_S == 0.01
    assert writer.INDEX_RECORD_BYTES == 160
    assert writer.TAIL_READ_CHUNK == 64 * 1024
    assert writer.BATCH_MAX_EVENTS == 10_000
    assert reader.FOLLOW_POLL_S == 0.2
    assert intake.INPUT_MAX_BYTES == 16 * 1024 * 1024
    assert snapshots.COPY_CHUNK_BYTES == 1024 * 1024
    assert revert.RESTORED_FILE_MODE == 0o644


def test_ax_report_limits() -> None:
    from ax_report import context, diff, intake, scope, text

    assert intake.SCHEMA_VERSION == 1
    assert intake.QUOTE_CHARS == 80
    assert context.LISTED_PROBLEMS_MAX == 100
    assert text.SHOWN_MAX_CHARS == 300
    assert text.SHOWN_CACHE_ENTRIES == 4096
    assert scope.RELATIVE_CACHE_ENTRIES == 4096
    assert diff.DIFF_CONTEXT_LINES == 3
