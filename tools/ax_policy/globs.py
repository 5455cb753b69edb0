"""Filename expansion of an unquoted glob word, done the way the shell will do it.

A reviewed command runs as ``bash --noprofile --norc -c STRING`` with an
environment ax-exec has cleared of ``BASHOPTS``, ``SHELLOPTS`` and
``GLOBIGNORE``, so bash expands a glob with its default options: ``*``, ``?``
and ``[...]`` match within one path component, a name starting with ``.``
only when the pattern's component starts with ``.``, no ``**`` recursion
(``globstar`` is off, so ``**`` is ``*``), case-sensitive, and a pattern that
matches nothing is left as it is written (``nullglob`` and ``failglob`` are
off). dash (``sh -c``) expands the same way.

``expand`` reproduces that, and refuses (``NotSimple``) what it could get wrong
or what would lead out of the workspace:

- a pattern starting with ``/``, a ``..`` component, or a component that may
  match ``.`` or ``..`` (bash before 5.2 and dash give ``.*`` both);
- a bracket expression with a character class, equivalence class or
  collating symbol (``[[:alpha:]]``: their meaning depends on the locale), or a
  range written backwards;
- a folder it would list, or a name it would match, that resolves outside the
  workspace (through a symlink);
- a name that is not printable ASCII in a folder it lists: which names ``?``
  and ranges match, and the order of the matches, then depend on the locale;
- more than ``MAX_GLOB_SCAN_ENTRIES`` folder entries looked through, or more
  than ``MAX_GLOB_MATCHES`` names matched, for one command.

``dotglob=True`` expands as if ``shopt -s dotglob`` were on (``*`` then also
matches names starting with ``.``); the review proves a glob only when both
expansions are proven, so an option set where the review cannot see it (a
startup file, a caller that runs the string elsewhere) does not widen it.

Matches are returned in byte order. bash sorts them by the locale's collation,
which may differ; the review accounts for that (see command_review).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from libcommon.paths import is_within

from .shellwords import NotSimple

MAX_GLOB_MATCHES = 256
MAX_GLOB_SCAN_ENTRIES = 10_000

_MAGIC = frozenset("*?[")


@dataclass
class Budget:
    """What is left of the caps for one command's globs."""

    entries: int = MAX_GLOB_SCAN_ENTRIES
    matches: int = MAX_GLOB_MATCHES


def expand(pattern: str, cwd: Path, workspace: Path, *, dotglob: bool, budget: Budget) -> list[str]:
    """The words the shell makes of the unquoted glob word ``pattern``, run in ``cwd``."""
    if pattern.startswith("/"):
        raise NotSimple(f"the glob {pattern!r} starts at the root, outside the workspace")
    components = pattern.split("/")
    trailing = len(components) > 1 and components[-1] == ""
    if trailing:
        components.pop()
    if "" in components:
        raise NotSimple(f"the glob {pattern!r} has an empty folder name (//)")
    found: list[tuple[str, Path]] = [("", cwd)]
    for index, component in enumerate(components):
        if component == "..":
            raise NotSimple(f"the glob {pattern!r} climbs out of its folder with ..")
        last = index == len(components) - 1
        if not _MAGIC & set(component):
            found = _literal(found, component, last=last and not trailing)
        else:
            regex = _compile(pattern, component)
            # Only a component written with a leading . matches . and .., dotglob or not.
            explicit = component.startswith(".")
            if explicit and (regex.fullmatch(".") or regex.fullmatch("..")):
                raise NotSimple(f"the glob {pattern!r} may match . or .. (the parent folder)")
            hidden = dotglob or explicit
            found = _listed(pattern, found, regex, hidden, workspace, budget)
        if trailing or not last:
            found = [(shown, path) for shown, path in found if path.is_dir()]
        if not found:
            # Nothing matches: the shell passes the word on as it is written.
            return [pattern]
    words = []
    for shown, path in found:
        real = Path(os.path.realpath(path))
        if not is_within(real, workspace):
            raise NotSimple(f"the glob {pattern!r} matches {shown}, which leads outside to {real}")
        words.append(shown + "/" if trailing else shown)
    budget.matches -= len(words)
    if budget.matches < 0:
        raise NotSimple(f"the globs match more than {MAX_GLOB_MATCHES} names")
    return sorted(words)


def _join(shown: str, name: str) -> str:
    return f"{shown}/{name}" if shown else name


def _literal(found: list[tuple[str, Path]], name: str, *, last: bool) -> list[tuple[str, Path]]:
    joined = [(_join(shown, name), path / name) for shown, path in found]
    # A literal last name is kept only where it exists (a link to nothing included).
    return [(shown, path) for shown, path in joined if not last or os.path.lexists(path)]


def _listed(
    pattern: str,
    found: list[tuple[str, Path]],
    regex: re.Pattern[str],
    hidden: bool,
    workspace: Path,
    budget: Budget,
) -> list[tuple[str, Path]]:
    matched: list[tuple[str, Path]] = []
    for shown, folder in found:
        real = Path(os.path.realpath(folder))
        if not is_within(real, workspace):
            raise NotSimple(
                f"the glob {pattern!r} looks inside {shown or '.'}, which leads outside the "
                f"workspace to {real}"
            )
        try:
            names = os.listdir(folder)
        except OSError:
            # The shell skips a folder it cannot read, as if nothing matched there.
            continue
        budget.entries -= len(names)
        if budget.entries < 0:
            raise NotSimple(
                f"the globs look through more than {MAX_GLOB_SCAN_ENTRIES} folder entries"
            )
        for name in names:
            if not (name.isascii() and name.isprintable()):
                raise NotSimple(
                    f"the glob {pattern!r} looks through {shown or '.'}, which holds the name "
                    f"{name!r}: what matches it and in which order depends on the locale"
                )
            if name.startswith(".") and not hidden:
                continue
            if regex.fullmatch(name):
                matched.append((_join(shown, name), folder / name))
    return matched


def _compile(pattern: str, component: str) -> re.Pattern[str]:
    """One path component of a glob as a regular expression (bash's default matching)."""
    out: list[str] = []
    index = 0
    while index < len(component):
        char = component[index]
        index += 1
        if char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        elif char == "[":
            close = component.find("]", index + 1 if component[index : index + 1] == "]" else index)
            if close < 0:
                # An unclosed bracket is an ordinary character.
                out.append(re.escape(char))
                continue
            out.append(_bracket(pattern, component[index:close]))
            index = close + 1
        else:
            out.append(re.escape(char))
    return re.compile("".join(out), re.DOTALL)


def _bracket(pattern: str, body: str) -> str:
    """``[body]``: characters and ranges, in code point order (bash's globasciiranges)."""
    if "[" in body:
        raise NotSimple(
            f"the glob {pattern!r} uses a character class or collating symbol, whose meaning "
            "depends on the locale"
        )
    members: list[str] = []
    index = 0
    while index < len(body):
        first = body[index]
        if index + 2 < len(body) and body[index + 1] == "-":
            last = body[index + 2]
            if ord(last) < ord(first):
                raise NotSimple(f"the glob {pattern!r} has the backwards range {first}-{last}")
            members.append(f"{re.escape(first)}-{re.escape(last)}")
            index += 3
            continue
        members.append(re.escape(first))
        index += 1
    return "[" + "".join(members) + "]"
