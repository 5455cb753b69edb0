"""A check never changes the tree: linters run without fixes, and a change is `modified`.

Each fixture project is made in the test and run through ax-check's CLI with
real make, git and ruff.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from axtest import CliRunner

from ax_check.cli import main
from libcommon.paths import state_layout


def check(run_cli: CliRunner, *argv: str) -> tuple[int, dict[str, Any], str]:
    result = run_cli(main, [*argv, "--json"])
    return result.exit_code, json.loads(result.stdout), result.stderr


def write(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def commit_all(root: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed on this machine")

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
            cwd=root,
            check=True,
            capture_output=True,
        )

    git("init", "-q", ".")
    git("add", "-A")
    git("commit", "-q", "-m", "fixture")


PYPROJECT = '[project]\nname = "app"\nversion = "0"\n'


def test_ruff_fix_true_in_the_projects_config_never_rewrites(
    workspace: Path, run_cli: CliRunner, needs_module: Callable[[str], None]
) -> None:
    needs_module("ruff")
    # The pallets projects set `fix = true`: a bare `ruff check` rewrote the file and passed.
    source = "import os\nimport sys\n\nprint(sys.argv)\n"
    write(
        workspace,
        {
            "pyproject.toml": PYPROJECT + "\n[tool.ruff]\nfix = true\n",
            "app.py": source,
        },
    )
    code, result, _ = check(run_cli, "lint", "-C", str(workspace))
    assert (code, result["verdict"]) == (1, "failed")
    assert "--no-fix" in result["recipe"]["command"]
    assert (workspace / "app.py").read_text() == source
    assert ("app.py", 1, "F401") in {(f["path"], f["line"], f["code"]) for f in result["findings"]}
    assert result["tree"]["changed"] == []


def rewriting_makefile(target: str, recipe: str) -> str:
    return f"{target}:\n\t{recipe}\n"


@pytest.mark.parametrize("in_git", [True, False], ids=["git", "walk"])
def test_a_project_task_that_rewrites_a_source_is_modified_never_passed(
    workspace: Path, run_cli: CliRunner, in_git: bool
) -> None:
    # The project's own `make lint` formats in place and exits 0; it cannot be made read-only.
    write(
        workspace,
        {
            "pyproject.toml": PYPROJECT,
            "app.py": "x  =  1\n",
            "same.py": "y = 2\n",
            ".gitignore": "ignored.txt\n",
            "ignored.txt": "before\n",
            "Makefile": rewriting_makefile(
                "lint",
                # A rewrite, an identical rewrite, a touch, and writes a check may make:
                # caches and build outputs, an ignored file and a new untracked file.
                "@printf 'x = 1\\n' > app.py; cp same.py tmp && mv tmp same.py"
                "; touch pyproject.toml; mkdir -p __pycache__ .pytest_cache dist build"
                " && touch __pycache__/a.pyc dist/app.whl .pytest_cache/v build/x"
                "; echo after > ignored.txt; echo new > new.py",
            ),
        },
    )
    if in_git:
        commit_all(workspace)
    code, result, stderr = check(run_cli, "lint", "-C", str(workspace), "--session", "s-mod")
    assert (code, result["verdict"], result["exitCode"]) == (1, "modified", 0)
    tree = result["tree"]
    assert tree["method"] == ("git" if in_git else "walk")
    assert tree["complete"] is True
    expected = [{"path": "app.py", "change": "modified"}]
    if not in_git:
        # Without git there is no ignore list: every file outside build and cache folders counts.
        expected.append({"path": "ignored.txt", "change": "modified"})
    assert sorted(tree["changed"], key=lambda c: c["path"]) == expected
    assert tree["changedTotal"] == len(expected)
    assert f"the command changed {len(expected)} source file(s)" in result["message"]
    assert {"name": "source-changed", "detail": "modified: app.py"} in result["signals"]
    assert "lint modified in ." in stderr
    completed = json.loads(
        state_layout(workspace).session_log("s-mod").read_text().splitlines()[-1]
    )
    assert (completed["verdict"], completed["exitCode"]) == ("modified", 0)


def test_a_deleted_source_and_a_failing_run_still_say_what_changed(
    workspace: Path, run_cli: CliRunner
) -> None:
    write(
        workspace,
        {
            "pyproject.toml": PYPROJECT,
            "gone.py": "z = 3\n",
            "Makefile": rewriting_makefile("lint", "@rm gone.py; exit 3"),
        },
    )
    commit_all(workspace)
    code, result, _ = check(run_cli, "lint", "-C", str(workspace))
    # The failure stays a failure; the change is reported beside it.
    assert (code, result["verdict"]) == (1, "failed")
    assert result["tree"]["changed"] == [{"path": "gone.py", "change": "deleted"}]
    assert "changed 1 source file(s) it was checking: gone.py" in result["message"]


def test_a_task_that_writes_nothing_but_caches_passes(workspace: Path, run_cli: CliRunner) -> None:
    write(
        workspace,
        {
            "pyproject.toml": PYPROJECT,
            "app.py": "x = 1\n",
            "Makefile": rewriting_makefile(
                "test",
                "@mkdir -p node_modules/.cache target && touch node_modules/.cache/a target/b",
            ),
        },
    )
    commit_all(workspace)
    code, result, stderr = check(run_cli, "test", "-C", str(workspace))
    assert (code, result["verdict"]) == (0, "passed"), stderr
    assert result["tree"]["changedTotal"] == 0
    assert result["tree"]["files"] == 3


def test_the_snapshot_compares_links_modes_and_skips_special_files(tmp_path: Path) -> None:
    from ax_check.tree import compare_tree, take_snapshot

    root = write(tmp_path / "unit", {"a.py": "a\n", "b.sh": "b\n", "c.py": "c\n"})
    os.symlink("a.py", root / "link")
    os.mkfifo(root / "pipe")
    snapshot = take_snapshot(root)
    assert snapshot.method == "walk" and set(snapshot.entries) == {"a.py", "b.sh", "c.py", "link"}
    (root / "link").unlink()
    os.symlink("c.py", root / "link")
    (root / "b.sh").chmod(0o755)
    tree = compare_tree(snapshot)
    assert sorted((c.path, c.change) for c in tree.changed) == [
        ("b.sh", "modified"),
        ("link", "modified"),
    ]


def test_past_the_file_cap_the_result_says_it_is_incomplete(
    workspace: Path, run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ax_check import tree

    monkeypatch.setattr(tree, "MAX_SNAPSHOT_FILES", 2)
    files = {f"m{index}.py": "x = 1\n" for index in range(4)}
    write(workspace, {"pyproject.toml": PYPROJECT, "Makefile": "test:\n\t@true\n", **files})
    result = run_cli(main, ["test", "-C", str(workspace), "--json"])
    tree_check = json.loads(result.stdout)["tree"]
    assert (tree_check["files"], tree_check["complete"]) == (2, False)
    assert "only 2 source files were watched" in result.stderr
