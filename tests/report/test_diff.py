"""ax-report diff: real files, a real log and snapshot store, checked with real git."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from axtest import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ax_log import record_mutations, snapshot_paths, undo
from ax_report import unified_diff
from ax_report.cli import main
from libcommon.paths import StateLayout, state_layout

SESSION = "s-diff"


def git() -> str:
    found = shutil.which("git")
    if found is None:
        pytest.skip("git is not installed: cannot check the patch with git apply")
    return found


def edit(layout: StateLayout, call: str, changes: dict[str, bytes | None]) -> None:
    """What a typed file tool does: snapshot, change the bytes, record the mutation."""
    paths = list(changes)
    snapshot_paths(layout, SESSION, paths, call)
    for name, data in changes.items():
        target = layout.workspace / name
        if data is None:
            target.unlink()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    record_mutations(layout, SESSION, paths, call)


def seed(workspace: Path, files: dict[str, bytes]) -> Path:
    """Write the starting files, and keep a copy of them as the pre-session tree."""
    pristine = workspace.parent / "pristine"
    for root in (workspace, pristine):
        for name, data in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(data)
    return pristine


def apply_check(tree: Path, patch: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [git(), "apply", "--check", *flags],
        cwd=tree,
        input=patch,
        capture_output=True,
        text=True,
    )


@pytest.fixture
def session(workspace: Path) -> tuple[StateLayout, Path]:
    pristine = seed(
        workspace,
        {"a.txt": b"one\ntwo\nthree\n", "gone.txt": b"bye\n", "tail.txt": b"no newline"},
    )
    layout = state_layout(workspace)
    edit(layout, "c1", {"a.txt": b"one\nTWO\nthree\n", "gone.txt": None})
    edit(layout, "c2", {"pkg/new.txt": b"fresh\n", "tail.txt": b"no newline, still"})
    return layout, pristine


def test_the_diff_applies_to_the_pre_session_tree(
    session: tuple[StateLayout, Path], run_cli: CliRunner
) -> None:
    layout, pristine = session
    result = run_cli(main, ["diff", "--session", SESSION, "-C", str(layout.workspace)])
    assert result.exit_code == 0, result.stderr
    patch = result.stdout
    assert "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n" in patch
    assert "-two\n+TWO\n" in patch
    assert "deleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n" in patch
    assert "new file mode 100644\n--- /dev/null\n+++ b/pkg/new.txt\n" in patch
    assert "\\ No newline at end of file\n" in patch
    assert result.stderr == ""
    check = apply_check(pristine, patch)
    assert check.returncode == 0, check.stderr
    # And reversed, it applies to the workspace as it is now.
    reverse = apply_check(layout.workspace, patch, "-R")
    assert reverse.returncode == 0, reverse.stderr
    subprocess.run([git(), "apply"], cwd=pristine, input=patch, text=True, check=True)
    for name in ("a.txt", "tail.txt", "pkg/new.txt"):
        assert (pristine / name).read_bytes() == (layout.workspace / name).read_bytes()
    assert not (pristine / "gone.txt").exists()


def test_undo_is_folded_in(session: tuple[StateLayout, Path], run_cli: CliRunner) -> None:
    layout, _ = session
    outcome = undo(layout, SESSION, everything=False)  # reverts call c2
    assert outcome.ok
    result = run_cli(main, ["diff", "--session", SESSION, "-C", str(layout.workspace)])
    assert result.exit_code == 0, result.stderr
    assert "a/a.txt" in result.stdout and "gone.txt" in result.stdout
    assert "pkg/new.txt" not in result.stdout and "tail.txt" not in result.stdout


def test_a_file_changed_after_the_session_is_flagged_drifted(
    session: tuple[StateLayout, Path], run_cli: CliRunner
) -> None:
    layout, pristine = session
    (layout.workspace / "a.txt").write_bytes(b"one\nTWO\nthree\nfour, by hand\n")
    result = run_cli(main, ["diff", "--session", SESSION, "-C", str(layout.workspace)])
    assert result.exit_code == 1
    assert "# DRIFTED: a.txt changed on disk after the session's last change" in result.stdout
    assert "ax-report: DRIFTED: a.txt" in result.stderr
    assert "DRIFTED: gone.txt" not in result.stderr
    # The remark is commentary to git: the patch as a whole still applies.
    check = apply_check(pristine, result.stdout)
    assert check.returncode == 0, check.stderr


def test_a_missing_pre_image_is_named_and_fails(
    session: tuple[StateLayout, Path], run_cli: CliRunner
) -> None:
    layout, _ = session
    import hashlib

    blob = layout.objects_dir / hashlib.sha256(b"one\ntwo\nthree\n").hexdigest()
    blob.chmod(0o600)
    blob.unlink()
    result = run_cli(main, ["diff", "--session", SESSION, "-C", str(layout.workspace)])
    assert result.exit_code == 1
    assert "is missing from the object store; no diff" in result.stdout
    assert "not diffed: a.txt" in result.stderr
    assert "b/pkg/new.txt" in result.stdout  # the other files are still shown


def test_binary_content_is_named_not_shown(workspace: Path, run_cli: CliRunner) -> None:
    seed(workspace, {"img.bin": b"\x00\x01\x02"})
    layout = state_layout(workspace)
    edit(layout, "c1", {"img.bin": b"\x00\x01\x03"})
    result = run_cli(main, ["diff", "--session", SESSION, "-C", str(workspace)])
    assert result.exit_code == 0
    assert result.stdout == "# img.bin: binary content changed; not shown\n"


def test_an_unknown_session_is_an_error(workspace: Path, run_cli: CliRunner) -> None:
    result = run_cli(main, ["diff", "--session", "none-here", "-C", str(workspace)])
    assert result.exit_code == 1
    assert "no event log for session none-here" in result.stderr


def test_created_then_deleted_in_one_session_shows_nothing(
    workspace: Path, run_cli: CliRunner
) -> None:
    layout = state_layout(workspace)
    edit(layout, "c1", {"tmp.txt": b"x\n"})
    edit(layout, "c2", {"tmp.txt": None})
    result = run_cli(main, ["diff", "--session", SESSION, "-C", str(workspace)])
    assert (result.exit_code, result.stdout) == (0, "")


lines = st.lists(st.sampled_from(["a", "b", "c", "", "x y", "\tz"]), max_size=12)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(old=lines, new=lines, old_eol=st.booleans(), new_eol=st.booleans())
def test_unified_diff_round_trips_through_git_apply(
    tmp_path: Path, old: list[str], new: list[str], old_eol: bool, new_eol: bool
) -> None:
    before = "\n".join(old) + ("\n" if old_eol and old else "")
    after = "\n".join(new) + ("\n" if new_eol and new else "")
    tree = Path(tempfile.mkdtemp(dir=tmp_path))
    (tree / "f.txt").write_text(before)
    patch = unified_diff("f.txt", before.encode(), after.encode(), "100644")
    assert patch is not None
    if before == after:
        assert patch == ""
        return
    subprocess.run([git(), "apply"], cwd=tree, input=patch, text=True, check=True)
    assert (tree / "f.txt").read_text() == after
