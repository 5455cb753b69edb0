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


def test_exec_limits() -> None:
    from ax_exec import capture, environment, launcher, models, proctree, run, sandbox

    assert capture.DEFAULT_MAX_OUTPUT_BYTES == 128 * 1024
    assert capture.MIN_MAX_OUTPUT_BYTES == 1024
    assert capture.MAX_MAX_OUTPUT_BYTES == 64 * 1024 * 1024
    assert capture.SPILL_MAX_BYTES == 64 * 1024 * 1024
    assert capture.READ_CHUNK_BYTES == 64 * 1024
    assert models.DEFAULT_TIMEOUT_S == 600.0
    assert models.MAX_TIMEOUT_S == 24 * 3600.0
    assert proctree.KILL_GRACE_S == 2.0
    assert proctree.KILL_ROUNDS == 5
    assert proctree.KILL_POLL_S == 0.02
    assert run.ABORT_POLL_S == 0.05
    assert run.DRAIN_TIMEOUT_S == 2.0
    assert run.LAUNCH_TIMEOUT_S == 10.0
    assert run.EXIT_WAIT_S == 5.0
    assert run.TRACK_INTERVAL_S == 0.5
    assert run.READY_READS == 16
    assert sandbox.PROBE_TIMEOUT_S == 10.0
    assert launcher.MIN_ENFORCED_ABI == 3
    assert launcher.KNOWN_ABI == 7
    assert environment.DEFAULT_DENY_PATTERNS == (
        "*KEY*",
        "*SECRET*",
        "*TOKEN*",
        "*PASSWORD*",
        "*CREDENTIAL*",
    )


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
