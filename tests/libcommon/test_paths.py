"""libcommon.paths: the state root, the workspace guard, the slug and the layout."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pytest

from libcommon.errors import ExitStatus, UsageError
from libcommon.paths import (
    StateLayout,
    check_session_id,
    project_slug,
    resolve_lenient,
    resolve_workspace,
    state_layout,
    state_root,
)

SLUG_RE = re.compile(r"^[A-Za-z0-9._-]+-[0-9a-f]{12}$")


def real(path: Path) -> Path:
    return Path(os.path.realpath(path))


# --- state_root precedence ---------------------------------------------------------


def test_state_root_prefers_ax_state_dir(tmp_path: Path) -> None:
    env = {
        "AX_STATE_DIR": str(tmp_path / "explicit"),
        "XDG_STATE_HOME": str(tmp_path / "xdg"),
        "HOME": str(tmp_path / "home"),
    }
    assert state_root(env) == real(tmp_path) / "explicit"


def test_state_root_uses_absolute_xdg_state_home(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path / "home")}
    assert state_root(env) == real(tmp_path) / "xdg" / "ax"


def test_state_root_empty_ax_state_dir_falls_through(tmp_path: Path) -> None:
    env = {"AX_STATE_DIR": "", "XDG_STATE_HOME": str(tmp_path / "xdg")}
    assert state_root(env) == real(tmp_path) / "xdg" / "ax"


def test_state_root_falls_back_to_home(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "home")}
    assert state_root(env) == real(tmp_path) / "home" / ".local" / "state" / "ax"


def test_state_root_ignores_relative_xdg_state_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    env = {"XDG_STATE_HOME": "relative/state", "HOME": str(tmp_path / "home")}
    assert state_root(env) == real(tmp_path) / "home" / ".local" / "state" / "ax"


def test_state_root_reads_process_environment_by_default(state_dir: Path) -> None:
    # The autouse fixture set AX_STATE_DIR for this test.
    assert state_root() == real(state_dir)


def test_state_root_resolves_symlinks(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (tmp_path / "link").symlink_to(target)
    assert state_root({"AX_STATE_DIR": str(tmp_path / "link")}) == real(target)


# --- state_layout refuses a root inside the workspace --------------------------------


def assert_refused(workspace: Path, root: Path | str) -> UsageError:
    with pytest.raises(UsageError) as info:
        state_layout(workspace, {"AX_STATE_DIR": str(root)})
    assert info.value.status == ExitStatus.USAGE
    assert int(info.value.status) == 2
    assert "inside the workspace" in info.value.message
    assert info.value.hint
    return info.value


def test_state_layout_refuses_root_inside_workspace(workspace: Path) -> None:
    (workspace / "state").mkdir()
    assert_refused(workspace, workspace / "state")


def test_state_layout_refuses_root_equal_to_workspace(workspace: Path) -> None:
    assert_refused(workspace, workspace)


def test_state_layout_refuses_root_that_does_not_exist_yet(workspace: Path) -> None:
    root = workspace / "not" / "yet" / "there"
    assert_refused(workspace, root)
    assert not (workspace / "not").exists()  # nothing was created


def test_state_layout_refuses_root_reaching_workspace_through_symlink(
    workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "innocent").symlink_to(workspace)
    # Existing target, and a tail that does not exist yet below the link.
    assert_refused(workspace, outside / "innocent")
    assert_refused(workspace, outside / "innocent" / "new" / "state")


def test_state_layout_refuses_root_reaching_workspace_through_dotdot(
    workspace: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    assert_refused(workspace, f"{other}/../{workspace.name}/.ax-state")


def test_state_layout_refuses_when_workspace_spelled_through_symlink(
    workspace: Path, tmp_path: Path
) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(workspace)
    assert_refused(alias, workspace / "state")


def test_state_layout_accepts_sibling_with_common_prefix(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    evil = tmp_path / "ws-evil"
    ws.mkdir()
    evil.mkdir()
    layout = state_layout(ws, {"AX_STATE_DIR": str(evil)})
    assert layout.root == real(evil)
    assert layout.workspace == real(ws)


def test_state_layout_accepts_outside_root(workspace: Path, state_dir: Path) -> None:
    layout = state_layout(workspace)
    assert layout == StateLayout(root=real(state_dir), workspace=workspace)


def test_state_layout_defaults_to_cwd(
    workspace: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(workspace)
    assert state_layout().workspace == workspace


def test_resolve_workspace_refuses_missing_or_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as info:
        resolve_workspace(tmp_path / "missing")
    assert info.value.status == 2
    assert "missing" in info.value.message
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError):
        resolve_workspace(tmp_path / "file")


# --- resolve_lenient ------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """tmp/a/b (real), tmp/c/link -> ../a/b, tmp/dangling -> tmp/nowhere/deep."""
    base = real(tmp_path)
    (base / "a" / "b").mkdir(parents=True)
    (base / "c").mkdir()
    (base / "c" / "link").symlink_to(Path("..") / "a" / "b")
    (base / "dangling").symlink_to(base / "nowhere" / "deep")
    return base


def test_resolve_lenient_follows_symlink(tree: Path) -> None:
    assert resolve_lenient(tree / "c" / "link") == tree / "a" / "b"


def test_resolve_lenient_follows_link_before_dotdot(tree: Path) -> None:
    # Lexical folding would give tree/c; the kernel gives the link target's parent.
    assert resolve_lenient(f"{tree}/c/link/..") == tree / "a"
    assert resolve_lenient(f"{tree}/c/link/../x/y") == tree / "a" / "x" / "y"


def test_resolve_lenient_relative_path_uses_cwd(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tree / "c")
    assert resolve_lenient("link/..") == tree / "a"
    assert resolve_lenient("new/file") == tree / "c" / "new" / "file"


def test_resolve_lenient_dangling_link(tree: Path) -> None:
    assert resolve_lenient(tree / "dangling") == tree / "nowhere" / "deep"
    assert resolve_lenient(tree / "dangling" / "tail") == tree / "nowhere" / "deep" / "tail"


def test_resolve_lenient_keeps_nonexistent_tail(tree: Path) -> None:
    assert resolve_lenient(tree / "a" / "new" / "x.txt") == tree / "a" / "new" / "x.txt"
    assert resolve_lenient(tree / "c" / "link" / "new") == tree / "a" / "b" / "new"


def test_resolve_lenient_dotdot_through_missing_component(tree: Path) -> None:
    assert resolve_lenient(f"{tree}/missing/../a") == tree / "a"


# --- project_slug ---------------------------------------------------------------------


def test_project_slug_format(workspace: Path) -> None:
    slug = project_slug(workspace)
    digest = hashlib.sha256(str(workspace).encode()).hexdigest()[:12]
    assert slug == f"ws-{digest}"
    assert SLUG_RE.fullmatch(slug)


def test_project_slug_same_for_symlinked_spelling(workspace: Path, tmp_path: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(workspace)
    assert project_slug(alias) == project_slug(workspace)
    assert project_slug(Path(f"{workspace}/../{workspace.name}")) == project_slug(workspace)


def test_project_slug_differs_for_same_basename(tmp_path: Path) -> None:
    one = tmp_path / "one" / "app"
    two = tmp_path / "two" / "app"
    one.mkdir(parents=True)
    two.mkdir(parents=True)
    slug_one, slug_two = project_slug(one), project_slug(two)
    assert slug_one.startswith("app-")
    assert slug_two.startswith("app-")
    assert slug_one != slug_two


@pytest.mark.parametrize("name", ["my project", "a:b*c?", "naïve", "tab\there", "x'y\"z"])
def test_project_slug_replaces_unsafe_characters(tmp_path: Path, name: str) -> None:
    folder = tmp_path / name
    folder.mkdir()
    slug = project_slug(folder)
    assert SLUG_RE.fullmatch(slug), slug
    assert "/" not in slug
    assert slug.endswith(hashlib.sha256(str(real(folder)).encode()).hexdigest()[:12])


def test_project_slug_of_filesystem_root() -> None:
    assert SLUG_RE.fullmatch(project_slug(Path("/")))


# --- check_session_id ----------------------------------------------------------------


@pytest.mark.parametrize(
    "session_id",
    ["s", "0", "s-20261130T100000-abcd1234", "a.b_c-d", "A" * 128, "x..y"],
)
def test_check_session_id_accepts(session_id: str) -> None:
    assert check_session_id(session_id) == session_id


@pytest.mark.parametrize(
    "session_id",
    [
        "../x",
        "..",
        ".",
        "",
        "a" * 129,
        ".hidden",
        "-dash",
        "_under",
        "a/b",
        "/abs",
        "a\0b",
        "a\n",
        "a b",
        "é",
        "a\\b",
    ],
)
def test_check_session_id_refuses(session_id: str) -> None:
    with pytest.raises(UsageError) as info:
        check_session_id(session_id)
    assert info.value.status == 2
    assert info.value.hint


def test_layout_session_paths_refuse_bad_ids(workspace: Path, state_dir: Path) -> None:
    layout = state_layout(workspace)
    for method in (layout.session_log, layout.session_lease, layout.session_dir):
        with pytest.raises(UsageError):
            method("../escape")


@pytest.mark.parametrize("session_id", ["a.jsonl", "a.lock", "a.lock.guard", "a.jsonl.partial"])
def test_ids_that_would_collide_with_another_sessions_files_are_refused(
    workspace: Path, state_dir: Path, session_id: str
) -> None:
    layout = state_layout(workspace)
    with pytest.raises(UsageError, match="suffix ax uses for its own files"):
        layout.session_dir(session_id)
    assert list(state_dir.iterdir()) == []


def test_session_paths_of_distinct_ids_never_collide(workspace: Path) -> None:
    layout = state_layout(workspace)
    paths: dict[Path, str] = {}
    for session_id in ["a", "a.b", "a-jsonl", "a.lock2", "lock"]:
        lease = layout.session_lease(session_id)
        for kind, path in (
            ("log", layout.session_log(session_id)),
            ("lease", lease),
            ("lease guard", lease.with_name(lease.name + ".guard")),
            (
                "partial log",
                layout.session_log(session_id).with_name(f"{session_id}.jsonl.partial"),
            ),
            ("dir", layout.session_dir(session_id)),
        ):
            owner = f"{kind} of {session_id!r}"
            assert path not in paths, f"{owner} is also the {paths[path]}"
            paths[path] = owner


# --- StateLayout matches DESIGN.md ----------------------------------------------------


def test_state_layout_paths_match_design(workspace: Path, state_dir: Path) -> None:
    layout = state_layout(workspace)
    root = real(state_dir)
    slug = project_slug(workspace)
    project = root / "projects" / slug
    assert layout.root == root
    assert layout.slug == slug
    assert layout.config_file == root / "config.json"
    assert layout.trust_file == root / "trust.json"
    assert layout.trust_log == root / "trust.log"
    assert layout.grants_file == root / "grants.json"
    assert layout.grants_log == root / "grants.log"
    assert layout.project_dir == project
    assert layout.objects_dir == project / "objects"
    assert layout.sessions_dir == project / "sessions"
    assert layout.session_log("s-1") == project / "sessions" / "s-1.jsonl"
    assert layout.session_lease("s-1") == project / "sessions" / "s-1.lock"
    assert layout.session_dir("s-1") == project / "sessions" / "s-1"
    assert layout.external_slates_dir == project / "external-slates"
    assert layout.proposals_dir == project / "proposals"
    assert layout.candidates_dir == project / "candidates"
    assert layout.previews_dir == project / "previews"
    assert layout.memory_dir == project / "memory"
    assert layout.map_dir == project / "map"


def test_state_layout_creates_nothing(workspace: Path, state_dir: Path) -> None:
    before = sorted(state_dir.rglob("*"))
    layout = state_layout(workspace)
    _ = (layout.project_dir, layout.sessions_dir, layout.session_log("s-1"))
    assert sorted(state_dir.rglob("*")) == before
    assert list(workspace.iterdir()) == []
