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


def test_slate_limits() -> None:
    from ax_slate import budget, external, frame, gate, jsonl, recall, session, trail
    from libcommon import trust

    assert budget.CHARS_PER_TOKEN == 4
    assert session.NOTE_MAX_CHARS == 2_000
    assert session.NOTES_MAX_TOKENS == 8_000
    assert session.NOTE_KEY_PATTERN.pattern == r"^[A-Za-z0-9._-]{1,64}$"
    assert session.COURSE_MAX_CHARS == 500
    assert trail.ARGS_DIGEST_MAX_CHARS == 240
    assert trail.OUTCOME_MAX_CHARS == 240
    assert trail.OUTPUT_PATH_MAX_CHARS == 4_096
    assert jsonl.TAIL_CHUNK_BYTES == 8_192
    assert trail.TRAIL_DEFAULT_COUNT == 20
    assert frame.FRAME_TRAIL_TOKENS == 2_500
    assert recall.PAGE_CHARS == 6_000
    assert recall.RECALL_MAX_BYTES == 64 * 1024 * 1024
    assert recall.SNIPPET_CONTEXT_CHARS == 120
    assert recall.QUERY_MAX_CHARS == 1_000
    assert external.EXTERNAL_ID_PATTERN.pattern == r"^[A-Za-z0-9_-]{1,128}$"
    assert external.WORKSPACE_ID_PATTERN.pattern == r"^[A-Za-z0-9._-]{1,160}$"
    assert external.SEED_MAX_CHARS == 4_000
    assert external.SEEDS_MAX == 200
    assert external.ANCHORS_MAX_BYTES == 64 * 1024
    assert external.STALE_AFTER_S == 30 * 60.0
    assert gate.PROPOSAL_ID_PATTERN.pattern == r"^[A-Za-z0-9_-]{1,128}$"
    assert gate.KNOWLEDGE_RENDER_MAX == 500
    assert trust.TRUST_FORMAT_VERSION == 1
