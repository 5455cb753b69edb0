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


def test_agent_provider_limits() -> None:
    from ax_agent.providers import anthropic, base, openai_compat, script, streaming

    assert base.DEFAULT_MAX_TOKENS == 8192
    assert streaming.MAX_ATTEMPTS == 3
    assert streaming.BACKOFF_BASE_S == 0.5
    assert streaming.BACKOFF_CAP_S == 8.0
    assert streaming.RETRY_AFTER_CAP_S == 60.0
    assert streaming.ABORT_POLL_S == 0.05
    assert streaming.CONNECT_TIMEOUT_S == 10.0
    assert streaming.READ_TIMEOUT_S == 300.0
    assert streaming.WRITE_TIMEOUT_S == 60.0
    assert anthropic.DEFAULT_ANTHROPIC_MODEL == "claude-sonnet-4-5"
    assert openai_compat.ERROR_BODY_MAX_CHARS == 500
    assert script.SCRIPT_MAX_BYTES == 4 * 1024 * 1024
    assert script.EXPECT_QUOTE_CHARS == 300
