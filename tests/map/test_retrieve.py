"""Retrieval: ranked hits whose excerpts are read live, safely, and say what changed."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest
from map.stdlib_snapshot import build_snapshot

from ax_map.model import Coverage, FileEntry, Snapshot
from ax_map.retrieve import (
    EXCERPT_LINE_MAX_CHARS,
    EXCERPT_READ_MAX_BYTES,
    RETRIEVE_LIMIT_MAX,
    retrieve,
)
from libcommon.errors import UsageError

ENGINE = "\n".join(
    [
        '"""The engine."""',
        "",
        "import os",
        "",
        "",
        "class EngineState:",
        "    running = False",
        "",
        "",
        "def start_engine(state):",
        "    state.running = True",
        "    return state",
        "",
        "",
        "def stop_engine(state):",
        "    state.running = False",
    ]
)


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)


@pytest.fixture
def indexed(workspace: Path) -> Snapshot:
    write(
        workspace,
        {
            "pkg/__init__.py": "from .engine import start_engine\n",
            "pkg/engine.py": ENGINE,
            "pkg/cli.py": "from .engine import start_engine\n\ndef main():\n    start_engine(0)\n",
            "docs/notes.py": "NOTES = 'engine notes'\n",
        },
    )
    return build_snapshot(workspace)


def test_a_hit_carries_signals_symbols_and_live_lines(workspace: Path, indexed: Snapshot) -> None:
    hits = retrieve(indexed, workspace, "start_engine")
    hit = hits[0]
    assert hit.path == "pkg/engine.py"
    assert "defines 'start_engine' (query)" in hit.signals
    assert [(s.name, s.line) for s in hit.symbols][:1] == [("start_engine", 10)]
    assert hit.excerpt == [
        "8: ",
        "9: ",
        "10: def start_engine(state):",
        "11:     state.running = True",
        "12:     return state",
        "13: ",
        "14: ",
    ]
    assert all(h.path != "docs/notes.py" for h in hits)


def test_a_phrase_finds_the_file(workspace: Path, indexed: Snapshot) -> None:
    assert retrieve(indexed, workspace, "stop the engine")[0].path == "pkg/engine.py"
    assert retrieve(indexed, workspace, "engine state")[0].symbols[0].name == "EngineState"


def test_a_file_changed_since_the_index_is_said_and_found_again(
    workspace: Path, indexed: Snapshot
) -> None:
    (workspace / "pkg/engine.py").write_text("# one\n# two\n# three\n" + ENGINE)
    hit = retrieve(indexed, workspace, "start_engine")[0]
    assert "changed since the index was built; lines found again by name" in hit.signals
    assert hit.symbols[0].line == 13
    assert "13: def start_engine(state):" in hit.excerpt
    (workspace / "pkg/engine.py").write_text(ENGINE.replace("start_engine", "begin_engine"))
    hit = retrieve(indexed, workspace, "start_engine")[0]
    assert "'start_engine' is no longer found in it" in hit.signals
    assert "start_engine" not in [s.name for s in hit.symbols]
    assert f"{hit.symbols[0].line}: " in "\n".join(hit.excerpt)


def test_a_deleted_file_is_said_never_a_traceback(workspace: Path, indexed: Snapshot) -> None:
    (workspace / "pkg/engine.py").unlink()
    hit = retrieve(indexed, workspace, "start_engine")[0]
    assert hit.path == "pkg/engine.py"
    assert "deleted since the index was built; no excerpt" in hit.signals
    assert hit.excerpt == []


def test_a_folder_swapped_for_a_link_out_of_the_workspace_is_not_read(
    workspace: Path, indexed: Snapshot, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    write(outside, {"engine.py": "def start_engine():\n    SECRET_OUTSIDE = 1\n"})
    (workspace / "pkg/engine.py").unlink()
    for name in os.listdir(workspace / "pkg"):
        (workspace / "pkg" / name).unlink()
    (workspace / "pkg").rmdir()
    (workspace / "pkg").symlink_to(outside)
    hits = retrieve(indexed, workspace, "start_engine")
    engine = next(h for h in hits if h.path == "pkg/engine.py")
    assert any(s.startswith("not read: pkg is a symbolic link") for s in engine.signals)
    assert engine.excerpt == []
    assert not any("SECRET_OUTSIDE" in line for h in hits for line in h.excerpt)


def test_a_file_swapped_for_a_link_is_not_followed(
    workspace: Path, indexed: Snapshot, tmp_path: Path
) -> None:
    target = tmp_path / "elsewhere.py"
    target.write_text("def start_engine():\n    SECRET_OUTSIDE = 1\n")
    (workspace / "pkg/engine.py").unlink()
    (workspace / "pkg/engine.py").symlink_to(target)
    hit = next(h for h in retrieve(indexed, workspace, "start_engine") if h.path == "pkg/engine.py")
    assert any("symbolic link" in s for s in hit.signals)
    assert hit.excerpt == []


def test_a_fifo_or_a_folder_in_its_place_is_not_read(workspace: Path, indexed: Snapshot) -> None:
    (workspace / "pkg/engine.py").unlink()
    os.mkfifo(workspace / "pkg/engine.py")
    hit = retrieve(indexed, workspace, "start_engine")[0]
    assert "no longer a regular file; no excerpt" in hit.signals
    (workspace / "pkg/engine.py").unlink()
    (workspace / "pkg/engine.py").mkdir()
    hit = retrieve(indexed, workspace, "start_engine")[0]
    assert "no longer a regular file; no excerpt" in hit.signals


def test_a_file_now_binary_or_too_large_is_not_excerpted(
    workspace: Path, indexed: Snapshot
) -> None:
    (workspace / "pkg/engine.py").write_bytes(ENGINE.encode() + b"\0\1\2")
    assert "binary now; no excerpt" in retrieve(indexed, workspace, "start_engine")[0].signals
    (workspace / "pkg/engine.py").write_bytes(b"#" * (EXCERPT_READ_MAX_BYTES + 1))
    hit = retrieve(indexed, workspace, "start_engine")[0]
    assert "larger than 1 MiB now; no excerpt" in hit.signals
    assert hit.excerpt == []


def test_a_file_the_index_only_listed_is_never_read(workspace: Path, indexed: Snapshot) -> None:
    write(workspace, {"package.json": '{"name": "engine", "token": "SHOULD_NOT_BE_READ"}'})
    listed = FileEntry("package.json", 60, 1, None, "listed", skip="too large")
    snap = replace(indexed, files=[*indexed.files, listed])
    hit = next(h for h in retrieve(snap, workspace, "package.json") if h.path == "package.json")
    assert "no excerpt: too large" in hit.signals
    assert hit.excerpt == []


def test_excerpts_are_redacted_escaped_and_clipped(workspace: Path) -> None:
    key = "sk-ant-api03-" + "a" * 40
    write(
        workspace,
        {
            "conf.py": "\n".join(
                [
                    f'API_TOKEN = "{key}"',
                    "BANNER = '\x1b[2Jcleared'",
                    "def load_settings():",
                    "    return 'x' * 1" + "0" * 300,
                ]
            )
        },
    )
    snap = build_snapshot(workspace)
    excerpt = retrieve(snap, workspace, "load_settings")[0].excerpt
    text = "\n".join(excerpt)
    assert key not in text and "[REDACTED" in text
    assert "\\x1b[2Jcleared" in text and "\x1b" not in text
    assert all(len(line.split(": ", 1)[1]) <= EXCERPT_LINE_MAX_CHARS for line in excerpt)
    assert excerpt[-1].endswith("…")


def test_a_private_key_block_is_hidden_even_from_inside(workspace: Path) -> None:
    body = ["MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" + str(i) for i in range(8)]
    lines = [
        "KEY = '''",
        "-----BEGIN PRIVATE KEY-----",
        *body,
        "-----END PRIVATE KEY-----",
        "'''",
        "def after_the_key():",
        "    pass",
    ]
    write(workspace, {"keys.py": "\n".join(lines)})
    snap = build_snapshot(workspace)
    excerpt = retrieve(snap, workspace, "after_the_key")[0].excerpt
    assert excerpt[:3] == ["11: [REDACTED:private-key]", "12: '''", "13: def after_the_key():"]
    assert not any("MIIE" in line for line in excerpt)
    lines.insert(2, "def inside_the_key():")
    write(workspace, {"keys.py": "\n".join(lines)})
    snap = build_snapshot(workspace)
    excerpt = retrieve(snap, workspace, "inside_the_key")[0].excerpt
    assert not any("MIIE" in line for line in excerpt)


def test_text_that_is_not_utf8_is_shown_replaced(workspace: Path) -> None:
    write(workspace, {"latin.py": b"def caf\xe9_menu():\n    return '\xe9'\n"})
    snap = build_snapshot(workspace)
    hit = retrieve(snap, workspace, "latin")[0]
    assert hit.path == "latin.py"
    assert "\ufffd" in "\n".join(hit.excerpt)


def test_bad_requests_are_refused(workspace: Path, indexed: Snapshot) -> None:
    with pytest.raises(UsageError, match="needs a query"):
        retrieve(indexed, workspace, "  ")
    with pytest.raises(UsageError, match="out of range"):
        retrieve(indexed, workspace, "engine", limit=0)
    with pytest.raises(UsageError, match="out of range"):
        retrieve(indexed, workspace, "engine", limit=RETRIEVE_LIMIT_MAX + 1)
    with pytest.raises(UsageError, match="characters long"):
        retrieve(indexed, workspace, "engine " * 1000)


def test_a_path_match_shows_the_files_top_symbols(workspace: Path, indexed: Snapshot) -> None:
    hit = retrieve(indexed, workspace, "pkg/cli.py")[0]
    assert hit.path == "pkg/cli.py"
    assert "its path is the query" in hit.signals
    assert [s.name for s in hit.symbols] == ["main"]
    assert "3: def main():" in hit.excerpt


def test_nothing_matching_is_no_hits(workspace: Path, indexed: Snapshot) -> None:
    assert retrieve(indexed, workspace, "zzqqx_unknown") == []


def test_an_empty_snapshot_has_no_hits(workspace: Path) -> None:
    empty = Snapshot(str(workspace), [], [], {}, [], Coverage(total=0, indexed=0), git=True)
    assert retrieve(empty, workspace, "anything") == []


def test_a_touched_file_ranks_first_among_equal_matches(workspace: Path) -> None:
    write(workspace, {f"m{i}.py": "def shared_helper():\n    pass\n" for i in range(3)})
    snap = build_snapshot(workspace)
    assert retrieve(snap, workspace, "shared_helper")[0].path == "m0.py"
    hits = retrieve(snap, workspace, "shared_helper", touched=["m2.py"])
    assert hits[0].path == "m2.py"
    assert "touched this session" in hits[0].signals
