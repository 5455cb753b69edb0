"""Project units: which folders of a workspace are projects a check can run in.

Discovery only stats and reads small manifests; it never spawns and never
raises for a strange tree. Whatever it does not interpret (a richer glob, an
unreadable manifest, a member outside the workspace) becomes a note, so the
caller can see why a unit is missing instead of getting a silently different
set than the package manager would use.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ax_check.models import Ecosystem

MANIFESTS: tuple[str, ...] = (
    "pyproject.toml",
    "setup.cfg",
    "setup.py",
    "package.json",
    "Cargo.toml",
    "go.mod",
    "CMakeLists.txt",
)
ECOSYSTEM_OF: dict[str, Ecosystem] = {
    "pyproject.toml": "python",
    "setup.cfg": "python",
    "setup.py": "python",
    "package.json": "node",
    "Cargo.toml": "rust",
    "go.mod": "go",
    "CMakeLists.txt": "cmake",
}
CONTAINERS: tuple[str, ...] = ("apps", "packages", "services", "libs", "modules")
# Folders that hold installed or generated trees, never units of their own.
SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "target", "dist", "build"})
MAX_UNITS = 256
MAX_DIR_ENTRIES = 4096
MAX_MANIFEST_BYTES = 1024 * 1024

_GLOB_CHARS = re.compile(r"[*?\[\]{}!]")


@dataclass(frozen=True)
class Unit:
    """A folder holding at least one manifest; ``id`` is its workspace-relative path."""

    id: str
    path: Path
    manifests: tuple[str, ...]

    @property
    def ecosystems(self) -> tuple[Ecosystem, ...]:
        seen: list[Ecosystem] = []
        for manifest in self.manifests:
            ecosystem = ECOSYSTEM_OF[manifest]
            if ecosystem not in seen:
                seen.append(ecosystem)
        return tuple(seen)


@dataclass(frozen=True)
class Discovery:
    workspace: Path
    units: tuple[Unit, ...]
    notes: tuple[str, ...]

    @property
    def ids(self) -> list[str]:
        return [unit.id for unit in self.units]


def read_small(path: Path) -> str | None:
    """A manifest's text, or None when it is missing, too large or unreadable."""
    try:
        if path.stat().st_size > MAX_MANIFEST_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def load_toml(path: Path, notes: list[str] | None = None) -> dict[str, Any] | None:
    text = read_small(path)
    if text is None:
        return None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        if notes is not None:
            notes.append(f"{path.name}: not valid TOML ({exc})")
        return None


def load_json_object(path: Path, notes: list[str] | None = None) -> dict[str, Any] | None:
    text = read_small(path)
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError as exc:
        if notes is not None:
            notes.append(f"{path.name}: not valid JSON ({exc})")
        return None
    return value if isinstance(value, dict) else None


def manifests_in(folder: Path) -> tuple[str, ...]:
    return tuple(name for name in MANIFESTS if (folder / name).is_file())


def _subdirs(folder: Path) -> list[str]:
    try:
        names = sorted(os.listdir(folder))[:MAX_DIR_ENTRIES]
    except OSError:
        return []
    return [
        name
        for name in names
        if not name.startswith(".") and name not in SKIPPED_DIRS and (folder / name).is_dir()
    ]


def _expand(workspace: Path, pattern: str, source: str, notes: list[str]) -> list[str]:
    """A declared member pattern as relative folders: a literal folder or ``dir/*`` only."""
    cleaned = pattern.strip()
    while cleaned.startswith("./"):
        cleaned = cleaned[2:]
    cleaned = cleaned.rstrip("/")
    parts = cleaned.split("/") if cleaned else []
    if not parts or cleaned.startswith("/") or ".." in parts:
        notes.append(f"{source}: member {pattern!r} is not a folder inside the workspace; ignored")
        return []
    if not _GLOB_CHARS.search(cleaned):
        return [cleaned]
    if parts[-1] == "*" and len(parts) > 1 and not _GLOB_CHARS.search("/".join(parts[:-1])):
        parent = "/".join(parts[:-1])
        return [f"{parent}/{name}" for name in _subdirs(workspace / parent)]
    notes.append(
        f"{source}: member pattern {pattern!r} is not interpreted "
        "(only a literal folder or a single trailing /* is); its units are not listed"
    )
    return []


def _string_list(value: Any) -> list[str]:
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


def _pnpm_packages(text: str) -> list[str] | None:
    """The ``packages`` list of pnpm-workspace.yaml (block or flow style), or None."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        match = re.match(r"^packages\s*:\s*(.*)$", line)
        if not match:
            continue
        rest = match.group(1).split("#", 1)[0].strip()
        if rest.startswith("["):
            if not rest.endswith("]"):
                return None
            return [item.strip().strip("'\"") for item in rest[1:-1].split(",") if item.strip()]
        if rest:
            return None
        items = []
        for following in lines[index + 1 :]:
            stripped = following.split("#", 1)[0].strip()
            if not stripped:
                continue
            if not following[:1].isspace() and not stripped.startswith("-"):
                break
            if not stripped.startswith("-"):
                return None
            items.append(stripped[1:].strip().strip("'\""))
        return items
    return []


def _go_work_uses(text: str) -> list[str]:
    uses: list[str] = []
    in_block = False
    for raw in text.splitlines():
        line = raw.split("//", 1)[0].strip()
        if in_block:
            if line == ")":
                in_block = False
            elif line:
                uses.append(line.strip('"'))
        elif re.match(r"^use\s*\($", line):
            in_block = True
        elif line.startswith("use "):
            uses.append(line[4:].strip().strip('"'))
    return uses


def _declared(workspace: Path, notes: list[str]) -> list[str]:
    """Folders the root's own workspace declarations name."""
    found: list[str] = []
    package = load_json_object(workspace / "package.json")
    if package is not None:
        declared = package.get("workspaces")
        if isinstance(declared, dict):
            declared = declared.get("packages")
        for pattern in _string_list(declared):
            found += _expand(workspace, pattern, "package.json workspaces", notes)
    pnpm = read_small(workspace / "pnpm-workspace.yaml")
    if pnpm is not None:
        packages = _pnpm_packages(pnpm)
        if packages is None:
            notes.append(
                "pnpm-workspace.yaml: could not read its packages list; members not listed"
            )
        for pattern in packages or []:
            found += _expand(workspace, pattern, "pnpm-workspace.yaml", notes)
    cargo = load_toml(workspace / "Cargo.toml")
    if cargo is not None:
        members = cargo.get("workspace", {}).get("members") if isinstance(cargo, dict) else None
        for pattern in _string_list(members):
            found += _expand(workspace, pattern, "Cargo.toml [workspace] members", notes)
    go_work = read_small(workspace / "go.work")
    if go_work is not None:
        for pattern in _go_work_uses(go_work):
            found += _expand(workspace, pattern, "go.work use", notes)
    return found


def _candidates(workspace: Path, notes: list[str]) -> list[tuple[str, bool]]:
    """(relative folder, declared by the root) in the order they were found."""
    candidates = [(".", False)]
    candidates += [(member, True) for member in _declared(workspace, notes)]
    for name in _subdirs(workspace):
        candidates.append((name, False))
        if name in CONTAINERS:
            candidates += [(f"{name}/{child}", False) for child in _subdirs(workspace / name)]
    return candidates


def _unit_order(unit_id: str) -> tuple[int, str]:
    return (0, "") if unit_id == "." else (1, unit_id)


def discover_units(workspace: Path) -> Discovery:
    """Every unit of ``workspace`` (a resolved folder), root first, then lexicographic."""
    notes: list[str] = []
    seen: dict[str, Unit] = {}
    visited: set[str] = set()
    for candidate, declared in _candidates(workspace, notes):
        if candidate in visited:
            continue
        visited.add(candidate)
        folder = workspace if candidate == "." else workspace / candidate
        real = Path(os.path.realpath(folder))
        if real != workspace and not str(real).startswith(str(workspace) + os.sep):
            notes.append(f"{candidate}: resolves outside the workspace ({real}); ignored")
            continue
        manifests = manifests_in(folder) if folder.is_dir() else ()
        if not manifests:
            if declared:
                notes.append(f"{candidate}: declared as a member but holds no manifest; not a unit")
            continue
        seen[candidate] = Unit(id=candidate, path=folder, manifests=manifests)
    ordered = sorted(seen.values(), key=lambda unit: _unit_order(unit.id))
    if len(ordered) > MAX_UNITS:
        notes.append(f"{len(ordered)} units found; only the first {MAX_UNITS} are listed")
        ordered = ordered[:MAX_UNITS]
    if not ordered:
        # A workspace without a project still answers: its root, with no recipes.
        ordered = [Unit(id=".", path=workspace, manifests=())]
    return Discovery(workspace=workspace, units=tuple(ordered), notes=tuple(notes))


def normalize_unit_id(raw: str) -> str:
    cleaned = raw.strip()
    while cleaned.startswith("./"):
        cleaned = cleaned[2:]
    cleaned = cleaned.rstrip("/")
    return cleaned or "."
