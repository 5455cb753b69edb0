"""validate_path against real symlinks, `..`, sibling prefixes, dangling links and new paths."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ax_policy import validate_path
from ax_policy.models import WorkspaceConfig
from ax_policy.pathcheck import MAX_PATH_CHARS, matches_pattern


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("x\n")
    return Path(os.path.realpath(root))


def test_plain_file_inside(ws: Path) -> None:
    facts = validate_path("src/app.py", ws)
    assert facts.valid and facts.inside_workspace
    assert facts.resolved == str(ws / "src" / "app.py")
    assert not facts.protected and not facts.secret
    assert facts.needs_no_question()


def test_new_nested_path_inside(ws: Path) -> None:
    facts = validate_path("new/deeper/file.txt", ws, write=True)
    assert facts.valid and facts.inside_workspace
    assert facts.resolved == str(ws / "new" / "deeper" / "file.txt")
    assert facts.needs_no_question()


def test_dotdot_escape(ws: Path) -> None:
    facts = validate_path("src/../../outside.txt", ws)
    assert facts.valid and not facts.inside_workspace
    assert "outside the workspace" in (facts.containment_reason or "")
    assert not facts.needs_no_question()


def test_dotdot_that_stays_inside(ws: Path) -> None:
    facts = validate_path("src/../src/app.py", ws)
    assert facts.inside_workspace and facts.resolved == str(ws / "src" / "app.py")


def test_absolute_path_outside(ws: Path) -> None:
    facts = validate_path("/etc/passwd", ws)
    assert facts.valid and not facts.inside_workspace


def test_sibling_prefix_is_outside(tmp_path: Path, ws: Path) -> None:
    evil = tmp_path / "ws-evil"
    evil.mkdir()
    facts = validate_path(str(evil / "x"), ws)
    assert not facts.inside_workspace
    # ...and the same through a relative path.
    assert not validate_path("../ws-evil/x", ws).inside_workspace


def test_symlink_to_outside_is_outside(tmp_path: Path, ws: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "link").symlink_to(outside)
    facts = validate_path("link/file.txt", ws, write=True)
    assert not facts.inside_workspace
    assert facts.resolved == str(outside / "file.txt")
    assert "through a symlink" in (facts.containment_reason or "")


def test_symlink_then_dotdot_follows_the_link_first(tmp_path: Path, ws: Path) -> None:
    # link -> outside/deep; "link/.." is outside/, not the workspace.
    deep = tmp_path / "outside" / "deep"
    deep.mkdir(parents=True)
    (ws / "link").symlink_to(deep)
    facts = validate_path("link/../secret.txt", ws)
    assert not facts.inside_workspace
    assert facts.resolved == str(tmp_path / "outside" / "secret.txt")


def test_dangling_symlink_resolves_to_its_target(tmp_path: Path, ws: Path) -> None:
    (ws / "dangling").symlink_to(tmp_path / "nowhere" / "file")
    facts = validate_path("dangling", ws, write=True)
    assert facts.valid and not facts.inside_workspace
    assert facts.resolved == str(tmp_path / "nowhere" / "file")


def test_dangling_symlink_inside_stays_inside(ws: Path) -> None:
    (ws / "later").symlink_to(ws / "not-yet")
    facts = validate_path("later", ws, write=True)
    assert facts.inside_workspace and facts.resolved == str(ws / "not-yet")


def test_symlink_loop_is_invalid(ws: Path) -> None:
    (ws / "a").symlink_to(ws / "b")
    (ws / "b").symlink_to(ws / "a")
    facts = validate_path("a/x", ws)
    assert not facts.valid
    assert "loop" in (facts.invalid_reason or "")


def test_workspace_given_through_a_symlink(tmp_path: Path, ws: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(ws)
    facts = validate_path("src/app.py", alias)
    assert facts.inside_workspace and facts.resolved == str(ws / "src" / "app.py")


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("", "empty"),
        ("a\x00b", "NUL"),
        ("a\nb", "control character U+000A"),
        ("a\x1bb", "control character U+001B"),
        ("a\x85b", "control character U+0085"),
        ("x" * (MAX_PATH_CHARS + 1), "longer than"),
        ("bad\udcffname", "not valid UTF-8"),
    ],
)
def test_invalid_paths(ws: Path, raw: str, problem: str) -> None:
    facts = validate_path(raw, ws)
    assert not facts.valid and problem in (facts.invalid_reason or "")
    assert facts.resolved is None and not facts.needs_no_question()


@pytest.mark.parametrize(
    "raw", [".git/config", "sub/.git/hooks/pre-commit", ".ax/config.json", ".GIT/config", ".git"]
)
def test_protected_places(ws: Path, raw: str) -> None:
    facts = validate_path(raw, ws, write=True)
    assert facts.inside_workspace and facts.protected
    assert not facts.needs_no_question()
    # Reading a protected place needs no question.
    assert validate_path(raw, ws).needs_no_question()


def test_symlink_into_git_is_protected(ws: Path) -> None:
    (ws / ".git").mkdir()
    (ws / "hooks").symlink_to(ws / ".git")
    facts = validate_path("hooks/pre-commit", ws, write=True)
    assert facts.inside_workspace and facts.protected


def test_state_root_is_protected(tmp_path: Path, ws: Path, state_dir: Path) -> None:
    facts = validate_path(str(state_dir / "trust.json"), ws, write=True)
    assert facts.protected and "state root" in (facts.protected_reason or "")
    explicit = validate_path(str(tmp_path / "st" / "x"), ws, state_dir=tmp_path / "st")
    assert explicit.protected


@pytest.mark.parametrize(
    "raw",
    [
        ".env",
        ".env.local",
        "config/.ENV.production",
        "certs/server.pem",
        "tls.key",
        "id_rsa",
        "id_rsa.pub",
        "id_ed25519",
        ".netrc",
        ".npmrc",
        "credentials.json",
        "home/.ssh/known_hosts",
        ".aws/config",
    ],
)
def test_secret_names(ws: Path, raw: str) -> None:
    facts = validate_path(raw, ws)
    assert facts.secret, raw
    assert not facts.needs_no_question()
    # Writing a secret-named file inside the workspace needs no question (it is snapshotted).
    assert validate_path(raw, ws, write=True).needs_no_question()


def test_symlink_to_a_secret_is_secret(ws: Path) -> None:
    (ws / ".env").write_text("TOKEN=x\n")
    (ws / "harmless.txt").symlink_to(ws / ".env")
    facts = validate_path("harmless.txt", ws)
    assert facts.inside_workspace and facts.secret
    assert ".env" in (facts.secret_reason or "")


def test_secret_named_request_to_a_plain_file_is_secret(ws: Path) -> None:
    (ws / "plain.txt").write_text("x\n")
    (ws / "id_rsa").symlink_to(ws / "plain.txt")
    assert validate_path("id_rsa", ws).secret


def test_not_secret(ws: Path) -> None:
    for raw in ["src/app.py", "environment.md", "keys.txt", "monkey.py"]:
        assert not validate_path(raw, ws).secret, raw


def test_configured_patterns(ws: Path) -> None:
    config = WorkspaceConfig(
        protected_paths=["migrations", "config/prod/*"], secret_patterns=["*.sqlite"]
    )
    assert validate_path("migrations/001.sql", ws, write=True, config=config).protected
    assert validate_path("config/prod/db.yml", ws, write=True, config=config).protected
    assert not validate_path("config/dev/db.yml", ws, write=True, config=config).protected
    assert validate_path("data/app.SQLITE", ws, config=config).secret
    facts = validate_path("migrations/x", ws, write=True, config=config)
    assert "migrations" in (facts.protected_reason or "")


def test_relative_base(ws: Path) -> None:
    facts = validate_path("app.py", ws, base=ws / "src")
    assert facts.resolved == str(ws / "src" / "app.py")


def test_matches_pattern() -> None:
    assert matches_pattern("a/b/c.txt", "b")
    assert matches_pattern("a/b/c.txt", "a/b")
    assert matches_pattern("a/b/c.txt", "./a/b/")
    assert not matches_pattern("a/b/c.txt", "b/c")
    assert not matches_pattern("a/b/c.txt", "")


def test_a_hard_linked_file_is_a_fact(tmp_path: Path, ws: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    os.link(outside, ws / "inner.txt")
    for write in (False, True):
        facts = validate_path("inner.txt", ws, write=write)
        assert facts.valid and facts.inside_workspace and facts.hard_linked
        assert "2 hard links" in (facts.hard_linked_reason or "")
        assert not facts.needs_no_question()
    assert validate_path("inner.txt", ws).to_json()["hardLinked"] is True
    # One name, a folder, a file still to be created: no hard-link fact.
    for raw in ("src/app.py", "src", ".", "new.txt"):
        assert not validate_path(raw, ws).hard_linked, raw
    # Through a symlink, the file it resolves to is what counts.
    (ws / "alias.txt").symlink_to("inner.txt")
    assert validate_path("alias.txt", ws).hard_linked


def test_a_fifo_is_special(ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    facts = validate_path("pipe", ws)
    assert facts.valid and facts.special and "a FIFO" in (facts.special_reason or "")
    assert not facts.needs_no_question()
    assert facts.to_json()["special"] is True
    assert not validate_path("src/app.py", ws).special


def test_the_workspace_root_is_a_fact_and_never_written(ws: Path) -> None:
    for raw in (".", "src/..", str(ws)):
        facts = validate_path(raw, ws, write=True)
        assert facts.workspace_root, raw
        expected = ("write-workspace-root", f"{raw!r} is the workspace folder itself")
        assert facts.refusal() == expected
        assert not facts.needs_no_question()
    assert validate_path(".", ws).needs_no_question()
    assert not validate_path("src", ws, write=True).workspace_root


def unresolvable(ws: Path) -> list[str]:
    """Paths the system refuses to resolve, each for a different reason."""
    chain = ws / "chain"
    chain.mkdir()
    # Longer than Python's recursion limit: realpath recursed once per link.
    for index in range(1200):
        (chain / f"l{index}").symlink_to(f"l{index + 1}")
    paths = ["n" * 300, "src/" + "d" * 256 + "/x.txt", "chain/l0"]
    try:
        os.readlink("/proc/1/root")
    except PermissionError:
        paths.append("/proc/1/root/etc/passwd")
    return paths


def test_a_path_the_system_refuses_is_not_valid(ws: Path) -> None:
    for raw in unresolvable(ws):
        for write in (False, True):
            facts = validate_path(raw, ws, write=write)
            assert not facts.valid, raw
            assert (facts.invalid_reason or "").startswith("it cannot be resolved: "), raw
            assert facts.refusal() is not None and not facts.needs_no_question()
