"""Project units: which folders of a workspace are projects a check can run in.

Discovery only stats and reads small manifests; it never spawns and never
raises for a strange tree. Whatever it does not interpret (a richer glob, an
unreadable manifest, a member outside the workspace) becomes a note, so the
caller can see why a unit is missing instead of getting a silently different
set than the package manager would use.

Without a named workspace the search starts in the current directory and walks
up to the nearest folder with a manifest, as pytest, cargo and npm do; it stops
at the git root and never climbs into ``/`` or the home folder. A named
workspace (``-C``) is pinned: nothing above it is ever looked at as a unit.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ax_check.models import Ecosystem
from libcommon.paths import resolve_workspace
from libcommon.pyproject_env import read_small

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
# Folders named like this hold a project's tooling, not a project competing with it.
SATELLITE_DIRS: dict[str, str] = {
    "fuzz": "a fuzzing harness",
    "docs": "a documentation site",
    "doc": "a documentation site",
    "documentation": "a documentation site",
    "website": "a documentation site",
    "examples": "example code",
    "example": "example code",
    "benches": "a benchmark harness",
    "bench": "a benchmark harness",
    "benchmarks": "a benchmark harness",
    "benchmark": "a benchmark harness",
}
# A package.json depending on one of these builds a documentation site, whatever its folder.
DOCS_GENERATORS: tuple[str, ...] = (
    "@docusaurus/core",
    "vitepress",
    "vuepress",
    "@vuepress/core",
    "nextra",
    "@astrojs/starlight",
    "docsify-cli",
)
MAX_UNITS = 256
MAX_DIR_ENTRIES = 4096

_GLOB_CHARS = re.compile(r"[*?\[\]{}!]")


@dataclass(frozen=True)
class Unit:
    """A folder holding at least one manifest; ``id`` is its workspace-relative path."""

    id: str
    path: Path
    manifests: tuple[str, ...]
    # Why the unit does not compete for the default (a tooling satellite, or a folder the
    # root's own manifest leaves out); None for a unit that does. It can still be named.
    satellite: str | None = None
    # The units this unit's manifest declares as its workspace members (the ones found).
    members: tuple[Unit, ...] = ()

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


@dataclass(frozen=True)
class Location:
    """Where units are looked for, and how that folder was found."""

    workspace: Path
    # Where the search began: the current directory, or the named workspace.
    start: Path
    # True when the caller named the workspace (-C): it is then never left.
    named: bool
    why: str
    # A named workspace without a manifest: the nearest folder above it that has one.
    above: Path | None = None


@dataclass(frozen=True)
class Choice:
    """The unit a call runs in, and why that one."""

    unit: Unit
    why: str
    cure: str | None = None


class UnitRefused(Exception):
    """No unit can be chosen for the call: the caller must name one."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


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


def _strip_jsonc(text: str) -> str:
    """JSON with comments and trailing commas (tsconfig's dialect) as plain JSON."""
    out: list[str] = []
    index, length = 0, len(text)
    while index < length:
        char = text[index]
        if char == '"':
            end = index + 1
            while end < length and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[index : end + 1])
            index = end + 1
        elif text.startswith("//", index):
            newline = text.find("\n", index)
            index = length if newline < 0 else newline
        elif text.startswith("/*", index):
            close = text.find("*/", index + 2)
            index = length if close < 0 else close + 2
        else:
            if char in "}]":
                # A comma before a closing bracket (across blanks) is a trailing comma.
                while out and out[-1].isspace():
                    out.pop()
                if out and out[-1] == ",":
                    out.pop()
            out.append(char)
            index += 1
    return "".join(out)


def load_jsonc(path: Path) -> dict[str, Any] | None:
    """A tsconfig-style file (comments and trailing commas allowed) as an object, or None."""
    text = read_small(path)
    if text is None:
        return None
    try:
        value = json.loads(_strip_jsonc(text))
    except ValueError:
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


@dataclass(frozen=True)
class Declared:
    """One kind of workspace a folder declares: where, and the member folders it names."""

    source: str
    folders: list[str]
    # False when a pattern was not interpreted: folders then may miss some members.
    complete: bool


@dataclass
class Declarations:
    """What a folder's own manifests say about the folders below it."""

    # Present when the folder declares a workspace of that kind at all, even an empty one.
    members: dict[Ecosystem, Declared] = field(default_factory=dict)
    # Folders the root's Cargo workspace excludes.
    cargo_excluded: list[str] = field(default_factory=list)

    def declares(self, relative: str) -> str | None:
        """Where ``relative`` is declared as a member, or None."""
        for declared in self.members.values():
            if relative in declared.folders:
                return declared.source
        return None


def _expand_all(
    folder: Path, patterns: list[str], source: str, notes: list[str]
) -> tuple[list[str], bool]:
    """Every pattern expanded, and whether each one was interpreted."""
    before = len(notes)
    found: list[str] = []
    for pattern in patterns:
        found += _expand(folder, pattern, source, notes)
    return found, len(notes) == before


def _declared(folder: Path, notes: list[str]) -> Declarations:
    """The members (and exclusions) the folder's own workspace declarations name."""
    found = Declarations()
    package = load_json_object(folder / "package.json")
    node_sources: list[str] = []
    node_folders: list[str] = []
    node_complete = True
    if package is not None and "workspaces" in package:
        declared = package.get("workspaces")
        if isinstance(declared, dict):
            declared = declared.get("packages")
        listed, node_complete = _expand_all(
            folder, _string_list(declared), "package.json workspaces", notes
        )
        node_sources.append("package.json workspaces")
        node_folders += listed
    pnpm = read_small(folder / "pnpm-workspace.yaml")
    if pnpm is not None:
        packages = _pnpm_packages(pnpm)
        if packages is None:
            notes.append(
                "pnpm-workspace.yaml: could not read its packages list; members not listed"
            )
        else:
            listed, complete = _expand_all(folder, packages, "pnpm-workspace.yaml", notes)
            node_sources.append("pnpm-workspace.yaml")
            node_folders += listed
            node_complete = node_complete and complete
    if node_sources:
        found.members["node"] = Declared(" and ".join(node_sources), node_folders, node_complete)
    cargo = load_toml(folder / "Cargo.toml")
    workspace = cargo.get("workspace") if cargo is not None else None
    if isinstance(workspace, dict):
        source = "Cargo.toml [workspace] members"
        listed, complete = _expand_all(
            folder, _string_list(workspace.get("members")), source, notes
        )
        found.members["rust"] = Declared(source, listed, complete)
        found.cargo_excluded, _ = _expand_all(
            folder, _string_list(workspace.get("exclude")), "Cargo.toml [workspace] exclude", notes
        )
    go_work = read_small(folder / "go.work")
    if go_work is not None:
        listed, complete = _expand_all(folder, _go_work_uses(go_work), "go.work use", notes)
        found.members["go"] = Declared("go.work use", listed, complete)
    return found


def _candidates(workspace: Path, declared: Declarations) -> list[tuple[str, bool]]:
    """(relative folder, declared by the root) in the order they were found."""
    candidates = [(".", False)]
    for members in declared.members.values():
        candidates += [(member, True) for member in members.folders]
    for name in _subdirs(workspace):
        candidates.append((name, False))
        if name in CONTAINERS:
            candidates += [(f"{name}/{child}", False) for child in _subdirs(workspace / name)]
    return candidates


def _unit_order(unit_id: str) -> tuple[int, str]:
    return (0, "") if unit_id == "." else (1, unit_id)


def _under(relative: str, folders: list[str]) -> str | None:
    for folder in folders:
        if relative == folder or relative.startswith(folder + "/"):
            return folder
    return None


def _python_excludes(pyproject: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(where, pattern, how it matches) for the folders the root's Python tools leave out."""
    found: list[tuple[str, str, str]] = []

    def table(*keys: str) -> Any:
        value: Any = pyproject
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        return value

    for key in ("exclude", "extend-exclude"):
        found += [
            (f"[tool.ruff] {key}", p, "glob") for p in _string_list(table("tool", "ruff", key))
        ]
    norecurse = table("tool", "pytest", "ini_options", "norecursedirs")
    if isinstance(norecurse, str):
        norecurse = norecurse.split()
    found += [
        ("[tool.pytest.ini_options] norecursedirs", p, "name") for p in _string_list(norecurse)
    ]
    mypy = table("tool", "mypy", "exclude")
    for pattern in [mypy] if isinstance(mypy, str) else _string_list(mypy):
        found.append(("[tool.mypy] exclude", pattern, "regex"))
    found += [
        ("[tool.uv.workspace] exclude", p, "glob")
        for p in _string_list(table("tool", "uv", "workspace", "exclude"))
    ]
    return found


def _matches(relative: str, pattern: str, how: str) -> bool:
    name = relative.rsplit("/", 1)[-1]
    if how == "name":
        return fnmatch.fnmatchcase(name, pattern)
    if how == "regex":
        try:
            return re.search(pattern, relative + "/") is not None
        except re.error:
            return False
    cleaned = pattern.strip().removeprefix("./").rstrip("/")
    return fnmatch.fnmatchcase(relative, cleaned) or fnmatch.fnmatchcase(name, cleaned)


def _tooling(folder: Path, manifests: tuple[str, ...]) -> str | None:
    """Why the folder is a tool's satellite by what it holds, or None."""
    if "Cargo.toml" in manifests:
        cargo = load_toml(folder / "Cargo.toml") or {}
        metadata = cargo.get("package", {}).get("metadata", {}) if isinstance(cargo, dict) else {}
        if isinstance(metadata, dict) and metadata.get("cargo-fuzz") is True:
            return "a cargo-fuzz target crate (its Cargo.toml sets package.metadata.cargo-fuzz)"
    if "package.json" in manifests:
        package = load_json_object(folder / "package.json") or {}
        for key in ("dependencies", "devDependencies"):
            deps = package.get(key)
            for generator in DOCS_GENERATORS:
                if isinstance(deps, dict) and generator in deps:
                    return f"a documentation site (its package.json depends on {generator})"
    return None


def _satellite(
    relative: str,
    folder: Path,
    manifests: tuple[str, ...],
    declared: Declarations,
    root_pyproject: dict[str, Any] | None,
) -> str | None:
    """Why a folder the root does not declare is not a unit competing with the root's."""
    tooling = _tooling(folder, manifests)
    if tooling is not None:
        return tooling
    ecosystems = {ECOSYSTEM_OF[name] for name in manifests}
    excluded = _under(relative, declared.cargo_excluded)
    if excluded is not None and "rust" in ecosystems:
        return f"excluded by the root's Cargo.toml [workspace] exclude ({excluded!r})"
    for ecosystem in sorted(ecosystems & declared.members.keys()):
        members = declared.members[ecosystem]
        if members.complete:
            return f"not a member of the workspace the root declares ({members.source})"
    if root_pyproject is not None and "python" in ecosystems:
        for where, pattern, how in _python_excludes(root_pyproject):
            if _matches(relative, pattern, how):
                return f"excluded by the root's pyproject.toml {where} ({pattern!r})"
    name = relative.rsplit("/", 1)[-1]
    if name in SATELLITE_DIRS:
        return f"{SATELLITE_DIRS[name]} (its folder is named {name})"
    return None


def discover_units(workspace: Path) -> Discovery:
    """Every unit of ``workspace`` (a resolved folder), root first, then lexicographic."""
    notes: list[str] = []
    declared = _declared(workspace, notes)
    root_pyproject = load_toml(workspace / "pyproject.toml")
    seen: dict[str, Unit] = {}
    visited: set[str] = set()
    member_ids: list[str] = []
    for candidate, is_member in _candidates(workspace, declared):
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
            if is_member:
                notes.append(f"{candidate}: declared as a member but holds no manifest; not a unit")
            continue
        satellite = None
        if candidate != "." and not is_member:
            satellite = _satellite(candidate, folder, manifests, declared, root_pyproject)
        if is_member:
            member_ids.append(candidate)
        seen[candidate] = Unit(candidate, folder, manifests, satellite)
    root = seen.get(".")
    members = tuple(seen[member] for member in dict.fromkeys(member_ids) if member != ".")
    if root is not None and members:
        seen["."] = Unit(root.id, root.path, root.manifests, None, members)
    ordered = sorted(seen.values(), key=lambda unit: _unit_order(unit.id))
    if len(ordered) > MAX_UNITS:
        notes.append(f"{len(ordered)} units found; only the first {MAX_UNITS} are listed")
        ordered = ordered[:MAX_UNITS]
    if not ordered:
        # A workspace without a project still answers: its root, with no recipes.
        ordered = [Unit(id=".", path=workspace, manifests=())]
    return Discovery(workspace=workspace, units=tuple(ordered), notes=tuple(notes))


def git_root(folder: Path) -> Path | None:
    """The nearest folder at or above ``folder`` holding ``.git`` (a folder, or a file)."""
    for candidate in (folder, *folder.parents):
        if os.path.lexists(candidate / ".git"):
            return candidate
    return None


def _climb(start: Path, home: Path | None) -> tuple[list[Path], Path | None]:
    """``start`` and the folders above it a search may look at, and the git root it stops at.

    The walk stops at the git root and never enters ``/`` or the home folder, where stray
    manifests live that belong to no project.
    """
    ceiling = git_root(start)
    folders = [start]
    for parent in start.parents:
        if folders[-1] == ceiling or parent == Path(parent.anchor) or parent == home:
            break
        folders.append(parent)
    return folders, ceiling


def _home(environ: Mapping[str, str] | None) -> Path | None:
    raw = (os.environ if environ is None else environ).get("HOME")
    return Path(os.path.realpath(raw)) if raw else None


def _stopped(ceiling: Path | None) -> str:
    return f"the git root {ceiling}" if ceiling is not None else "the home folder or /"


def locate(
    named: str | os.PathLike[str] | None,
    cwd: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Location:
    """The workspace a call means: the named one, else found walking up from ``cwd``."""
    home = _home(environ)
    if named is not None:
        workspace = resolve_workspace(named)
        above = None
        if not manifests_in(workspace):
            folders, _ceiling = _climb(workspace, home)
            above = next((folder for folder in folders[1:] if manifests_in(folder)), None)
        return Location(workspace, workspace, True, "the workspace named with -C", above)
    start = resolve_workspace(cwd)
    folders, ceiling = _climb(start, home)
    found = next((folder for folder in folders if manifests_in(folder)), None)
    if found is None:
        return Location(
            start,
            start,
            False,
            f"the current directory (no folder at or above it up to {_stopped(ceiling)} "
            "holds a manifest)",
        )
    manifests = ", ".join(manifests_in(found))
    why = (
        "the current directory, which holds a manifest"
        if found == start
        else f"the nearest folder with a manifest ({manifests}) walking up from the current "
        f"directory {start}; the walk stops at {_stopped(ceiling)}"
    )
    for above in folders[folders.index(found) + 1 :]:
        source = _declared(above, []).declares(found.relative_to(above).as_posix())
        if source is not None:
            why += f"; {above} declares {found.relative_to(above)} as a member ({source})"
            return Location(above, start, False, why)
    return Location(found, start, False, why)


def _containing(units: tuple[Unit, ...], start: Path) -> Unit | None:
    """The deepest unit whose folder holds ``start``."""
    holding = [
        unit
        for unit in units
        if unit.manifests and (start == unit.path or unit.path in start.parents)
    ]
    return max(holding, key=lambda unit: len(unit.path.parts), default=None)


def choose_unit(discovery: Discovery, location: Location | None, project: str | None) -> Choice:
    """The unit a call means; a guess between competing units is refused, never made."""
    units = discovery.units
    listed = ", ".join(discovery.ids)
    if project is not None:
        wanted = normalize_unit_id(project)
        for unit in units:
            if unit.id == wanted:
                scope = " (the whole workspace it declares)" if unit.members else ""
                return Choice(unit, f"named with --project{scope}")
        raise UnitRefused(
            f"no unit {project!r} in the workspace {discovery.workspace}; its units are: {listed}",
            hint="a unit is named by its path relative to the workspace; "
            "`ax-check detect` lists them",
        )
    hint = f"e.g. --project {units[0].id}"
    roots = [unit for unit in units if unit.members]
    if roots:
        hint = (
            f"--project {roots[0].id} runs the whole workspace it declares; "
            f"--project {roots[0].members[0].id} runs one member"
        )
    if location is not None and location.start != discovery.workspace:
        inside = _containing(units, location.start)
        if inside is not None and not inside.members:
            return Choice(inside, f"the current directory {location.start} is inside it")
    if len(units) == 1:
        only = units[0]
        return Choice(only, "the only unit") if only.manifests else _no_manifest(only, location)
    competing = [unit for unit in units if unit.satellite is None]
    if len(competing) == 1 and not competing[0].members:
        skipped = "; ".join(f"{unit.id} is {unit.satellite}" for unit in units if unit.satellite)
        return Choice(competing[0], f"the only unit that is not a satellite ({skipped})")
    satellites = [unit.id for unit in units if unit.satellite]
    aside = f" (satellites: {', '.join(satellites)})" if satellites else ""
    raise UnitRefused(
        f"the workspace holds {len(units)} units ({listed}){aside}; name one with --project",
        hint=hint,
    )


def explain(location: Location, choice: Choice) -> str:
    """One sentence: which unit and why, and how the workspace was found when it was."""
    if location.named or (location.start == location.workspace and choice.unit.manifests):
        return choice.why
    return f"{choice.why}; workspace {location.workspace}: {location.why}"


def _no_manifest(unit: Unit, location: Location | None) -> Choice:
    if location is not None and location.above is not None:
        return Choice(
            unit,
            f"the workspace holds no manifest; the nearest folder above it with one, "
            f"{location.above}, is outside the workspace named with -C",
            cure=f"run with -C {location.above}, or without -C from inside it",
        )
    return Choice(unit, "the workspace holds no manifest")


def normalize_unit_id(raw: str) -> str:
    cleaned = raw.strip()
    while cleaned.startswith("./"):
        cleaned = cleaned[2:]
    cleaned = cleaned.rstrip("/")
    return cleaned or "."
