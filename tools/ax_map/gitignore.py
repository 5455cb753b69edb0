"""``.gitignore`` semantics for a workspace that is not a git repository.

The rules git documents (gitignore(5)) and wildmatch implements, matched the way
``git ls-files --others --exclude-standard`` applies them:

- a blank line and a line starting with ``#`` match nothing; ``\\#`` and ``\\!`` start
  a pattern with that character; trailing spaces are dropped unless escaped
  (``\\ ``); a trailing carriage return is dropped;
- ``!`` negates: a path a pattern excluded is included again (but not below a
  folder that is excluded: the walk never enters it);
- a trailing ``/`` matches folders only;
- a pattern with a ``/`` at its start or in its middle is anchored to the folder of
  its ``.gitignore``; one without matches a name at any depth below it;
- ``*`` and ``?`` never match ``/``; ``[...]`` is a bracket expression (``!`` or
  ``^`` negates, ``[:alpha:]`` classes); ``**/`` at the start or after a ``/``
  matches any number of folders, a trailing ``/**`` everything inside, and any other
  ``**`` is a ``*``;
- the deepest ``.gitignore`` decides first, and within one file the last pattern
  that matches wins.

Like git, a ``.gitignore`` that is a symbolic link is not read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A .gitignore larger than this is not read (its patterns do not apply); git reads any.
GITIGNORE_MAX_BYTES = 1024 * 1024

_CLASSES = {
    "alnum": "a-zA-Z0-9",
    "alpha": "a-zA-Z",
    "blank": " \\t",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": " \\t\\n\\r\\f\\v",
    "upper": "A-Z",
    "xdigit": "0-9A-Fa-f",
}


@dataclass(frozen=True)
class Pattern:
    regex: re.Pattern[str]
    negated: bool
    dir_only: bool
    # Matched against the name alone (no slash in the pattern) or the folder-relative path.
    basename: bool


def parse_line(line: str) -> Pattern | None:
    """One line of a ``.gitignore`` as a pattern, or None when it holds none."""
    line = line.removesuffix("\r")
    if not line or line.startswith("#"):
        return None
    line = _trim_trailing_spaces(line)
    negated = line.startswith("!")
    if negated:
        line = line[1:]
    dir_only = line.endswith("/")
    if dir_only:
        line = line.rstrip("/")
    if not line:
        return None
    basename = "/" not in line
    line = line.removeprefix("/")
    regex = translate(line)
    if regex is None:
        return None
    return Pattern(re.compile(regex, re.S), negated, dir_only, basename)


def _trim_trailing_spaces(line: str) -> str:
    end = len(line)
    while end > 0 and line[end - 1] == " ":
        backslashes = len(line[: end - 1]) - len(line[: end - 1].rstrip("\\"))
        if backslashes % 2 == 1:
            break
        end -= 1
    return line[:end]


def translate(pattern: str) -> str | None:
    """A wildmatch pattern (``WM_PATHNAME``) as a full-match regex; None matches nothing."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char == "*":
            j = i
            while j < n and pattern[j] == "*":
                j += 1
            at_boundary = (i == 0 or pattern[i - 1] == "/") and (j == n or pattern[j] == "/")
            if j - i >= 2 and at_boundary:
                if j == n:
                    out.append(".*")
                else:
                    out.append("(?:.*/)?")
                    j += 1
            else:
                out.append("[^/]*")
            i = j
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[":
            bracket = _bracket(pattern, i)
            if bracket is None:
                # wildmatch: an unterminated bracket expression matches nothing.
                return None
            expression, i = bracket
            out.append(expression)
        elif char == "\\":
            if i + 1 == n:
                # A trailing backslash: wildmatch never matches such a pattern.
                return None
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(char))
            i += 1
    return "".join(out)


def _bracket(pattern: str, start: int) -> tuple[str, int] | None:
    """The regex class for the bracket expression at ``start`` and the index after it."""
    i = start + 1
    n = len(pattern)
    negate = i < n and pattern[i] in "!^"
    if negate:
        i += 1
    items: list[str] = []
    first = True
    while i < n:
        char = pattern[i]
        if char == "]" and not first:
            body = "".join(items)
            # In a path a bracket never matches '/', negated or not; an empty one
            # (only reversed ranges) matches nothing, or anything when negated.
            if not body:
                return ("[^/]" if negate else "(?!)"), i + 1
            return (f"[^/{body}]" if negate else f"(?!/)[{body}]"), i + 1
        first = False
        if char == "[" and pattern.startswith("[:", i):
            end = pattern.find(":]", i + 2)
            if end != -1:
                name = pattern[i + 2 : end]
                cls = _CLASSES.get(name)
                if cls is None:
                    return None
                items.append(cls)
                i = end + 2
                continue
        if char == "\\" and i + 1 < n:
            i += 1
            char = pattern[i]
        if i + 2 < n and pattern[i + 1] == "-" and pattern[i + 2] != "]":
            high = pattern[i + 2]
            if high == "\\" and i + 3 < n:
                high = pattern[i + 3]
                i += 1
            if high >= char:
                items.append(f"{re.escape(char)}-{re.escape(high)}")
            i += 3
            continue
        items.append(re.escape(char))
        i += 1
    return None


@dataclass(frozen=True)
class IgnoreFile:
    """The patterns of one ``.gitignore``, anchored at ``base`` ('' or 'dir/sub/')."""

    base: str
    patterns: tuple[Pattern, ...]

    def decide(self, relative: str, name: str, is_dir: bool) -> bool | None:
        """True excluded, False re-included, None when no pattern here matches."""
        if not relative.startswith(self.base):
            return None
        inner = relative[len(self.base) :]
        for pattern in reversed(self.patterns):
            if pattern.dir_only and not is_dir:
                continue
            if pattern.regex.fullmatch(name if pattern.basename else inner):
                return not pattern.negated
        return None


def parse_file(base: str, data: bytes) -> IgnoreFile:
    text = data.decode("utf-8", "surrogateescape")
    patterns = tuple(p for p in map(parse_line, text.split("\n")) if p is not None)
    return IgnoreFile(base, patterns)


def is_ignored(chain: tuple[IgnoreFile, ...], relative: str, is_dir: bool) -> bool:
    """Does the chain of ``.gitignore`` files (root first) exclude ``relative``?"""
    name = relative.rsplit("/", 1)[-1]
    for ignore in reversed(chain):
        verdict = ignore.decide(relative, name, is_dir)
        if verdict is not None:
            return verdict
    return False
