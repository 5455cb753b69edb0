"""The index: cold and warm builds, budgets that converge, atomic writes, bad indexes."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from map.maptest import (
    age_files,
    ax_map,
    build_json,
    commit_all,
    git,
    make_repo,
    needs_git,
    write,
)

from ax_map import extract, treesit
from ax_map import inventory as inventory_module
from ax_map.build import build_index
from ax_map.index import (
    INDEX_NAME,
    LOCK_NAME,
    IndexUnavailable,
    current_snapshot,
    index_stats,
    load_snapshot,
    open_reader,
)
from ax_map.model import FileEntry
from libcommon import jsonio
from libcommon.locks import flock_lock
from libcommon.paths import StateLayout, state_layout

pytestmark = needs_git


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo")
    write(
        repo,
        {
            "app/__init__.py": "",
            "app/core.py": "from app.util import helper\n\ndef run():\n    return helper()\n",
            "app/util.py": "def helper():\n    return 1\n",
            "web/main.js": "import { x } from './lib.js';\nexport function main() { return x; }\n",
            "web/lib.js": "export const x = 1;\n",
            "README.md": "# project\n",
            ".env": "TOKEN=1\n",
        },
    )
    commit_all(repo)
    age_files(repo)
    return repo


@pytest.fixture
def layout(repo: Path) -> StateLayout:
    return state_layout(repo)


def _index(layout: StateLayout) -> Path:
    return layout.map_dir / INDEX_NAME


def test_a_cold_build_then_a_warm_one_that_changes_nothing(layout: StateLayout) -> None:
    cold = build_index(layout)
    assert cold.written and cold.rebuilt == "no index yet"
    assert cold.coverage.indexed == 5
    assert cold.coverage.listed == {"no grammar": 1, "secret-named": 1}
    assert cold.parsed == 5
    inode = _index(layout).stat().st_ino
    warm = build_index(layout)
    assert (warm.written, warm.extracted, warm.reused, warm.rebuilt) == (False, 0, 5, None)
    assert _index(layout).stat().st_ino == inode
    snapshot = load_snapshot(layout)
    assert ("app/core.py", "app/util.py") in snapshot.imports
    assert ("web/main.js", "web/lib.js") in snapshot.imports
    assert {s.name for s in snapshot.symbols if s.path == "app/util.py"} == {"helper"}
    assert "helper" in snapshot.references["app/core.py"]
    assert snapshot.git
    assert snapshot.coverage.total == 7 and not snapshot.coverage.partial


def test_a_warm_build_reads_only_what_changed(layout: StateLayout, repo: Path) -> None:
    build_index(layout)
    write(repo, {"app/util.py": "def helper():\n    return 2\n\ndef extra():\n    pass\n"})
    git(repo, "rm", "-q", "web/lib.js")
    write(repo, {"app/new.py": "def fresh(): pass\n"})
    age_files(repo)
    warm = build_index(layout)
    assert (warm.extracted, warm.removed) == (2, 1)
    snapshot = load_snapshot(layout)
    assert {s.name for s in snapshot.symbols if s.path == "app/util.py"} == {"helper", "extra"}
    assert "web/lib.js" not in {f.path for f in snapshot.files}
    assert ("web/main.js", "web/lib.js") not in snapshot.imports
    assert {f.path for f in snapshot.files if f.changed} == {"app/util.py", "app/new.py"}


def test_a_commit_moves_only_the_flags(layout: StateLayout, repo: Path) -> None:
    write(repo, {"app/util.py": "def helper():\n    return 3\n"})
    age_files(repo)
    build_index(layout)
    assert {f.path for f in load_snapshot(layout).files if f.changed} == {"app/util.py"}
    commit_all(repo)
    after = build_index(layout)
    assert after.written and after.extracted == 0
    assert {f.path for f in load_snapshot(layout).files if f.changed} == set()


def test_an_edit_in_the_same_clock_tick_is_still_seen(layout: StateLayout, repo: Path) -> None:
    # An edit that keeps the size and lands in the same mtime as the build's listing
    # (a coarse clock, a fast editor): the next build must read the file again.
    target = repo / "app" / "util.py"
    stamp = time.time_ns()
    target.write_text("def helper():\n    return 1\n")
    os.utime(target, ns=(stamp, stamp))
    build_index(layout)
    target.write_text("def hidden():\n    return 1\n")
    os.utime(target, ns=(stamp, stamp))
    build_index(layout)
    names = {s.name for s in load_snapshot(layout).symbols if s.path == "app/util.py"}
    assert names == {"hidden"}


def _slow_batches(monkeypatch: pytest.MonkeyPatch, *steps: str) -> Any:
    """One file a batch, each batch of ``steps`` (of every step when none is named) 0.1 s
    slower; the real ``extract_batch`` is returned, to put back."""
    monkeypatch.setattr(extract, "BATCH_MAX_FILES", 1)
    real = extract.extract_batch

    def slow(
        workspace: str, step: extract.Step, jobs: list[extract.Job], deadline: float
    ) -> list[extract.Outcome]:
        if not steps or step in steps:
            time.sleep(0.1)
        return real(workspace, step, jobs, deadline)

    monkeypatch.setattr(extract, "extract_batch", slow)
    return real


def test_a_budget_yields_an_honest_partial_index_that_the_next_build_completes(
    layout: StateLayout, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(repo, {f"pkg/m{i:02d}.py": f"def f{i}(): pass\n" for i in range(30)})
    age_files(repo)
    real = _slow_batches(monkeypatch)
    first = build_index(layout, budget_s=1.5, workers=1)
    assert first.coverage.partial
    assert 0 < first.coverage.pending < 35
    assert first.coverage.indexed + first.coverage.pending == 35
    assert any("first tier stopped: the wall budget ran out" in n for n in first.notes)
    pending = {f.path for f in load_snapshot(layout).files if f.status == "pending"}
    assert len(pending) == first.coverage.pending
    monkeypatch.setattr(extract, "extract_batch", real)
    second = build_index(layout)
    assert not second.coverage.partial
    assert second.extracted == first.coverage.pending
    assert second.parsed == 35


def test_tree_sitter_fills_in_across_builds(
    layout: StateLayout, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = treesit.parse

    def slow(language: str, data: bytes) -> object:
        time.sleep(0.6)
        return real(language, data)

    monkeypatch.setattr(treesit, "parse", slow)
    first = build_index(layout, budget_s=2.0, workers=1)
    assert first.coverage.indexed == 5 and not first.coverage.partial
    assert 0 < first.first_tier_only < 5
    assert any(n.startswith("tree-sitter tier stopped") for n in first.notes)
    monkeypatch.setattr(treesit, "parse", real)
    second = build_index(layout)
    assert (second.first_tier_only, second.parsed, second.extracted) == (0, 5, 0)


def test_every_files_structure_comes_before_any_files_references(layout: StateLayout) -> None:
    phases: list[str] = []
    built = build_index(layout, progress=lambda phase, done, total: phases.append(phase))
    assert built.references_pending == 0 and built.parsed == 5
    # Each phase reports once before its first file and again as files are done.
    order = [phase for i, phase in enumerate(phases) if i == 0 or phases[i - 1] != phase]
    assert order == ["scan", "references", "parse"]
    assert set(built.timings_ms) >= {"scan", "references", "parse"}


def test_references_that_the_budget_did_not_reach_are_filled_in_by_the_next_build(
    layout: StateLayout, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(
        repo,
        {
            f"pkg/m{i:02d}.py": f"from pkg.m{(i + 1) % 30:02d} import f{(i + 1) % 30}\n\n"
            f"def f{i}():\n    return g{i}()\n"
            for i in range(30)
        },
    )
    age_files(repo)
    real = _slow_batches(monkeypatch, "references")
    first = build_index(layout, budget_s=2.0, workers=1)
    # Every file has its definitions; the references and imports stopped part of the way.
    assert first.coverage.indexed == 35 and not first.coverage.partial
    assert 0 < first.references_pending < 35
    assert first.parsed == 0
    assert any("first tier's references stopped: the wall budget" in n for n in first.notes)
    snapshot = load_snapshot(layout)
    assert {s.name for s in snapshot.symbols} >= {f"f{i}" for i in range(30)}
    without = [f.path for f in snapshot.files if f.status == "indexed"]
    without = [path for path in without if path not in snapshot.references]
    assert len(without) == first.references_pending
    importers = {source for source, _ in snapshot.imports}
    assert importers and not importers & set(without)
    stats = index_stats(layout)
    assert stats.references_pending == first.references_pending

    monkeypatch.setattr(extract, "extract_batch", real)
    second = build_index(layout)
    assert (second.extracted, second.references_pending, second.parsed) == (0, 0, 35)
    snapshot = load_snapshot(layout)
    assert snapshot.references["pkg/m07.py"] >= {"g7"}
    assert {(f"pkg/m{i:02d}.py", f"pkg/m{(i + 1) % 30:02d}.py") for i in range(30)} <= set(
        snapshot.imports
    )


def test_a_file_changed_after_its_structure_was_read_gets_no_stale_references(
    layout: StateLayout, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = extract.extract_batch
    edited = "def renamed():\n    return other_name()\n"

    def edit_first(
        workspace: str, step: extract.Step, jobs: list[extract.Job], deadline: float
    ) -> list[extract.Outcome]:
        if step == "references":
            (repo / "app/core.py").write_text(edited)
        return real(workspace, step, jobs, deadline)

    monkeypatch.setattr(extract, "extract_batch", edit_first)
    first = build_index(layout)
    # Its definitions are of the first read; the second read found another file, so it
    # has no references or imports and is not parsed: the next build reads it whole.
    assert first.references_pending == 1
    snapshot = load_snapshot(layout)
    assert "app/core.py" not in snapshot.references
    assert not [edge for edge in snapshot.imports if edge[0] == "app/core.py"]
    assert {s.name for s in snapshot.symbols if s.path == "app/core.py"} == {"run"}
    monkeypatch.setattr(extract, "extract_batch", real)
    second = build_index(layout)
    assert (second.extracted, second.references_pending) == (1, 0)
    snapshot = load_snapshot(layout)
    assert {s.name for s in snapshot.symbols if s.path == "app/core.py"} == {"renamed"}
    assert "other_name" in snapshot.references["app/core.py"]


def test_a_cold_build_reads_files_before_the_last_one_is_classified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two batches' worth of files: the first batch is extracted while the rest still
    # wait for their lstat, instead of after the whole inventory.
    ws = make_repo(tmp_path / "ws")
    count = extract.BATCH_MAX_FILES + 10
    write(ws, {f"m{i:03}.py": f"def f{i}():\n    return {i}\n" for i in range(count)})
    commit_all(ws)
    events: list[str] = []
    classify = inventory_module._Classifier.__call__
    extract_batch = extract.extract_batch

    def classify_noting(self: inventory_module._Classifier, item: Any) -> FileEntry:
        events.append("classified")
        return classify(self, item)

    def extract_noting(*args: Any, **kwargs: Any) -> Any:
        events.append("extracted")
        return extract_batch(*args, **kwargs)

    monkeypatch.setattr(inventory_module._Classifier, "__call__", classify_noting)
    monkeypatch.setattr(extract, "extract_batch", extract_noting)
    layout = StateLayout(root=tmp_path / "state", workspace=ws)
    result = build_index(layout, workers=1)
    assert result.coverage.indexed == count and result.extracted == count
    assert events.count("classified") == count
    assert events.index("extracted") < len(events) - 1 - events[::-1].index("classified")
    symbols = {s.name for s in load_snapshot(layout).symbols}
    assert symbols == {f"f{i}" for i in range(count)}


def test_a_file_deleted_between_listing_and_reading_is_a_counted_skip(
    layout: StateLayout, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    classify = inventory_module._Classifier.__call__

    def classify_then_delete(self: inventory_module._Classifier, item: Any) -> FileEntry:
        # Its lstat found it; the read finds it gone (a cold build reads some files
        # before the last ones are classified: the deletion follows this file's lstat).
        entry = classify(self, item)
        if entry.path == "app/util.py":
            (repo / "app" / "util.py").unlink()
        return entry

    monkeypatch.setattr(inventory_module._Classifier, "__call__", classify_then_delete)
    result = build_index(layout)
    assert result.coverage.listed.get("vanished") == 1
    entry = {f.path: f for f in load_snapshot(layout).files}["app/util.py"]
    assert (entry.status, entry.skip) == ("listed", "vanished")
    monkeypatch.setattr(inventory_module._Classifier, "__call__", classify)
    after = build_index(layout)
    assert after.coverage.listed.get("deleted") == 1


def test_a_secret_named_file_is_never_read(layout: StateLayout, repo: Path) -> None:
    write(repo, {".env.py": "def leaked_secret():\n    return TOKEN_VALUE\n"})
    build_index(layout)
    snapshot = load_snapshot(layout)
    assert not any(s.name == "leaked_secret" for s in snapshot.symbols)
    assert ".env.py" not in snapshot.references
    assert {f.path: f.skip for f in snapshot.files}[".env.py"] == "secret-named"


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda p: p.write_bytes(b"this is not a database" * 100), "corrupt"),
        (lambda p: p.write_bytes(p.read_bytes()[:1000]), "corrupt"),
        (lambda p: _set_version(p, "99"), "newer"),
        (lambda p: _set_version(p, "0"), "older"),
    ],
)
def test_a_bad_index_is_refused_by_readers_and_rebuilt_cold(
    layout: StateLayout, damage: object, reason: str
) -> None:
    build_index(layout)
    path = _index(layout)
    damage(path)  # type: ignore[operator]
    with pytest.raises(IndexUnavailable) as refused:
        load_snapshot(layout)
    assert refused.value.reason == reason
    assert "ax-map build" in (refused.value.hint or "")
    rebuilt = build_index(layout)
    assert rebuilt.rebuilt is not None and "rebuilt from nothing" in rebuilt.rebuilt
    assert rebuilt.extracted == 5
    assert len(load_snapshot(layout).files) == 7


def _set_version(path: Path, version: str) -> None:
    connection = sqlite3.connect(path)
    with connection:
        connection.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (version,))
    connection.close()


def test_a_reader_keeps_its_snapshot_while_a_build_replaces_the_index(
    layout: StateLayout, repo: Path
) -> None:
    build_index(layout)
    reader = open_reader(_index(layout))
    try:
        before = reader.execute("SELECT count(*) FROM files").fetchone()[0]
        write(repo, {f"more/m{i}.py": "x = 1\n" for i in range(5)})
        age_files(repo)
        build_index(layout)
        assert reader.execute("SELECT count(*) FROM files").fetchone()[0] == before
        assert reader.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    finally:
        reader.close()
    assert len(load_snapshot(layout).files) == before + 5


def test_leftovers_of_a_killed_build_are_removed(layout: StateLayout) -> None:
    build_index(layout)
    leftover = layout.map_dir / ".index-deadbeef.tmp"
    leftover.write_bytes(b"half a database")
    build_index(layout)
    assert not leftover.exists()


def test_readers_need_no_lock(layout: StateLayout) -> None:
    build_index(layout)
    with flock_lock(layout.map_dir / LOCK_NAME):
        assert len(load_snapshot(layout).files) == 7


def test_a_second_build_that_cannot_get_the_lock_is_fenced(layout: StateLayout, repo: Path) -> None:
    build_index(layout)
    inode = _index(layout).stat().st_ino
    with flock_lock(layout.map_dir / LOCK_NAME):
        done = ax_map("build", "-C", str(repo), "--budget-seconds", "0.3")
    assert done.returncode == 4, done.stderr
    assert "map build lock" in done.stderr
    assert done.stdout == ""
    assert _index(layout).stat().st_ino == inode


def test_two_builds_at_once_both_finish_and_the_index_is_whole(repo: Path) -> None:
    write(repo, {f"bulk/m{i:03d}.py": f"def f{i}(): pass\n" for i in range(300)})
    age_files(repo)
    runs = [
        subprocess.Popen(
            [*_script(), "build", "-C", str(repo)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(2)
    ]
    results = [(run.wait(timeout=120), run.stdout.read(), run.stderr.read()) for run in runs]  # type: ignore[union-attr]
    for code, _out, err in results:
        assert code == 0, err
    summaries = [jsonio.loads(out) for _code, out, _err in results]
    assert sorted(s["extracted"] for s in summaries) == [0, 305]
    snapshot = load_snapshot(state_layout(repo))
    assert len(snapshot.files) == 307
    assert sum(1 for f in snapshot.files if f.status == "indexed") == 305


def _script() -> list[str]:
    from axtest import tool_path

    return [tool_path("map")]


def test_the_cap_over_two_hundred_thousand_files_is_counted_and_fast(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "big")
    blob = git(repo, "hash-object", "-w", "--stdin", input=b"x = 1\n").decode().strip()
    entries = "".join(
        f"100644 {blob} 0\td{i // 1000:03d}/s{i % 1000 // 100}/f{i}.py\n" for i in range(200_000)
    )
    git(repo, "update-index", "--index-info", input=entries.encode())
    started = time.monotonic()
    summary = build_json(repo, "--budget-seconds", "60")
    elapsed = time.monotonic() - started
    coverage = summary["coverage"]
    assert isinstance(coverage, dict)
    assert coverage["total"] == 200_000
    assert coverage["capped"] == 180_000
    assert coverage["listed"] == {"deleted": 20_000}
    assert summary["state"] == "partial"
    assert elapsed < 20, elapsed


def test_an_index_that_breaks_under_an_update_is_rebuilt_cold(
    layout: StateLayout, repo: Path
) -> None:
    build_index(layout)
    path = _index(layout)
    connection = sqlite3.connect(path)
    (page_size,) = connection.execute("PRAGMA page_size").fetchone()
    (root,) = connection.execute(
        "SELECT rootpage FROM sqlite_master WHERE name = 'symbols'"
    ).fetchone()
    connection.close()
    with open(path, "r+b") as handle:
        handle.seek((root - 1) * page_size)
        handle.write(b"\xff" * page_size)
    write(repo, {"app/util.py": "def helper():\n    return 42\n"})
    age_files(repo)
    rebuilt = build_index(layout)
    assert rebuilt.rebuilt is not None and "broke when updated" in rebuilt.rebuilt
    assert rebuilt.extracted == 5
    names = {s.name for s in load_snapshot(layout).symbols if s.path == "app/util.py"}
    assert names == {"helper"}
    assert not list(layout.map_dir.glob(".index-*.tmp"))


def test_a_file_tree_sitter_cannot_parse_keeps_its_first_tier_and_is_not_retried(
    layout: StateLayout, repo: Path
) -> None:
    write(repo, {"zz/runaway.py": "def still_found(): pass\n" + ("/*" * 90 + "\n") * 170})
    age_files(repo)
    first = build_index(layout)
    assert not first.coverage.partial
    assert (first.parse_failed, first.first_tier_only, first.parsed) == (1, 1, 5)
    assert any(
        "could not parse 1 file(s)" in note and "zz/runaway.py" in note for note in first.notes
    )
    names = {s.name for s in load_snapshot(layout).symbols if s.path == "zz/runaway.py"}
    assert names == {"still_found"}
    again = build_index(layout)
    assert (again.written, again.parse_failed) == (False, 1)


def test_the_current_snapshot_is_kept_while_the_index_is_the_same(
    repo: Path, layout: StateLayout
) -> None:
    with pytest.raises(IndexUnavailable):
        current_snapshot(layout)
    build_index(layout)
    first = current_snapshot(layout)
    assert current_snapshot(layout) is first
    # A build with nothing changed leaves the index file as it was, so nothing is read.
    assert not build_index(layout).written
    assert current_snapshot(layout) is first
    write(repo, {"app/more.py": "def another():\n    return 2\n"})
    age_files(repo)
    assert build_index(layout).written
    second = current_snapshot(layout)
    assert second is not first
    assert "app/more.py" in {entry.path for entry in second.files}


def test_the_writer_buffers_rows_but_every_statement_sees_them(tmp_path: Path) -> None:
    from ax_map.index import SCHEMA_VERSION, Writer
    from ax_map.model import FileEntry

    def entry(path: str, status: str = "indexed") -> FileEntry:
        return FileEntry(path, 10, 20, "python", status)  # type: ignore[arg-type]

    writer = Writer(tmp_path, None)
    for name in ("a.py", "b.py"):
        writer.put_file(name, entry(name), 1)
        writer.put_content(name, '[["f","function",1]]', "g h", "os\nsys")
    assert writer.specs() == {"a.py": ("os", "sys"), "b.py": ("os", "sys")}
    writer.set_flags("a.py", False, True)
    writer.clear_content("b.py")
    writer.put_content("b.py", '[["k","class",2],["m","method",3]]', "z", "")
    writer.remove("a.py")
    writer.put_file("c.py", entry("c.py", "pending"), 0)
    writer.set_meta({"schema_version": str(SCHEMA_VERSION)})
    writer.commit(tmp_path / INDEX_NAME)
    with closing(open_reader(tmp_path / INDEX_NAME)) as db:
        assert db.execute("SELECT path, status FROM files ORDER BY 1").fetchall() == [
            (b"b.py", "indexed"),
            (b"c.py", "pending"),
        ]
        # A file's definitions are one row, the JSON array as it came.
        symbols = db.execute("SELECT path, definitions FROM symbols").fetchall()
        assert symbols == [(b"b.py", '[["k","class",2],["m","method",3]]')]
        assert db.execute("SELECT path, names FROM refs").fetchall() == [(b"b.py", "z")]
        assert db.execute("SELECT count(*) FROM specs").fetchone() == (0,)


def test_a_snapshot_lists_each_files_definitions_by_line_then_name(tmp_path: Path) -> None:
    from ax_map.index import SCHEMA_VERSION, Writer
    from ax_map.model import FileEntry, Symbol

    layout = StateLayout(root=tmp_path / "state", workspace=tmp_path)
    layout.map_dir.mkdir(parents=True)
    writer = Writer(layout.map_dir, None)
    for name in ("b.py", "a.py"):
        writer.put_file(name, FileEntry(name, 10, 20, "python", "indexed"), 2)
        writer.put_content(name, '[["z","function",3],["y","class",1],["x","method",3]]', "", "")
    writer.set_meta({"schema_version": str(SCHEMA_VERSION)})
    writer.commit(layout.map_dir / INDEX_NAME)
    assert load_snapshot(layout).symbols == [
        Symbol(path, name, kind, line)
        for path in ("a.py", "b.py")
        for name, kind, line in (("y", "class", 1), ("x", "method", 3), ("z", "function", 3))
    ]
    assert index_stats(layout).symbols == 6


def test_definitions_that_are_not_json_rows_make_the_index_corrupt(tmp_path: Path) -> None:
    from ax_map.index import SCHEMA_VERSION, Writer
    from ax_map.model import FileEntry

    for stored in ("[[", '[["f","function"]]', '{"f": 1}', '[{"a": 1, "b": 2, "c": 3}]'):
        layout = StateLayout(root=tmp_path / stored.encode().hex(), workspace=tmp_path)
        layout.map_dir.mkdir(parents=True)
        writer = Writer(layout.map_dir, None)
        writer.put_file("a.py", FileEntry("a.py", 10, 20, "python", "indexed"), 1)
        writer.put_content("a.py", stored, "", "")
        writer.set_meta({"schema_version": str(SCHEMA_VERSION)})
        writer.commit(layout.map_dir / INDEX_NAME)
        with pytest.raises(IndexUnavailable) as caught:
            load_snapshot(layout)
        assert caught.value.reason == "corrupt", stored
