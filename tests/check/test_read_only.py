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

import pytest
from axtest import CliRunner
from check.checkcli import check, write

from ax_check.cli import main
from libcommon.paths import state_layout


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


# tsc --build (a project with references) writes each project's outDir by design. The
# stand-in below, named like the tool and placed where the recipe looks for it, writes
# what a real `tsc --build` writes: one output per source, rewritten whenever its source
# changed. The real compiler is not needed: this is about what the tree check watches.
STAND_IN_TSC = (
    "#!/bin/sh\n"
    "mkdir -p out core/lib\n"
    "cp src/main.ts out/main.js\n"
    "cp core/src/index.ts core/lib/index.d.ts\n"
)


def referencing_project(root: Path, stand_in: str = STAND_IN_TSC) -> Path:
    write(
        root,
        {
            "package.json": '{"devDependencies": {"typescript": "5"}}',
            # outDir comes from the base config the app extends (resolved from the base).
            "tsconfig.base.json": '{"compilerOptions": {"composite": true}}',
            "tsconfig.json": '{\n  // the app\n  "extends": "./tsconfig.base",\n'
            '  "compilerOptions": {"outDir": "out"},\n  "references": [{"path": "./core"}],\n}\n',
            "core/tsconfig.json": '{"compilerOptions": {"outDir": "lib", "composite": true}}',
            "core/src/index.ts": "export const one = 1;\n",
            "src/main.ts": "export const total = 1;\n",
        },
    )
    tsc = root / "node_modules" / ".bin" / "tsc"
    tsc.parent.mkdir(parents=True)
    tsc.write_text(stand_in)
    tsc.chmod(0o755)
    return root


@pytest.mark.parametrize("in_git", [False, True])
def test_tsc_build_rewriting_its_own_outputs_is_not_a_source_change(
    workspace: Path, run_cli: CliRunner, require: Callable[[str], str], in_git: bool
) -> None:
    require("node")
    referencing_project(workspace)
    if in_git:
        # The outputs are untracked and not ignored: git alone would call them sources.
        commit_all(workspace)
    code, result, stderr = check(run_cli, "typecheck", "-C", str(workspace))
    assert (code, result["verdict"]) == (0, "passed"), stderr
    assert result["recipe"]["command"] == "./node_modules/.bin/tsc --build"
    assert result["tree"]["outputs"] == ["core/lib", "out"]
    # An edited source: the next build rewrites the outputs it wrote before.
    (workspace / "src/main.ts").write_text("export const total = 2;\n")
    code, result, stderr = check(run_cli, "typecheck", "-C", str(workspace))
    assert (workspace / "out/main.js").read_text() == "export const total = 2;\n"
    assert (code, result["verdict"], result["tree"]["changed"]) == (0, "passed", []), stderr


def test_tsc_build_outputs_never_hide_a_source_it_rewrites(
    workspace: Path, run_cli: CliRunner, require: Callable[[str], str]
) -> None:
    require("node")
    referencing_project(workspace, STAND_IN_TSC + "echo '// touched' >> src/main.ts\n")
    code, result, _ = check(run_cli, "typecheck", "-C", str(workspace))
    assert (code, result["verdict"]) == (1, "modified")
    assert result["tree"]["changed"] == [{"path": "src/main.ts", "change": "modified"}]


def test_tsc_build_outputs_inside_the_unit_only(workspace: Path) -> None:
    from ax_check.facts import gather_facts
    from ax_check.recipes import resolve
    from ax_check.toolchains import Toolchains
    from ax_check.units import discover_units

    referencing_project(workspace)
    # An outDir of the unit folder itself, or outside it, is never taken out of the watch;
    # a reference naming a tsconfig file, a list of bases (the last wins) and a cycle.
    write(
        workspace,
        {
            "tsconfig.json": '{"extends": ["./a.json", "./b.json"], "references": '
            '[{"path": "./core/tsconfig.json"}, {"path": "./tools"}, {"path": "./self"}]}',
            "a.json": '{"compilerOptions": {"outDir": "from-a"}}',
            "b.json": '{"extends": "./b.json", "compilerOptions": {"declarationDir": "types"}}',
            "tools/tsconfig.json": '{"compilerOptions": {"outDir": ".."}}',
            "self/tsconfig.json": '{"references": [{"path": ".."}], '
            '"compilerOptions": {"outDir": "../../elsewhere"}}',
        },
    )
    unit = discover_units(workspace).units[0]
    resolved = resolve(gather_facts(workspace, unit, Toolchains(path="/usr/bin:/bin")), "typecheck")
    # Ready, or blocked with node missing: the command is built either way.
    command = resolved.command
    assert command is not None
    assert command.outputs == ("core/lib", "from-a", "types")
