"""Every cap, size and timeout is a named constant, and its value is pinned here.

Changing a limit is a deliberate act: change the constant, this pin and the
docs together. Each tool adds its own section as its caps land.
"""

from __future__ import annotations

import subprocess

from axtest import tool_path

from libcommon import atomic, cliapp, locks, paths


def test_libcommon_limits() -> None:
    from libcommon import procfs, pyproject_env, redact

    assert procfs.ENVIRON_READ_MAX_BYTES == 1024 * 1024
    assert procfs.NET_TABLE_READ_MAX_BYTES == 16 * 1024 * 1024
    assert procfs.NET_TABLE_CHUNK_BYTES == 64 * 1024
    assert procfs.CMDLINE_READ_MAX_BYTES == 4096
    assert locks.LOCK_TIMEOUT_S == 30.0
    assert cliapp.REQUEST_MAX_BYTES == 16 * 1024 * 1024
    assert cliapp.REFUSED_VALUE_MAX_CHARS == 80
    assert paths.SLUG_HASH_CHARS == 12
    assert atomic.TMP_NAME_KEEP_CHARS == 40
    assert paths.SESSION_ID_PATTERN.pattern == r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
    assert paths.RESERVED_ID_SUFFIXES == (".jsonl", ".lock", ".partial", ".guard", ".tmp", ".index")
    assert redact.STREAM_WINDOW_CHARS == 32 * 1024
    assert redact.STREAM_CONTEXT_LINES == 8
    assert redact.STREAM_HOLD_CHARS == 256 * 1024
    assert redact.STREAM_CUT_TRIES == 4
    assert pyproject_env.MAX_MANIFEST_BYTES == 1024 * 1024
    assert pyproject_env.MAX_SITE_ENTRIES == 20_000
    assert pyproject_env.MAX_MISSING_SHOWN == 6


def test_preview_limits() -> None:
    from ax_preview import (
        launch,
        manage,
        proc,
        pythonenv,
        readiness,
        registry,
        scripts,
        supervisor,
    )

    assert launch.DEFAULT_TTL_S == 30 * 60.0
    assert launch.MAX_TTL_S == 24 * 3600.0
    assert launch.DEFAULT_LOG_CAP_BYTES == 16 * 1024 * 1024
    assert launch.MIN_LOG_CAP_BYTES == 4096
    assert launch.MAX_LOG_CAP_BYTES == 1024 * 1024 * 1024
    assert launch.DEFAULT_READY_TIMEOUT_S == 30.0
    assert launch.MAX_READY_TIMEOUT_S == 600.0
    assert launch.VERDICT_GRACE_S == 15.0
    assert launch.WAIT_POLL_S == 0.05
    assert (launch.MIN_PORT, launch.MAX_PORT) == (1, 65535)
    assert readiness.PROBE_TIMEOUT_S == 0.5
    assert readiness.PROBE_HOSTS == ("127.0.0.1", "::1")
    assert readiness.MAX_CANDIDATE_PORTS == 8
    assert supervisor.POLL_S == 0.05
    assert supervisor.PROBE_INTERVAL_S == 0.2
    assert supervisor.SESSION_POLL_S == 0.5
    assert supervisor.READY_SCAN_MAX_BYTES == 256 * 1024
    assert supervisor.SESSION_READ_MAX_BYTES == 1024 * 1024
    assert supervisor.LOG_TAIL_BYTES == 4096
    assert supervisor.EVENT_LOG_TAIL_CHARS == 2000
    assert proc.KILL_GRACE_S == 2.0
    assert proc.KILL_ROUNDS == 5
    assert proc.KILL_POLL_S == 0.02
    assert manage.STOP_WAIT_S == proc.KILL_GRACE_S + 10.0
    assert manage.FOLLOW_POLL_S == 0.2
    assert manage.LOGS_READ_MAX_BYTES == 1024 * 1024
    assert scripts.SCRIPT_NAMES == ("dev", "start", "serve", "preview")
    assert scripts.MANIFEST_MAX_BYTES == 1024 * 1024
    assert pythonenv.PYTHON_PROBE_TIMEOUT_S == 10.0
    assert registry.PREVIEW_ID_PATTERN.pattern == r"^pv-[A-Za-z0-9_-]{1,64}$"


def test_check_limits() -> None:
    from ax_check import check, detection, facts, parsers, progress, units

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
    assert parsers.MAX_WRAPPED_LINES == 3
    assert progress.PROGRESS_INTERVAL_S == 1.0
    assert units.MAX_UNITS == 256
    assert units.MAX_DIR_ENTRIES == 4096
    assert detection.MAX_UNUSED_SHOWN == 40
    assert facts.PASSED_OVER_NAMES_SHOWN == 6


def test_check_tree_install_and_missing_limits() -> None:
    from ax_check import check, recipes, tree
    from libcommon import missing

    assert check.TREE_CHANGES_IN_MESSAGE == 5
    assert tree.MAX_SNAPSHOT_FILES == 20_000
    assert tree.MAX_SNAPSHOT_ENTRIES == 100_000
    assert tree.MAX_SNAPSHOT_HASH_BYTES == 32 * 1024 * 1024
    assert tree.MAX_CHANGES_LISTED == 50
    assert tree.GIT_BYTES_PER_FILE == 512
    assert recipes.MAX_TSCONFIGS == 64
    assert missing.MAX_MISSING_PROGRAMS == 8


def test_check_setup_limits() -> None:
    from ax_check import setup_run

    assert setup_run.SETUP_DEFAULT_TIMEOUT_S == 1800.0
    assert setup_run.SETUP_MAX_TIMEOUT_S == 4 * 3600.0
    assert setup_run.SETUP_OUTPUT_BYTES == 64 * 1024


def test_libcommon_git_limits() -> None:
    from libcommon import git

    assert git.GIT_TIMEOUT_S == 5.0
    assert git.GIT_MAX_OUTPUT_BYTES == 16 * 1024 * 1024
    # Of stderr, the end kept for a failure's message, and the most of one line quoted.
    assert git.GIT_STDERR_MAX_BYTES == 4096
    assert git.GIT_SAID_MAX_CHARS == 300
    assert git.MAX_CONTENT_DRIVERS == 64
    assert git.MAX_BATCH_COMMANDS == 8
    assert git.GIT_WRITE_TIMEOUT_S == 60.0
    assert git.MAX_CHECKPOINTS_PER_SESSION == 20
    assert git.MIN_GIT_VERSION == (2, 15)


def test_exec_limits() -> None:
    from ax_exec import capture, environment, launcher, models, proctree, run, sandbox

    assert capture.DEFAULT_MAX_OUTPUT_BYTES == 128 * 1024
    assert capture.MIN_MAX_OUTPUT_BYTES == 1024
    assert capture.MAX_MAX_OUTPUT_BYTES == 64 * 1024 * 1024
    assert capture.SPILL_MAX_BYTES == 64 * 1024 * 1024
    assert capture.READ_CHUNK_BYTES == 64 * 1024
    assert capture.DECODE_SLICE_BYTES == 64 * 1024
    assert capture.MEMORY_PER_STREAM == 2
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
    assert launcher.MAX_SCAN_ENTRIES == 1_000_000
    assert launcher.MAX_PROTECTED_PATHS == 1024
    assert launcher.MAX_GITFILE_BYTES == 4096
    assert environment.DEFAULT_DENY_PATTERNS == (
        "*KEY*",
        "*SECRET*",
        "*TOKEN*",
        "*PASSWORD*",
        "*CREDENTIAL*",
    )


def test_policy_limits() -> None:
    from ax_policy import (
        breaker,
        command_review,
        compound,
        config,
        engine,
        globs,
        models,
        pathcheck,
        shellwords,
        stores,
    )

    assert shellwords.MAX_COMMAND_CHARS == 4096
    assert shellwords.MAX_WORDS == 256
    assert shellwords.MAX_PARTS == 16
    assert compound.MAX_SHELL_NESTING == 2
    assert pathcheck.MAX_PATH_CHARS == 4096
    assert pathcheck.MAX_REASON_PATH_CHARS == 200
    assert command_review.MAX_FOLDER_WALK_ENTRIES == 10_000
    assert command_review.MAX_SEQUENCE_FOLDERS == 8
    assert globs.MAX_GLOB_MATCHES == 256
    assert globs.MAX_GLOB_SCAN_ENTRIES == 10_000
    assert config.MAX_CONFIG_BYTES == 64 * 1024
    assert stores.MAX_STORE_BYTES == 4 * 1024 * 1024
    assert models.MAX_PATTERNS_PER_LIST == 256
    assert models.MAX_PATTERN_CHARS == 256
    assert models.MAX_STEPS_CAP == 10_000
    assert models.MAX_FACT_PATHS == 256
    assert models.MAX_FACT_TEXT_CHARS == 65_536
    assert engine.MAX_FACT_ERROR_CHARS == 300
    assert breaker.MAX_UNWRAP_DEPTH == 4
    assert command_review.SYSTEM_BIN_DIRS == (
        "/usr/bin",
        "/bin",
        "/usr/sbin",
        "/sbin",
        "/usr/local/bin",
        "/usr/local/sbin",
    )
    assert frozenset({"web_search"}) == models.DURABLE_EXTERNAL_TOOLS


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


def test_slate_memory_limits() -> None:
    from ax_slate import codebase, journal, lessons, memory, memstore

    assert memstore.JOURNAL_MAX_BYTES == 12 * 1024
    assert memstore.CODEBASE_MAX_BYTES == 16 * 1024
    assert memstore.LESSONS_MAX_BYTES == 8 * 1024
    assert memstore.RESEARCH_MAX_BYTES == 8 * 1024
    assert memstore.MEMORY_READ_MAX_BYTES == 1024 * 1024
    assert journal.JOURNAL_WHOLE_ENTRIES == 2
    assert journal.JOURNAL_SECTION_MAX_BYTES == 600
    assert journal.JOURNAL_EVIDENCE_MAX_BYTES == 1_400
    assert journal.JOURNAL_HANDOFF_MAX_BYTES == 600
    assert journal.JOURNAL_ITEM_MAX_BYTES == 240
    assert journal.JOURNAL_ENTRY_MAX_BYTES == 5 * 1024
    assert journal.JOURNAL_STUB_GIST_MAX_BYTES == 160
    assert journal.JOURNAL_STUB_MAX_BYTES == 1024
    assert codebase.DIGEST_PATTERN.pattern == r"^[A-Za-z0-9][A-Za-z0-9:._+/=-]{0,127}$"
    assert codebase.DIGEST_SHOWN_CHARS == 12
    assert lessons.LESSONS_PER_SESSION == 3
    assert lessons.LESSON_TEXT_MAX_BYTES == 1024
    assert lessons.LESSON_SLUG_PATTERN.pattern == r"^(?=.{1,64}$)[a-z0-9]+(?:-[a-z0-9]+)*$"
    assert lessons.LESSONS_LEDGER_SESSIONS == 512
    assert memory.MEMORY_FRAMING_MAX_BYTES == 2 * 1024
    # The worst-case memory section of a new session's system prompt, as one ceiling.
    assert memory.MEMORY_INJECTION_MAX_BYTES == 46 * 1024
    # Two whole entries and ax's lines above them always fit the journal's cap.
    assert (
        len(journal.PREAMBLE.encode()) + 2 * (journal.JOURNAL_ENTRY_MAX_BYTES + 1)
        < memstore.JOURNAL_MAX_BYTES
    )


def test_mcp_limits() -> None:
    from ax_mcp import jsonrpc, server

    assert jsonrpc.MAX_MESSAGE_BYTES == 1024 * 1024
    assert jsonrpc.ID_SCAN_KEY_BYTES == 16
    assert jsonrpc.ID_SCAN_VALUE_BYTES == 1024
    assert jsonrpc.ID_SCAN_MAX_STEPS == 500_000
    assert server.SUPPORTED_VERSIONS == ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")


def test_agent_provider_limits() -> None:
    from ax_agent.providers import anthropic, base, script, streaming

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
    assert script.SCRIPT_MAX_BYTES == 4 * 1024 * 1024
    assert script.EXPECT_QUOTE_CHARS == 300


def test_agent_provider_network_limits() -> None:
    from ax_agent.providers import errors, registry, streaming

    # A server's own error message, quoted in ours (every provider).
    assert errors.ERROR_MESSAGE_MAX_CHARS == 500
    assert streaming.RATE_LIMIT_MAX_ATTEMPTS == 6
    assert registry.PROBE_TIMEOUT_S == 5.0
    assert streaming.SSE_EVENT_MAX_BYTES == 16 * 1024 * 1024


def test_ax_log_limits() -> None:
    from ax_log import envelope, events, intake, reader, revert, snapshots, writer

    assert envelope.SCHEMA_VERSION == 1
    assert events.CUSTOM_KIND_PATTERN.pattern == r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$"
    assert writer.APPEND_LOCK_TIMEOUT_S == 30.0
    assert writer.INDEX_RECORD_BYTES == 160
    assert writer.TAIL_READ_CHUNK == 64 * 1024
    assert writer.BATCH_MAX_EVENTS == 10_000
    assert reader.FOLLOW_POLL_S == 0.2
    assert reader.LINE_MAX_BYTES == 16 * 1024 * 1024
    assert reader.LINE_MAX_BYTES == intake.INPUT_MAX_BYTES
    assert reader.READ_CHUNK_BYTES == 1024 * 1024
    assert writer.WIDEST_SEQ == 10**18
    assert intake.INPUT_MAX_BYTES == 16 * 1024 * 1024
    assert snapshots.COPY_CHUNK_BYTES == 1024 * 1024
    assert revert.RESTORED_FILE_MODE == 0o644


def test_ax_log_checkpoint_limits() -> None:
    from ax_agent.tools import git_checkpoint
    from ax_log import checkpoints

    assert git_checkpoint.LABEL_MAX_CHARS == checkpoints.LABEL_MAX_CHARS
    assert checkpoints.UNTRACKED_FILE_MAX_BYTES == 10 * 1024 * 1024
    assert checkpoints.UNTRACKED_FOLDER_MAX_FILES == 200
    assert checkpoints.MAX_EXCLUDED_PATHS == 1000
    assert checkpoints.LABEL_MAX_CHARS == 200
    assert checkpoints.RESTORE_BLOB_MAX_BYTES == 256 * 1024 * 1024
    assert checkpoints.SECRETS_SHOWN == 10
    assert {
        "node_modules", "bower_components", ".venv", "venv", "__pycache__", ".tox", ".nox",
        "target", ".gradle", ".terraform",
    } == checkpoints.DEPENDENCY_FOLDERS  # fmt: skip


def test_ax_report_limits() -> None:
    from ax_report import context, diff, intake, scope, text

    assert intake.SCHEMA_VERSION == 1
    assert intake.QUOTE_CHARS == 80
    assert context.LISTED_PROBLEMS_MAX == 100
    assert text.SHOWN_MAX_CHARS == 300
    assert text.SHOWN_CACHE_ENTRIES == 4096
    assert scope.RELATIVE_CACHE_ENTRIES == 4096
    assert diff.DIFF_CONTEXT_LINES == 3


def test_mcp_check_limits() -> None:
    from ax_mcp import catalog

    assert catalog.CHECK_RUN_TIMEOUT_S == 600.0
    assert catalog.MAP_REFRESH_BUDGET_S == 2.0


def test_agent_tool_limits() -> None:
    from ax_agent.tools import (
        common,
        edit_file,
        glob,
        grep,
        list_dir,
        read_file,
        run_check,
        run_command,
        slate_note,
        walk,
        write_file,
    )

    assert common.FULL_OUTPUT_MAX_CHARS == 2_000_000
    assert common.SUMMARY_MAX_CHARS == 200
    assert common.NEW_FILE_MODE == 0o644
    assert read_file.READ_DEFAULT_LINES == 2_000
    assert read_file.READ_MAX_LINES == 2_000
    assert read_file.READ_LINE_MAX_CHARS == 2_000
    assert read_file.READ_MAX_CHARS == 100_000
    assert read_file.READ_SNIFF_BYTES == 8_192
    assert read_file.READ_LINE_READ_BYTES == 8_000
    assert read_file.READ_COUNT_MAX_BYTES == 64 * 1024 * 1024
    assert walk.WALK_MAX_ENTRIES == 200_000
    assert frozenset({"node_modules", "__pycache__"}) == walk.SKIPPED_FOLDERS
    assert list_dir.LIST_MAX_DEPTH == 5
    assert list_dir.LIST_MAX_ENTRIES == 500
    assert list_dir.LIST_COLLECT_MAX == 20_000
    assert glob.GLOB_MAX_RESULTS == 200
    assert glob.GLOB_COLLECT_MAX == 10_000
    assert glob.GLOB_PATTERN_MAX_CHARS == 1_000
    assert grep.GREP_MAX_ROWS == 200
    assert grep.GREP_COLLECT_MAX == 10_000
    assert grep.GREP_LINE_MAX_CHARS == 500
    assert grep.GREP_PATTERN_MAX_CHARS == 1_000
    assert grep.GREP_TIMEOUT_S == 30.0
    assert grep.GREP_FILE_MAX_BYTES == 16 * 1024 * 1024
    assert grep.GREP_SNIFF_BYTES == 8_192
    assert grep.GREP_POLL_S == 0.05
    assert write_file.WRITE_MAX_BYTES == 10 * 1024 * 1024
    assert edit_file.EDIT_MAX_BYTES == 10 * 1024 * 1024
    assert edit_file.EDIT_CANDIDATES == 20
    assert edit_file.EDIT_FIRST_LINE_SCAN == 20_000
    assert edit_file.EDIT_REGION_MAX_LINES == 40
    assert edit_file.EDIT_DIFF_MAX_LINES == 40
    assert edit_file.EDIT_MATCHES_SHOWN == 10
    assert edit_file.EDIT_SNIPPET_CONTEXT_LINES == 3
    assert edit_file.EDIT_SNIPPET_MAX_LINES == 40
    assert edit_file.EDIT_LINE_MAX_CHARS == 500
    assert run_command.RUN_DEFAULT_TIMEOUT_S == 120.0
    assert run_command.RUN_MAX_TIMEOUT_S == 1_800.0
    assert run_command.RUN_COMMAND_MAX_CHARS == 16_384
    assert run_command.RUN_OUTPUT_BYTES == 16 * 1024
    assert run_check.CHECK_TARGETS_MAX == 64
    assert run_check.CHECK_FINDINGS_SHOWN == 20
    assert run_check.CHECK_SIGNALS_SHOWN == 20
    assert run_check.CHECK_LINE_MAX_CHARS == 500
    assert slate_note.NOTE_KEY_MAX_CHARS == 64


def test_agent_core_limits() -> None:
    from ax_agent import approvals, calls, cli, context, demo, loop, session
    from ax_agent.seam import process as seam_process

    assert session.DEFAULT_MAX_STEPS == 50
    assert session.DEFAULT_PROVIDER == "anthropic"
    assert loop.LOOP_WARN_AT == 3
    assert loop.LOOP_STOP_AT == 5
    assert loop.UNPARSEABLE_STOP_AT == 3
    assert loop.SUMMARY_MAX_CHARS == 200
    assert approvals.MAX_REASKS == 3
    assert approvals.SUMMARY_MAX_CHARS == 300
    assert calls.FACT_ERROR_MAX_CHARS == 300
    assert context.GIT_TIMEOUT_S == 5.0
    assert seam_process.ABORT_POLL_S == 0.05
    assert seam_process.ABORT_GRACE_S == 10.0
    assert cli.PROMPT_MAX_CHARS == 1024 * 1024
    assert demo.DEMO_MAX_STEPS == 10


def test_agent_instruction_file_limits() -> None:
    from ax_agent import instructions
    from ax_agent.terminal import init
    from ax_policy import models

    assert instructions.USER_MAX_BYTES == 16 * 1024
    assert instructions.PROJECT_MAX_BYTES == 24 * 1024
    # The worst case the instruction files inject, markers and labels included, as one
    # ceiling (beside two fixed sentences: the system prompt's introduction to them and
    # the one budget-spent notice).
    assert instructions.USER_MAX_BYTES + instructions.PROJECT_MAX_BYTES == 40 * 1024
    assert instructions.FILE_MAX_BYTES == 1024 * 1024
    assert instructions.INSTRUCTION_NAMES == ("AGENTS.override.md", "AGENTS.md", "AGENT.md")
    assert instructions.DEFAULT_FALLBACKS == ("CLAUDE.md",)
    assert models.MAX_INSTRUCTION_FALLBACKS == 8
    assert models.MAX_FILE_NAME_CHARS == 255
    assert init.INIT_UNITS_SHOWN == 40


def test_agent_project_memory_limits() -> None:
    from ax_agent import memory, narrative
    from ax_slate import MEMORY_INJECTION_MAX_BYTES

    assert memory.INSTRUCTION_FRAMING_MAX_BYTES == 2 * 1024
    # The worst case a session is given unasked, as ONE ceiling: the user-level file
    # (16 KiB), the project's files (24 KiB), the instruction files' own words (2 KiB) and
    # the project memory section (46 KiB: the journal's, codebase's, lessons' and research
    # notes' caps and their framing). A new injected document must trip this on purpose.
    assert MEMORY_INJECTION_MAX_BYTES == 46 * 1024
    assert memory.INJECTION_MAX_BYTES == 88 * 1024
    assert narrative.NARRATIVE_TIMEOUT_S == 120.0
    assert sorted(narrative.REAL_WORK) == ["check.started", "command.started", "file.mutated"]


def test_agent_repo_map_limits() -> None:
    from ax_agent import memory, repo_map
    from ax_agent.terminal import init
    from ax_agent.tools import retrieve
    from ax_map.query import QUERY_MAX_CHARS
    from ax_map.render import DEFAULT_MAP_CHARS
    from ax_map.retrieve import DEFAULT_RETRIEVE_LIMIT, RETRIEVE_LIMIT_MAX

    assert repo_map.MAP_SESSION_BUDGET_S == 2.0
    assert repo_map.MAP_SESSION_CHARS == DEFAULT_MAP_CHARS == 16_000
    assert repo_map.MAP_FRAMING_MAX_BYTES == 1024
    assert repo_map.MAP_INJECTION_MAX_BYTES == 65_024
    # With the map, the worst case a session is given unasked.
    assert memory.INJECTION_MAX_BYTES + repo_map.MAP_INJECTION_MAX_BYTES == 155_136
    assert init.INIT_FOLDERS_SHOWN == 30
    assert init.INIT_KEY_FILES_SHOWN == 10
    # The tool's bounds are ax-map's, so the model is never offered what ax-map refuses.
    assert retrieve.RETRIEVE_DEFAULT_LIMIT == DEFAULT_RETRIEVE_LIMIT == 10
    assert retrieve.RETRIEVE_LIMIT_MAX == RETRIEVE_LIMIT_MAX == 100
    assert retrieve.RETRIEVE_QUERY_MAX_CHARS == QUERY_MAX_CHARS == 1_000


def test_agent_terminal_limits() -> None:
    from ax_agent import acceptance
    from ax_agent.terminal import approve, commands, keys, prompt, render, repl, status

    assert render.FOLD_HEAD_LINES == 8
    assert render.FOLD_TAIL_LINES == 4
    assert render.FOLD_MIN_HIDDEN == 3
    assert render.CALL_ARG_MAX_CHARS == 100
    assert status.STATUS_TICK_S == 0.1
    assert status.FALLBACK_COLUMNS == 80
    assert keys.ESCAPE_WAIT_S == 0.05
    assert approve.MAX_REASKS == 3
    assert repl.EXIT_CONFIRM_S == 3.0
    assert prompt.HISTORY_MAX_ENTRIES == 1000
    assert prompt.HISTORY_ENTRY_MAX_CHARS == 16_384
    assert commands.TRAIL_DEFAULT_ROWS == 20
    assert commands.EXPAND_MAX_PAGES == 50
    assert acceptance.UNFINISHED_MAX_PATHS == 5


def test_agent_context_limits() -> None:
    from ax_agent.tools import history_search, slate_trail
    from ax_agent.window import budget, catalog, elide, tokens, window

    assert tokens.CHARS_PER_TOKEN == 4
    assert tokens.MESSAGE_OVERHEAD_TOKENS == 4
    assert tokens.BLOCK_OVERHEAD_TOKENS == 8
    assert tokens.TOOL_OVERHEAD_TOKENS == 12
    assert catalog.CATALOG_VERSION == 1
    assert catalog.model_limits("an-unknown-model").context_window == 128_000
    assert catalog.model_limits("an-unknown-model").max_output == 8_192
    assert budget.SAFETY_MARGIN_RATIO == 0.05
    assert budget.TRIGGER_RATIO == 0.75
    assert budget.TARGET_RATIO == 0.5
    assert elide.KEEP_RECENT_ROUNDS == 3
    assert elide.BIG_RESULT_BYTES == 10 * 1024
    assert elide.BIG_RESULT_VERBATIM_REQUESTS == 2
    assert elide.PACK_HEAD_CHARS == 1_500
    assert elide.PACK_TAIL_CHARS == 1_500
    assert elide.OPERATOR_MESSAGES_KEPT == 2
    assert elide.STUB_OPENING_CHARS == 60
    assert elide.FIND_QUERY_CHARS == 40
    assert elide.NOTICE_MAX_TOOLS_NAMED == 8
    assert elide.NOTICE_MAX_STUBS_NAMED == 5
    assert elide.TEXT_CACHE_ENTRIES == 65_536
    assert (elide.ANTHROPIC_CACHE.read, elide.ANTHROPIC_CACHE.write) == (0.1, 1.25)
    assert elide.ANTHROPIC_CACHE.horizon == 20
    assert window.FRAME_BUILD_RATIO == 0.8
    assert slate_trail.TRAIL_MAX_COUNT == 200
    assert slate_trail.TRAIL_DEFAULT_COUNT == 20
    assert history_search.CALL_LOOKUP_MAX_PAGES == 50


def test_libcommon_flock_limits() -> None:
    assert locks.FLOCK_POLL_MIN_S == 0.0002
    assert locks.FLOCK_POLL_MAX_S == 0.01


def test_log_tail_first_read_limit() -> None:
    from ax_log import writer

    assert writer.TAIL_FIRST_READ == 4 * 1024


def test_map_limits() -> None:
    from ax_map import (
        build,
        cli,
        extract,
        gitignore,
        index,
        inventory,
        languages,
        resolve,
        scan,
        treesit,
    )

    assert inventory.MAX_FILES == 20_000
    assert inventory.MAX_FILE_BYTES == 1024 * 1024
    assert inventory.GIT_LIST_MAX_BYTES == 64 * 1024 * 1024
    assert inventory.GIT_LIST_TIMEOUT_S == 60.0
    assert inventory.WALK_MAX_ENTRIES == 1_000_000
    assert inventory.WALK_MAX_DEPTH == 128
    assert {".git"} == inventory.WALK_SKIPPED_DIRS
    assert gitignore.GITIGNORE_MAX_BYTES == 1024 * 1024
    assert extract.BINARY_SNIFF_BYTES == 8192
    assert extract.MINIFIED_AVG_LINE_BYTES == 200
    assert extract.MINIFIED_MIN_BYTES == 2048
    assert extract.MAX_WORKERS == 4
    assert extract.POOL_MIN_FILES == 200
    assert extract.BATCH_BYTES == 256 * 1024
    assert extract.BATCH_MAX_FILES == 64
    assert extract.DEADLINE_GRACE_S == 0.2
    assert extract.WORKER_MEMORY_HEADROOM_BYTES == 512 * 1024 * 1024
    assert extract.MAX_WORKER_RESTARTS == 8
    assert treesit.PARSE_TIMEOUT_S == 2.0
    assert build.NOTE_PATHS_SHOWN == 5
    assert build.DEFAULT_BUDGET_S == 30.0
    assert (build.MIN_BUDGET_S, build.MAX_BUDGET_S) == (0.1, 3600.0)
    assert build.WRITE_RESERVE_S == 1.0
    assert build.WRITE_RESERVE_FRACTION == 0.1
    assert build.RACY_WINDOW_NS == 2_000_000_000
    assert languages.NAME_MAX_CHARS == 128
    assert languages.IDENTIFIER.pattern == r"[A-Za-z_$][A-Za-z0-9_$]{0,127}"
    assert languages.REFERENCE_MIN_CHARS == 2
    assert scan.SPECIFIER_MAX_CHARS == 256
    assert resolve.GO_MOD_MAX_BYTES == 64 * 1024
    assert index.SCHEMA_VERSION == 3
    assert cli.PROGRESS_INTERVAL_S == 0.1


def test_map_build_help_names_the_default_budget() -> None:
    from ax_map import build

    proc = subprocess.run(
        [tool_path("map"), "build", "--help"], capture_output=True, text=True, check=True
    )
    assert f"(default {build.DEFAULT_BUDGET_S:g})" in " ".join(proc.stdout.split())


def test_map_ranking_limits() -> None:
    from ax_map import query, rank, render, retrieve, structure, views

    assert structure.DAMPING == 0.85
    assert structure.PAGERANK_MAX_ITERATIONS == 100
    assert structure.PAGERANK_TOLERANCE == 1e-6
    assert structure.SPECIFIC_NAME_MIN_CHARS == 8
    assert structure.COMMON_NAME_DEFINERS == 5
    assert structure.NAME_DEFINERS_MAX == 30
    assert structure.SHORT_NAME_MAX_CHARS == 2
    assert structure.NEIGHBOURS_PER_SEED_MAX == 100
    assert structure.SNAPSHOT_CACHE_ENTRIES == 4
    assert query.SUBSTRING_NAMES_MAX == 2_000
    assert query.SUBSTRING_MIN_CHARS == 3
    assert query.PREFIX_MIN_CHARS == 5
    assert query.QUERY_MAX_CHARS == 1_000
    assert query.QUERY_TERMS_MAX == 16
    assert query.QUERY_SIGNALS_MAX == 3
    assert rank.NEIGHBOUR_SEEDS_MAX == 50
    assert rank.RANKED_SYMBOLS_MAX == 10
    assert rank.MATCHED_SYMBOLS_MAX == 10
    assert render.DEFAULT_MAP_CHARS == 16_000
    assert render.KEY_FILES_MAX == 1_000
    assert render.SYMBOLS_PER_FILE_MAX == 8
    assert render.UNCOMMITTED_SHOWN_MAX == 50
    assert render.LISTED_REASONS_SHOWN_MAX == 8
    assert render.LANGUAGES_SHOWN_MAX == 8
    assert render.TREE_LINE_CHARS == 100
    assert (render.TREE_SHARE, render.UNCOMMITTED_SHARE) == (0.4, 0.1)
    assert retrieve.DEFAULT_RETRIEVE_LIMIT == 10
    assert retrieve.RETRIEVE_LIMIT_MAX == 100
    assert retrieve.HIT_SYMBOLS_MAX == 8
    assert (retrieve.EXCERPT_LINES_BEFORE, retrieve.EXCERPT_LINES_AFTER) == (2, 4)
    assert retrieve.EXCERPT_LINE_MAX_CHARS == 160
    assert retrieve.EXCERPT_TAB_COLUMNS == 4
    assert retrieve.EXCERPT_READ_MAX_BYTES == 1024 * 1024
    assert (views.MAP_CHARS_MIN, views.MAP_CHARS_MAX) == (200, 160_000)
    assert views.FOCUS_PATHS_MAX == 64


def test_git_person_limits() -> None:
    """Issue 20: git_status's bounded views, the policy's gitRead fact, deliberate git."""
    from ax_agent.git import repo as gitrepo
    from ax_agent.tools import git_status
    from ax_policy import models

    assert git_status.GIT_STATUS_DEFAULT_COUNT == 20
    assert git_status.GIT_STATUS_MAX_COUNT == 200
    assert gitrepo.GIT_READ_TIMEOUT_S == 10.0
    assert models.MAX_GIT_READ_COMMANDS == 8
    assert models.MAX_GIT_READ_WORDS == 32
    from ax_agent.git import commit as gitcommit
    from libcommon import git

    assert gitcommit.COMMIT_MESSAGE_MAX_CHARS == 10_000
    assert gitcommit.COMMIT_PREVIEW_MAX_ROWS == 200
    from ax_agent.git import push as gitpush

    assert gitpush.PUSH_LOOK_TIMEOUT_S == 60.0
    assert gitpush.PUSH_TIMEOUT_S == 300.0
    assert git.DELIBERATE_TIMEOUT_S == 600.0
    assert git.DELIBERATE_MAX_OUTPUT_BYTES == 64 * 1024
    assert git.DELIBERATE_ENV_DROPPED == ("GH_TOKEN", "GITHUB_TOKEN")


def test_agent_plan_limits() -> None:
    from ax_agent.plans import actions, validate, views
    from ax_agent.tasks import gate

    assert validate.PLAN_MAX_TASKS == 50
    assert validate.PLAN_MAX_BYTES == 64 * 1024
    assert validate.TASK_ID_MAX_CHARS == 48
    assert validate.TITLE_MAX_CHARS == 200
    assert validate.TEXT_MAX_CHARS == 4_000
    assert validate.TASK_LIST_MAX == 32
    assert validate.TOUCH_MAX_CHARS == 1_024
    assert views.SHA_SHOWN_CHARS == 12
    assert actions.SHA_PREFIX_MIN_CHARS == 4
    assert gate.MAX_FAILURES == 3
    assert gate.READY_IDS_SHOWN == 10


def test_agent_recovery_limits() -> None:
    from ax_agent.recovery import classify, ledger
    from ax_agent.tasks import verify
    from ax_log.events import RepairDismissed

    assert classify.DIAGNOSIS_EVIDENCE_MAX == 10
    assert verify.SCOPE_CACHE_ENTRIES == 1024
    assert ledger.DISMISS_REASON_MAX_CHARS == 500
    assert ledger.REPAIR_ATTEMPTS_MAX == 3
    # The event's own bound is the command's: a reason the command takes is never refused.
    reason = RepairDismissed.model_fields["reason"].metadata
    assert any(getattr(m, "max_length", None) == ledger.DISMISS_REASON_MAX_CHARS for m in reason)


def test_agent_delegation_limits() -> None:
    from ax_agent.delegation import child, forward, group
    from ax_agent.tools import delegate_task

    assert delegate_task.MAX_GROUP_TASKS == 3
    assert delegate_task.TASK_PROMPT_MAX_CHARS == 20_000
    assert delegate_task.LABEL_PATTERN == r"^[a-z0-9][a-z0-9-]{0,63}$"
    assert child.CHILD_MAX_STEPS == 30
    assert child.CHILD_MAX_TOKENS == 400_000
    assert child.CHILD_MAX_SECONDS == 900.0
    assert group.REPEAT_WARN_AT == 3
    assert group.REPEAT_CANCEL_AT == 5
    assert group.BUDGET_WARN_FRACTION == 0.8
    assert group.STALL_SECONDS == 60.0
    assert group.SUPERVISE_TICK_SECONDS == 0.1
    assert group.STATUS_REFRESH_SECONDS == 1.0
    assert group.DIGEST_REPORT_MAX_CHARS == 4000
    assert forward.QUESTION_POLL_SECONDS == 0.05


def test_agent_orchestrator_limits() -> None:
    from ax_agent.delegation import extensions, threads
    from ax_agent.tools import episode, thread
    from ax_policy import models

    assert extensions.WORKER_PATTERN_TIMEOUT_S == 2.0
    assert extensions.WORKER_PATTERN_SUBJECT_MAX_CHARS == 4096
    assert models.MAX_WORKER_EXTENSION_PATTERNS == 32
    assert threads.THREAD_ANSWER_MAX_CHARS == 8000
    assert threads.THREAD_TICK_SECONDS == 0.1
    assert thread.THREAD_TASK_MAX_CHARS == 20_000
    assert thread.THREAD_LABEL_PATTERN == r"^[a-z0-9][a-z0-9-]{0,63}$"
    assert episode.EPISODE_SUMMARY_MAX_CHARS == 4000
    assert episode.EPISODE_EVIDENCE_MAX == 32
    assert episode.EPISODE_EVIDENCE_MAX_CHARS == 500


def test_agent_executor_limits() -> None:
    from ax_agent import session
    from ax_agent.tasks import worktrees
    from libcommon import trust

    assert worktrees.MAX_GROUP_TASKS == 3
    assert session.SWEEP_WAIT_SECONDS == 2.0
    assert worktrees.CAPTURE_MAX_FILES == 500
    assert worktrees.CAPTURE_FILE_MAX_BYTES == 4 * 1024 * 1024
    assert worktrees.CAPTURE_TASK_MAX_BYTES == 64 * 1024 * 1024
    assert worktrees.OMISSIONS_SHOWN == 20
    assert worktrees.CAPTURE_EXCLUDED_MAX == 1000
    assert worktrees.EOL_DRIFT_SHOWN == 10
    assert worktrees.EOL_PATHS_PER_HASH == 1000
    assert worktrees.BINARY_SNIFF_BYTES == 8000
    assert worktrees.BLOBS_PER_READ == 200
    assert worktrees.LOCK_KEY_CHARS == 16
    assert trust.OWNER_FILE_MAX_BYTES == 64 * 1024


def test_agent_spare_worktree_limits() -> None:
    from ax_agent.tasks import spares, worktrees

    # One group's worth of spares: a project keeps at most three checkouts for reuse.
    assert spares.MAX_SPARE_WORKTREES == worktrees.MAX_GROUP_TASKS == 3
    assert spares.SPARE_MAX_AGE_S == 7 * 24 * 3600
    assert spares.GIT_LINK_MAX_BYTES == 4096


def test_agent_spare_record_limits() -> None:
    from ax_agent.tasks import records

    # A spare's stat record (about 110 bytes a file): bigger ones are neither written
    # nor read, and every file of the spare is hashed instead.
    assert records.RECORD_MAX_BYTES == 64 * 1024 * 1024


def test_agent_apply_limits() -> None:
    from ax_agent.tasks import merge, worktrees
    from ax_agent.tools import apply_task_changes

    assert merge.CONFLICT_SHOWN_CHARS == 4000
    # A rename is named by both its paths: room for a full capture of renames.
    assert apply_task_changes.APPLY_MAX_FILES == 2 * worktrees.CAPTURE_MAX_FILES == 1000


def test_mesh_limits() -> None:
    from ax_mesh import limits, memory_tools, mesh, pg_store, serve, sqlite_store, work_tools

    # The reference catalogue's: results, pages, context lines, message bodies, inboxes.
    assert limits.RESULT_MAX_BYTES == 16 * 1024
    assert limits.READ_TEXT_MAX_BYTES == 12 * 1024
    assert limits.LIST_MAX_RESULTS == limits.WORK_LIST_ITEMS_MAX == 100
    assert limits.STATUS_SEATS_MAX == 20
    assert limits.CONTEXT_LINES_MAX == 5
    assert limits.MESSAGE_BODY_MAX_BYTES == 12 * 1024
    assert limits.INBOX_MAX_WAITING == 1000
    assert limits.DELIVERY_MAX_ATTEMPTS == 5
    # ax-mesh's own.
    assert limits.SEARCH_QUERIES_MAX == 16
    assert limits.QUERY_MAX_CHARS == 512
    assert limits.SEARCH_RANK_MAX == 200
    assert limits.TAGS_MAX == 32
    assert limits.PATH_MAX_CHARS == 512
    assert limits.NOTE_MAX_CHARS == 4000
    assert limits.HANDOFF_ITEMS_MAX == 100
    assert limits.RECORD_TEXT_MAX_BYTES == 256 * 1024
    assert limits.DELIVERY_LEASE_S == 600.0
    assert (limits.DELIVERY_BACKOFF_BASE_S, limits.DELIVERY_BACKOFF_MAX_S) == (2.0, 300.0)
    assert limits.EXECUTION_LEASE_S == 120.0
    assert limits.EXECUTION_LEASE_MAX_S == 24 * 3600.0
    assert limits.WORK_LOG_MAX == 200
    assert limits.PASSIVE_PER_TURN_MAX == 50
    assert memory_tools.LINE_MAX_CHARS == 400
    assert memory_tools.LITERAL_BATCH == 200
    assert work_tools.LIST_BATCH == 500
    assert mesh.TOKEN_BYTES == 32
    assert sqlite_store.BUSY_TIMEOUT_S == 30.0
    assert pg_store.CONNECT_TIMEOUT_S == 10
    assert serve.HTTP_BODY_MAX_BYTES == 1024 * 1024
    assert serve.HTTP_READ_TIMEOUT_S == 30.0


def test_mesh_schedule_limits() -> None:
    from ax_mesh import schedule

    assert schedule.AUTOMATIONS_PER_SEAT_MAX == 50
    assert schedule.EVERY_MIN_S == 60
    assert schedule.DELAY_MAX_S == 366 * 86400
    assert schedule.MISSED_AFTER_S == 300
    assert schedule.UPCOMING_RUNS == 3
    assert schedule.NAME_MAX_CHARS == 128
    assert schedule.INSTRUCTION_MAX_BYTES == 12 * 1024


def test_mesh_runner_limits() -> None:
    from ax_mesh import runner

    assert runner.POLL_INTERVAL_S == 0.25
    assert runner.LISTEN_FALLBACK_S == 5.0
    assert runner.RECONNECT_INTERVAL_S == 1.0
    assert runner.TURN_SHARE_OF_LEASE == 0.9
    assert runner.TURN_STOP_GRACE_S == 10.0
    assert runner.TURN_ERROR_MAX_CHARS == 2000


def test_mesh_fake_harness_limits() -> None:
    from ax_agent.providers import mesh_fake

    assert mesh_fake.SLEEP_MAX_S == 600.0


def test_mesh_connection_limits() -> None:
    from ax_mesh.connections import file_tracker, gateway

    assert gateway.PENDING_LEASE_S == 300.0
    assert gateway.IDEMPOTENCY_KEY_MAX_CHARS == 128
    assert gateway.ERROR_MAX_CHARS == 2000
    assert file_tracker.READ_MAX == 50
    assert file_tracker.TITLE_MAX_CHARS == 512
    assert file_tracker.TEXT_MAX_CHARS == 64 * 1024
    assert file_tracker.RECORD_MAX_BYTES == 256 * 1024


def test_mcp_client_limits() -> None:
    from ax_agent.mcp_servers import client, config, session, tools
    from ax_exec import service
    from ax_policy import models

    assert client.MCP_STARTUP_BUDGET_S == 5.0
    assert client.MCP_CONNECT_TIMEOUT_S == 30.0
    assert client.MCP_CALL_TIMEOUT_S == 120.0
    assert client.MCP_MESSAGE_MAX_BYTES == 4 * 1024 * 1024
    assert client.MCP_INBOUND_MAX_BYTES == 64 * 1024 * 1024
    assert client.MCP_STDERR_LOG_MAX_BYTES == 1024 * 1024
    assert client.MCP_STOP_TIMEOUT_S == 10.0
    assert client.MCP_LIST_PAGES_MAX == 8
    assert client.MCP_READ_BYTES == 64 * 1024
    assert client.REASON_MAX_CHARS == 300
    assert config.MAX_WORKSPACE_FILE_BYTES == 64 * 1024
    assert config.MAX_ARGS == 256
    assert config.MAX_ARG_CHARS == 4096
    assert config.MAX_ENV_NAMES == 64
    assert config.MAX_HEADERS == 32
    assert config.MAX_URL_CHARS == 2048
    assert session.QUESTION_MAX_CHARS == 600
    assert tools.MODEL_TOOL_NAME_MAX_CHARS == 64
    assert tools.MCP_SCHEMA_MAX_BYTES == 32 * 1024
    assert tools.MCP_DESCRIPTION_MAX_CHARS == 2_000
    assert tools.MCP_RESULT_MAX_CHARS == 32_000
    assert tools.MCP_TOOLS_PER_SERVER_MAX == 128
    assert service.SERVICE_EXIT_GRACE_S == 1.0
    assert service.STDERR_LINE_MAX_BYTES == 8 * 1024
    assert service.STDERR_READ_BYTES == 64 * 1024
    assert models.MAX_MCP_SERVERS == 32
    assert models.MAX_MCP_SERVER_NAME_CHARS == 32


def test_agent_provider_catalog_limits() -> None:
    from ax_agent.window import budget

    assert budget.MIN_OUTPUT_TOKENS == 1024


def test_agent_view_image_limits() -> None:
    from ax_agent.tools import view_image
    from ax_agent.window import tokens

    assert view_image.VIEW_IMAGE_MAX_BYTES == 5 * 1024 * 1024
    assert view_image.MAGIC_BYTES == 12
    assert tokens.IMAGE_TOKENS == 1_600


def test_agent_review_ledger_limits() -> None:
    from ax_agent.tasks import review
    from ax_agent.tools import report_finding, triage_finding

    assert report_finding.FINDINGS_MAX == 50
    assert report_finding.FINDING_TITLE_MAX_CHARS == 200
    assert report_finding.FINDING_DETAIL_MAX_CHARS == 2_000
    assert report_finding.FINDING_PATH_MAX_CHARS == 400
    assert triage_finding.TRIAGE_REASON_MAX_CHARS == 1_000
    assert triage_finding.TRIAGE_REFS_MAX == 20
    assert triage_finding.CANDIDATE_REFS_SHOWN == 10
    assert review.REVIEW_ROUNDS_MAX == 2
    assert review.FINDING_SHOWN_MAX_CHARS == 300


def test_agent_web_research_limits() -> None:
    from ax_agent.research import budget, findings, notes, settings, tavily, urls
    from ax_agent.tools import record_source, web_search

    assert settings.MAX_SEARCHES == 20
    assert settings.MAX_EXTRACTS == 20
    assert settings.MAX_CREDITS == 40
    assert settings.MAX_CHARS == 400_000
    assert settings.BASE_URL_MAX_CHARS == 2048
    assert budget.SEARCH_MAX_RESULTS == 8
    assert budget.SNIPPET_MAX_CHARS == 1_000
    assert budget.EXTRACT_MAX_URLS == 5
    assert budget.PAGE_MAX_CHARS == 20_000
    assert budget.EXTRACT_URLS_PER_CREDIT == 5
    assert tavily.TIMEOUT_S == 30.0
    assert tavily.RESPONSE_MAX_BYTES == 4 * 1024 * 1024
    assert tavily.TITLE_MAX_CHARS == 200
    assert tavily.ERROR_DETAIL_MAX_CHARS == 300
    assert urls.URL_MAX_CHARS == 2048
    assert findings.CLAIM_MAX_CHARS == 500
    assert findings.SOURCES_MAX == 8
    assert notes.HORIZON_DAYS == 30
    assert notes.RESEARCH_MAX_BYTES == 8 * 1024
    # The fold keeps RESEARCH.md within the cap project memory gives it whole.
    from ax_slate import memstore

    assert notes.RESEARCH_MAX_BYTES == memstore.RESEARCH_MAX_BYTES
    assert web_search.QUERY_MAX_CHARS == 400
    assert record_source.FINDINGS_PER_TASK_MAX == 30


def test_agent_handoff_limits() -> None:
    from ax_agent.handoff import snapshot
    from ax_policy import models

    assert snapshot.HANDOFF_TRAIL_TAIL == 20
    assert snapshot.HANDOFF_MAX_THREADS == 64
    assert snapshot.HANDOFF_MAX_EPISODES == 128
    assert snapshot.KICKOFF_TEMPLATE_MAX_BYTES == 16 * 1024
    assert snapshot.HANDOFF_FOCUS_MAX_CHARS == 4_000
    assert models.CONTEXT_BUDGET_MIN_TOKENS == 1_000
    assert models.CONTEXT_BUDGET_MAX_TOKENS == 10_000_000


def test_chromium_launcher_limits() -> None:
    from ax_exec import chromium

    assert chromium.CHROMIUM_START_TIMEOUT_S == 20.0
    assert chromium.CHROMIUM_EXIT_GRACE_S == 2.0
    assert chromium.CHROMIUM_LOG_MAX_BYTES == 256 * 1024
    assert chromium.CHROMIUM_LOG_TAIL_BYTES == 2048
    assert chromium.DEVTOOLS_POLL_S == 0.05


def test_browser_flow_limits() -> None:
    from ax_check import browser, flow

    assert flow.MAX_FLOW_STEPS == 50
    assert flow.MAX_SELECTOR_CHARS == 500
    assert flow.MAX_TEXT_CHARS == 2000
    assert flow.MAX_URL_CHARS == 2000
    assert flow.DEFAULT_STEP_TIMEOUT_S == 10.0
    assert flow.MAX_STEP_TIMEOUT_S == 60.0
    assert browser.CDP_CONNECT_TIMEOUT_S == 15.0
    assert browser.MAX_FINDINGS == 50
    assert browser.FINDING_DETAIL_CHARS == 300
    assert browser.OBSERVED_TEXT_CHARS == 2000
    assert browser.OBSERVE_TIMEOUT_S == 2.0
    assert browser.SCREENSHOT_MAX_BYTES == 4 * 1024 * 1024
    assert (browser.VIEWPORT_WIDTH, browser.VIEWPORT_HEIGHT) == (1280, 800)
    assert browser.ABORT_POLL_S == 0.05


def test_browser_flow_tool_limits() -> None:
    from ax_agent.tools import browser_flow

    assert browser_flow.BROWSER_FINDINGS_SHOWN == 20


def test_documents_pack_limits() -> None:
    from ax_agent.artifacts import container, errors

    assert errors.DOC_MAX_BYTES == 64 * 1024 * 1024
    assert errors.ZIP_MAX_ENTRIES == 4_096
    assert errors.ZIP_ENTRY_MAX_BYTES == 32 * 1024 * 1024
    assert errors.ZIP_TOTAL_MAX_BYTES == 128 * 1024 * 1024
    assert errors.ZIP_NAME_MAX_CHARS == 512
    assert errors.XML_MAX_BYTES == errors.ZIP_ENTRY_MAX_BYTES
    assert errors.XML_MAX_DEPTH == 256
    assert errors.SUMMARY_TEXT_MAX_CHARS == 100_000
    assert errors.PDF_MAX_PAGES == 2_000
    assert errors.PDF_READ_BUDGET_S == 20.0
    assert container.FIXED_ZIP_TIME == (1980, 1, 1, 0, 0, 0)
    assert container.FIXED_ZIP_LEVEL == 6


def test_documents_render_limits() -> None:
    from ax_agent.artifacts import docspec, docx_render, errors, pdf, validate
    from ax_agent.tools import render_document

    assert docspec.DOCSPEC_MAX_BYTES == 2 * 1024 * 1024
    assert docspec.DOCSPEC_MAX_BLOCKS == 5_000
    assert docspec.DOCSPEC_TEXT_MAX_CHARS == 20_000
    assert docspec.TABLE_MAX_CELLS == 10_000
    assert errors.IMAGE_MAX_BYTES == 10 * 1024 * 1024
    assert docx_render.DEFAULT_IMAGE_WIDTH_CM == 15.0
    assert pdf.PRINT_TIMEOUT_MS == 30_000
    assert validate.WIDE_TABLE_COLUMNS == 6
    assert validate.WIDE_IMAGE_CM == 16.0
    assert render_document.RENDER_MAX_IMAGES == 100


def test_documents_inspect_limits() -> None:
    from ax_agent.artifacts import raster
    from ax_agent.tools import inspect_pages, view_image

    assert raster.PAGE_IMAGE_MAX_BYTES == 1024 * 1024
    # A page image must fit the image channel it rides.
    assert raster.PAGE_IMAGE_MAX_BYTES <= view_image.VIEW_IMAGE_MAX_BYTES
    assert raster.RASTER_START_SCALE == 1.5
    assert raster.RASTER_MIN_SCALE == 0.25
    assert raster.RASTER_SCALE_STEP == 0.7
    assert raster.RASTER_MAX_SIDE_PX == 2_000
    assert raster.PNG_LEVEL == 6
    assert inspect_pages.INSPECT_MAX_PAGES == 6
