"""ax-map through its installed script and its in-process CLI."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from axtest import CliRunner, tool_path
from map.maptest import age_files, ax_map, build_json, commit_all, make_repo, needs_git, write

from ax_map.build import BuildResult
from ax_map.cli import main
from ax_map.model import Coverage
from ax_map.models import BuildSummary
from ax_map.pathtext import unquote_path
from libcommon import jsonio
from libcommon.paths import state_layout

pytestmark = needs_git


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo")
    write(repo, {"a.py": "def alpha(): pass\n", "b.js": "export function beta() {}\n"})
    commit_all(repo)
    age_files(repo)
    return repo


def test_build_prints_one_json_summary(repo: Path) -> None:
    summary = build_json(repo)
    assert summary["state"] == "complete"
    assert summary["git"] is True
    assert summary["workspace"] == str(repo)
    assert summary["coverage"] == {
        "total": 2,
        "indexed": 2,
        "listed": {},
        "pending": 0,
        "capped": 0,
        "exact": True,
        "languages": {"javascript": 1, "python": 1},
    }
    assert summary["tiers"] == {
        "parsed": 2,
        "firstTierOnly": 0,
        "parseFailed": 0,
        "referencesPending": 0,
    }
    assert summary["written"] is True and summary["rebuilt"] == "no index yet"
    assert isinstance(summary["durationMs"], int)
    assert Path(str(summary["index"])).is_file()
    again = build_json(repo)
    assert (again["written"], again["extracted"], again["reused"]) == (False, 0, 2)


def test_stats_in_text_and_json(repo: Path) -> None:
    build_json(repo)
    text = ax_map("stats", "-C", str(repo))
    assert text.returncode == 0, text.stderr
    assert "files: 2 found, 2 indexed, 0 listed, 0 pending, 0 capped: complete" in text.stdout
    assert (
        "tiers: 2 parsed by tree-sitter, 0 first tier only (0 of them unparseable, 0 without "
        "references yet)" in text.stdout
    )
    as_json = ax_map("stats", "-C", str(repo), "--json")
    stats = jsonio.loads(as_json.stdout)
    assert (stats["symbols"], stats["importEdges"], stats["schemaVersion"]) == (2, 0, 3)
    assert stats["state"] == "complete"
    assert stats["references"] >= 0


def test_stats_without_an_index_says_how_to_build_one(repo: Path) -> None:
    done = ax_map("stats", "-C", str(repo))
    assert done.returncode == 1
    assert done.stdout == ""
    assert "is missing" in done.stderr
    assert "hint: run `ax-map build`" in done.stderr


@pytest.mark.parametrize("budget", ["0", "-1", "100000", "nan"])
def test_a_budget_out_of_range_is_a_usage_error_and_writes_nothing(repo: Path, budget: str) -> None:
    done = ax_map("build", "-C", str(repo), "--budget-seconds", budget)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert not state_layout(repo).map_dir.exists()


def test_a_workspace_that_is_no_folder_is_a_usage_error(tmp_path: Path) -> None:
    done = ax_map("build", "-C", str(tmp_path / "missing"))
    assert done.returncode == 2
    assert "is not a directory" in done.stderr


def test_a_state_root_inside_the_workspace_is_refused(repo: Path) -> None:
    done = ax_map("build", "-C", str(repo), env={"AX_STATE_DIR": str(repo / ".state")})
    assert done.returncode == 2
    assert not (repo / ".state").exists()


def _contract_json(result: BuildResult) -> bytes:
    return jsonio.dumps(BuildSummary.of(result).to_json(), indent=True)


def test_build_prints_the_build_summary_contract_byte_for_byte(
    repo: Path, run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ax-map build prints BuildResult.to_json() (no pydantic on its path): each build a
    # repository goes through (cold, warm, changed, with listed and capped files) must
    # print what the BuildSummary contract would.
    import ax_map.build
    import ax_map.inventory

    built: list[BuildResult] = []
    real = ax_map.build.build_index

    def recorded(*args: Any, **kwargs: Any) -> BuildResult:
        built.append(real(*args, **kwargs))
        return built[-1]

    monkeypatch.setattr(ax_map.build, "build_index", recorded)
    monkeypatch.setattr(ax_map.inventory, "MAX_FILES", 4)
    write(repo, {"notes.md": "# notes\n", ".env": "KEY=1\n", "logo.png": b"\x89PNG\0"})
    age_files(repo)
    for change in (None, "a.py", "b.js"):
        if change is not None:
            (repo / change).write_text("def gamma(): pass\n")
            age_files(repo)
        for _ in range(2):
            result = run_cli(main, ["build", "-C", str(repo)])
            assert result.exit_code == 0, result.stderr
            assert result.stdout.encode() == _contract_json(built[-1]) + b"\n"
    assert [result.written for result in built] == [True, False, True, False, True, False]
    assert (built[0].coverage.capped, built[0].coverage.listed) == (
        1,
        {"binary": 1, "secret-named": 1},
    )


def test_build_json_is_the_contract_for_every_shape_of_result() -> None:
    coverage = Coverage(
        total=9,
        indexed=3,
        listed={"secret-named": 1, "caf\u00e9 reason": 2},
        pending=1,
        capped=2,
        languages={"python": 2, "other": 1},
    )
    shapes = [
        BuildResult("/w", "/i", True, coverage, 2, 2, 1, 1, 3, 4, 5, True, "no index yet", False),
        BuildResult("/w", "/i", False, Coverage(0, 0), 0, 0, 0, 0, 0, 0, 0, False, None, False),
        BuildResult(
            "'/w\\n'", "/i", True, Coverage(2, 2), 0, 2, 0, 0, 0, 2, 0, False, None, True,
            notes=["first tier stopped: the wall budget", "n\u00e9"],
            timings_ms={"lockWait": 0, "inventory": 12, "total": 20},
        ),
    ]  # fmt: skip
    for result in shapes:
        assert jsonio.dumps(result.to_json(), indent=True) == _contract_json(result)


@pytest.mark.parametrize("tty", [True, False])
def test_progress_is_drawn_on_a_terminal_only(repo: Path, run_cli: CliRunner, tty: bool) -> None:
    result = run_cli(main, ["build", "-C", str(repo)], isatty=tty)
    assert result.exit_code == 0, result.stderr
    assert jsonio.loads(result.stdout)["coverage"]["indexed"] == 2
    if tty:
        assert "\rax-map: first tier 2/2 files" in result.stderr
        assert result.stderr.endswith("\r")
    else:
        assert result.stderr == ""


def test_undecodable_and_newline_names_survive_the_index_and_the_json(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo\nwith a newline")
    names = [b"caf\xe9.py", b"new\nline.py", b"plain.py"]
    for name in names:
        with open(os.path.join(os.fsencode(repo), name), "wb") as handle:
            handle.write(b"def f(): pass\n")
    commit_all(repo)
    summary = build_json(repo)
    assert summary["coverage"]["indexed"] == 3  # type: ignore[index]
    assert "\n" not in str(summary["workspace"])
    assert unquote_path(str(summary["workspace"])) == str(repo)
    stats = ax_map("stats", "-C", str(repo), "--json")
    assert stats.returncode == 0, stats.stderr
    assert jsonio.loads(stats.stdout)["coverage"]["indexed"] == 3
    text = ax_map("stats", "-C", str(repo))
    assert text.returncode == 0
    from ax_map import load_snapshot

    snapshot = load_snapshot(state_layout(repo))
    assert sorted(os.fsencode(f.path) for f in snapshot.files) == sorted(names)
    index = state_layout(repo).map_dir / "index.sqlite"
    stored = sqlite3.connect(index).execute("SELECT path FROM files ORDER BY path").fetchall()
    assert sorted(row[0] for row in stored) == sorted(names)


def test_ctrl_c_stops_the_build_its_workers_and_writes_nothing(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "big")
    body = "".join(f"def f{i}(value):\n    return g{i}(value) + {i}\n\n" for i in range(600))
    write(repo, {f"pkg{i % 10}/m{i}.py": body for i in range(1500)})
    commit_all(repo)
    state = tmp_path / "state"
    run = subprocess.Popen(
        [tool_path("map"), "build", "-C", str(repo)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "AX_STATE_DIR": str(state)},
        start_new_session=True,
    )
    map_dir = state_layout(repo, {"AX_STATE_DIR": str(state)}).map_dir
    deadline = time.monotonic() + 30
    while not list(map_dir.glob(".index-*.tmp")) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    os.killpg(run.pid, signal.SIGINT)
    out, err = run.communicate(timeout=30)
    # typer 0.28 turns the interrupt into a silent exit 130: no message, and no traceback
    # from the build or from any of its workers.
    assert (run.returncode, out, err) == (130, "", "")
    assert list(map_dir.iterdir()) == [map_dir / "build.lock"]
    assert _session_members(run.pid) == []


def _session_members(session: int) -> list[int]:
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[4]) == session and fields[0] != "Z":
                members.append(int(entry))
    return members


def test_a_state_root_with_an_undecodable_name_still_gives_json(repo: Path, tmp_path: Path) -> None:
    state = os.fsdecode(os.fsencode(tmp_path) + b"/st\xffate")
    env = {"AX_STATE_DIR": state}
    assert ax_map("build", "-C", str(repo), env=env).returncode == 0
    index = Path(state_layout(repo, env).map_dir) / "index.sqlite"
    index.write_bytes(b"not a database" * 10)
    done = ax_map("build", "-C", str(repo), env=env)
    assert done.returncode == 0, done.stderr
    summary = jsonio.loads(done.stdout)
    assert "st\\377ate" in summary["rebuilt"] and "rebuilt from nothing" in summary["rebuilt"]
    assert unquote_path(summary["index"]) == str(index)


@pytest.fixture
def built(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "built")
    write(
        repo,
        {
            "pkg/core.py": "def parse_args(argv):\n    return list(argv)\n",
            "pkg/use.py": "from pkg.core import parse_args\n\n\ndef main():\n"
            "    return parse_args([])\n",
            "web/app.js": "export function render() {}\n",
        },
    )
    commit_all(repo)
    age_files(repo)
    build_json(repo)
    return repo


def test_show_prints_the_map_and_json_cites_it_by_sha256(built: Path, run_cli: CliRunner) -> None:
    import hashlib

    text = run_cli(main, ["show", "-C", str(built)])
    assert (text.exit_code, text.stderr) == (0, "")
    assert text.stdout.startswith("# Repository map: 3 files, 3 indexed")
    assert "- pkg/core.py: function parse_args" in text.stdout
    as_json = run_cli(main, ["show", "-C", str(built), "--json"])
    assert as_json.exit_code == 0, as_json.stderr
    shown = jsonio.loads(as_json.stdout)
    assert shown["text"] == text.stdout
    assert shown["sha256"] == hashlib.sha256(text.stdout.encode()).hexdigest()
    assert shown["chars"] == len(text.stdout)
    assert (shown["state"], shown["git"], shown["query"]) == ("complete", True, None)
    assert shown["coverage"]["indexed"] == 3 and shown["coverage"]["exact"] is True
    assert shown["filesShown"] == 3
    assert (shown["focus"], shown["focusUnmatched"]) == ([], [])


def test_show_ranks_for_a_query_and_a_focus_within_the_budget(
    built: Path, run_cli: CliRunner
) -> None:
    args = ["show", "-C", str(built), "--json", "--chars", "700"]
    focused = run_cli(main, [*args, "--focus", "web", "--focus", str(built / "web/")])
    assert focused.exit_code == 0, focused.stderr
    shown = jsonio.loads(focused.stdout)
    assert shown["focus"] == ["web"]  # absolute and relative name one folder, once
    assert shown["chars"] <= 700
    key_files = shown["text"].split("## Key files")[1]
    assert key_files.index("web/app.js") < key_files.index("pkg/")
    queried = jsonio.loads(run_cli(main, [*args, "--query", "parse_args"]).stdout)
    assert queried["query"] == "parse_args"
    first = queried["text"].split("## Key files")[1].splitlines()[1]
    assert first.startswith("- pkg/core.py:")
    assert queried["sha256"] != shown["sha256"]


def test_a_focus_that_matches_nothing_is_said_not_ignored(built: Path, run_cli: CliRunner) -> None:
    plain = run_cli(main, ["show", "-C", str(built), "--focus", "nowhere/", "--focus", "pkg"])
    assert plain.exit_code == 0
    assert plain.stderr == "ax-map: note: focus nowhere names no file or folder of the index\n"
    assert plain.stdout.startswith("# Repository map")
    as_json = run_cli(main, ["show", "-C", str(built), "--focus", "nowhere", "--json"])
    assert jsonio.loads(as_json.stdout)["focusUnmatched"] == ["nowhere"]
    assert as_json.stderr == ""


@pytest.mark.parametrize(
    "args",
    [
        ["show", "--focus", "../outside"],
        ["show", "--focus", "/etc"],
        ["show", "--focus", "pkg/../../built-sibling"],
        ["show", "--focus", ""],
        ["show", *["--focus", "pkg"] * 65],
        ["show", "--chars", "199"],
        ["show", "--chars", "160001"],
        ["show", "--query", "q" * 1001],
        ["retrieve", ""],
        ["retrieve", "   "],
        ["retrieve", "q" * 1001],
        ["retrieve", "parse_args", "--limit", "0"],
        ["retrieve", "parse_args", "--limit", "101"],
    ],
)
def test_bad_input_is_a_usage_error_before_the_index_is_read(
    tmp_path: Path, run_cli: CliRunner, args: list[str]
) -> None:
    # No index exists: a usage error must still win over "build one first", and nothing
    # is written to the state root.
    repo = make_repo(tmp_path / "built")
    done = run_cli(main, [*args, "-C", str(repo)])
    assert done.exit_code == 2, done.stderr
    assert done.stdout == ""
    assert "ax-map: error:" in done.stderr and "ax-map: hint:" in done.stderr
    assert not state_layout(repo).map_dir.exists()


@pytest.mark.parametrize("verb", [["show"], ["show", "--json"], ["retrieve", "x"]])
def test_show_and_retrieve_without_an_index_say_how_to_build_one(
    repo: Path, verb: list[str]
) -> None:
    done = ax_map(*verb, "-C", str(repo))
    assert done.returncode == 1
    assert done.stdout == ""
    assert "is missing" in done.stderr
    assert "hint: run `ax-map build`" in done.stderr


def test_show_on_a_corrupt_index_is_the_same_clear_error(built: Path) -> None:
    (state_layout(built).map_dir / "index.sqlite").write_bytes(b"garbage" * 100)
    done = ax_map("show", "-C", str(built))
    assert (done.returncode, done.stdout) == (1, "")
    assert "hint: run `ax-map build`" in done.stderr


def test_retrieve_through_the_installed_script(built: Path) -> None:
    done = ax_map("retrieve", "parse_args", "-C", str(built))
    assert (done.returncode, done.stderr) == (0, "")
    first = done.stdout.split("\n\n")[0].splitlines()
    assert first[0].startswith("pkg/core.py  (score ")
    assert "  why: defines 'parse_args' (query)" in first
    assert "  symbols: function parse_args (line 1)" in first
    assert "    1: def parse_args(argv):" in first
    as_json = ax_map("retrieve", "parse_args", "-C", str(built), "--json", "--limit", "1")
    assert as_json.returncode == 0, as_json.stderr
    found = jsonio.loads(as_json.stdout)
    assert (found["query"], found["state"]) == ("parse_args", "complete")
    (hit,) = found["hits"]
    assert hit["path"] == "pkg/core.py"
    assert hit["symbols"] == [{"name": "parse_args", "kind": "function", "line": 1}]
    assert hit["excerpt"][:2] == ["1: def parse_args(argv):", "2:     return list(argv)"]
    assert isinstance(hit["score"], float) and hit["signals"]
    shown = ax_map("show", "-C", str(built), "--json", "--query", "render")
    assert shown.returncode == 0 and jsonio.loads(shown.stdout)["query"] == "render"


def test_retrieve_with_no_match_says_so(built: Path, run_cli: CliRunner) -> None:
    done = run_cli(main, ["retrieve", "zzqqxx_nothing", "-C", str(built)])
    assert (done.exit_code, done.stdout, done.stderr) == (0, "no file matches the query\n", "")
    as_json = run_cli(main, ["retrieve", "zzqqxx_nothing", "-C", str(built), "--json"])
    assert jsonio.loads(as_json.stdout)["hits"] == []


def test_names_with_newlines_and_bad_bytes_stay_one_json_string(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "odd")
    with open(os.path.join(os.fsencode(repo), b"od\xffd\nname.py"), "wb") as handle:
        handle.write(b"def oddity(): pass\n")
    commit_all(repo)
    build_json(repo)
    found = ax_map("retrieve", "oddity", "-C", str(repo), "--json")
    assert found.returncode == 0, found.stderr
    (hit,) = jsonio.loads(found.stdout)["hits"]
    assert unquote_path(hit["path"]) == os.fsdecode(b"od\xffd\nname.py")
    text = ax_map("retrieve", "oddity", "-C", str(repo))
    assert text.stdout.splitlines()[0].startswith('"od\\377d\\nname.py"  (score ')
    shown = ax_map("show", "-C", str(repo), "--json", "--focus", os.fsdecode(b"od\xffd\nname.py"))
    assert shown.returncode == 0, shown.stderr
    assert jsonio.loads(shown.stdout)["focus"] == ['"od\\377d\\nname.py"']
