"""The map as text, under a hard character budget.

Sections, in order: a coverage header (what was indexed, what was only listed and
why, partial or complete), the uncommitted files, the directory tree with the
number of files under each folder, the ranked key files with their top symbols,
and a footer naming the retrieval tool. The tree is the recall backstop: ranking
decides which files get detail, but every top-level folder is named, and a folder
whose level is collapsed still says how many folders lie below it.

The budget is hard: ``len(text) <= chars`` for every ``chars``. The number of key
files shown is found by binary search (as Aider fits its map); the other sections
each have a ladder of richer-to-plainer forms and step down it when the budget is
short. No line numbers are printed: those come only from live reads (retrieve).
Every path goes through ``printable``; symbol names are identifiers by the model's
contract and go through it too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import islice

from .model import Coverage, Snapshot
from .printable import printable
from .rank import Ranked
from .structure import is_uncommitted

DEFAULT_MAP_CHARS = 16_000
# Shares of the budget the tree and the uncommitted list may take before the key
# files are fitted; what the key files leave over goes back to them.
TREE_SHARE = 0.4
UNCOMMITTED_SHARE = 0.1
UNCOMMITTED_SHOWN_MAX = 50
SYMBOLS_PER_FILE_MAX = 8
# The most key files a map lists: rank(..., limit=KEY_FILES_MAX) is all it needs.
KEY_FILES_MAX = 1_000
LISTED_REASONS_SHOWN_MAX = 8
LANGUAGES_SHOWN_MAX = 8
TREE_LINE_CHARS = 100
RETRIEVE_TOOL = "retrieve"


@dataclass(frozen=True)
class Rendered:
    """The map's text, the sha256 of exactly that text (UTF-8), and how many key files it shows."""

    text: str
    sha256: str
    files_shown: int


@dataclass
class _Folder:
    files: int = 0
    own_files: int = 0
    below: int = 0
    children: dict[str, _Folder] = field(default_factory=dict)


class _Forms:
    """A section's forms, richest first: each one's length known up front, its text made
    only when chosen (a deep tree has as many forms as levels)."""

    def __init__(self, lengths: list[int], make: Callable[[int], str]) -> None:
        self.lengths = lengths
        self.make = make

    @classmethod
    def of(cls, texts: list[str]) -> _Forms:
        return cls([len(text) for text in texts], texts.__getitem__)

    def fit(self, budget: float) -> str:
        """The richest form no longer than ``budget``, else the plainest."""
        for position, length in enumerate(self.lengths):
            if length <= budget:
                return self.make(position)
        return self.plainest()

    def plainest(self) -> str:
        return self.make(len(self.lengths) - 1)


def _count(number: int, word: str) -> str:
    return f"{number:,} {word}" + ("" if number == 1 else "s")


def _listing(counts: dict[str, int], shown: int) -> str:
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    parts = [f"{printable(name)} {number:,}" for name, number in ordered[:shown]]
    if len(ordered) > shown:
        parts.append(f"{len(ordered) - shown:,} more")
    return ", ".join(parts)


def _headers(coverage: Coverage, git: bool, exact: bool, unlinked: int) -> list[str]:
    """The coverage header, richest first. ``unlinked``: indexed files with their
    definitions only (the build's budget ran out before their references and imports)."""
    listed = sum(coverage.listed.values())
    partial = coverage.partial or not exact
    state = "PARTIAL" if partial else "complete"
    first = f"# Repository map: {_count(coverage.total, 'file')}, {coverage.indexed:,} indexed"
    lines = [first]
    if coverage.languages:
        lines[0] += f" ({_listing(coverage.languages, LANGUAGES_SHOWN_MAX)})"
    if listed:
        reasons = _listing(coverage.listed, LISTED_REASONS_SHOWN_MAX)
        lines.append(f"Listed but not read: {listed:,} ({reasons}).")
    if coverage.pending:
        lines.append(
            f"PARTIAL: {_count(coverage.pending, 'file')} not indexed yet (the build ran out "
            "of time; the next build continues)."
        )
    if coverage.capped:
        lines.append(
            f"PARTIAL: {_count(coverage.capped, 'more file')} beyond the inventory cap, "
            "not in this map."
        )
    if not exact:
        lines.append(
            "PARTIAL: the listing stopped early (see `ax-map stats`); the workspace holds "
            "more files than are counted here."
        )
    if unlinked:
        lines.append(
            f"Links incomplete: {_count(unlinked, 'file')} with definitions only (their "
            "references and imports are not read yet; the next build reads them): the "
            "ranking does not link them."
        )
    if not partial:
        lines.append("Coverage is complete.")
    if not git:
        lines.append("Not a git repository: nothing is known about uncommitted changes.")
    short = f"# Repository map: {coverage.total:,} files, {coverage.indexed:,} indexed, {state}."
    return ["\n".join(lines) + "\n\n", short + "\n\n"]


def _uncommitted(snapshot: Snapshot) -> list[str]:
    """The uncommitted-files section, richest first; [""] when there is nothing to say."""
    changed = sorted(
        (f for f in snapshot.files if is_uncommitted(f, snapshot.git)), key=lambda f: f.path
    )
    if not changed:
        return [""]
    title = f"## Uncommitted changes ({len(changed):,})"
    forms = []
    for shown in _ladder(min(len(changed), UNCOMMITTED_SHOWN_MAX)):
        lines = [title]
        for entry in changed[:shown]:
            how = "modified" if entry.tracked else "new, not committed"
            lines.append(f"- {printable(entry.path)} ({how})")
        if len(changed) > shown:
            lines.append(f"- … and {len(changed) - shown:,} more")
        forms.append("\n".join(lines) + "\n\n")
    forms.append(f"## Uncommitted changes: {_count(len(changed), 'file')}\n\n")
    return forms


def _ladder(top: int) -> list[int]:
    """``top``, then halving down to 1: the steps a list shrinks by."""
    steps = []
    while top > 0:
        steps.append(top)
        top //= 2
    return steps


def _tree(snapshot: Snapshot) -> _Folder:
    root = _Folder()
    for entry in snapshot.files:
        folder = root
        folder.files += 1
        for part in entry.path.split("/")[:-1]:
            folder = folder.children.setdefault(part, _Folder())
            folder.files += 1
        folder.own_files += 1
    return root


def _rows(root: _Folder) -> list[tuple[int, str, _Folder]]:
    """Every folder as (depth, its line, it) in display order; without recursion, since
    a repository may nest folders deeper than Python's recursion limit."""
    rows: list[tuple[int, str, _Folder]] = []
    stack = [(0, name, root.children[name]) for name in sorted(root.children, reverse=True)]
    while stack:
        depth, name, folder = stack.pop()
        rows.append((depth, f"{'  ' * depth}- {printable(name)}/ {folder.files:,}", folder))
        stack += [(depth + 1, n, folder.children[n]) for n in sorted(folder.children, reverse=True)]
    for _, _, folder in reversed(rows):
        folder.below = sum(1 + child.below for child in folder.children.values())
    return rows


def _collapsed(folder: _Folder) -> str:
    return f" (+{_count(folder.below, 'folder')} below)"


def _trees(snapshot: Snapshot) -> _Forms:
    """The directory tree, deepest first, then every top-level folder on shared lines."""
    root = _tree(snapshot)
    title = "## Directory tree (files under each folder, all levels below included)"
    top = f"- ./ {_count(root.files, 'file')}, {root.own_files:,} at the top level"
    head = f"{title}\n{top}"
    if not root.children:
        return _Forms.of([f"{head}\n\n"])
    rows = _rows(root)
    levels = 1 + max(depth for depth, _, _ in rows)
    # Per depth: the length of its lines, and of the notes they get when collapsed.
    lines = [0] * levels
    notes = [0] * levels
    for depth, line, folder in rows:
        lines[depth] += len(line) + 1
        if folder.children:
            notes[depth] += len(_collapsed(folder))

    def tree(shown: int) -> str:
        kept = [head]
        for depth, line, folder in rows:
            if depth < shown:
                note = _collapsed(folder) if depth == shown - 1 and folder.children else ""
                kept.append(line + note)
        return "\n".join(kept) + "\n\n"

    depths = list(range(levels, 0, -1))
    lengths = [len(head) + sum(lines[:shown]) + notes[shown - 1] + 2 for shown in depths]
    compact = _top_level(root)
    return _Forms(
        [*lengths, *compact.lengths],
        lambda i: tree(depths[i]) if i < len(depths) else compact.make(i - len(depths)),
    )


def _top_level(root: _Folder) -> _Forms:
    """Every top-level folder on shared lines, with its files and the folders below it."""
    names = []
    for name in sorted(root.children):
        child = root.children[name]
        below = f" +{child.below:,}" if child.below else ""
        names.append(f"{printable(name)}/ {child.files:,}{below}")
    title = "## Top-level folders (files under each; +N: how many folders lie below it)"
    forms = []
    for shown in _ladder(len(names)):
        rest = len(names) - shown
        more = [f"… and {_count(rest, 'more folder')}, not named for space"] if rest else []
        forms.append("\n".join([title, *_wrapped([*names[:shown], *more])]) + "\n\n")
    return _Forms.of(forms)


def _wrapped(items: list[str]) -> list[str]:
    """``items`` joined by commas into lines of about TREE_LINE_CHARS."""
    lines: list[str] = []
    line = ""
    for item in items:
        if line and len(line) + len(item) + 2 > TREE_LINE_CHARS:
            lines.append(line + ",")
            line = item
        else:
            line = f"{line}, {item}" if line else item
    return [*lines, line] if line else lines


def _key_file(entry: Ranked) -> str:
    symbols = ", ".join(
        f"{printable(s.kind)} {printable(s.name)}" for s in entry.symbols[:SYMBOLS_PER_FILE_MAX]
    )
    return f"- {printable(entry.path)}" + (f": {symbols}" if symbols else "")


_KEY_TITLE = "## Key files, most relevant first, with their top definitions"


def _key_files(lines: Sequence[str], shown: int) -> str:
    if shown == 0:
        return ""
    return _KEY_TITLE + "\n" + "\n".join(lines[:shown]) + "\n\n"


def _footers() -> list[str]:
    return [
        f"Use `{RETRIEVE_TOOL}` with a symbol name or a few words for ranked files with the "
        "matching definitions, their line numbers and excerpt lines read live; this map has "
        "no line numbers and may be older than the files.\n",
        f"More: `{RETRIEVE_TOOL}`.\n",
    ]


def _fitting(lines: Sequence[str], room: int) -> int:
    """The most key-file lines (a prefix of ``lines``) whose section fits ``room``."""
    low, high = 0, len(lines)
    while low < high:
        middle = (low + high + 1) // 2
        if len(_key_files(lines, middle)) <= room:
            low = middle
        else:
            high = middle - 1
    return low


def _drawn(ranked: Iterable[Ranked], budget: int) -> list[str]:
    """Key-file lines, drawn until their section alone would pass ``budget``.

    Every section that could fit the room left for key files (which is less than the
    budget) is a prefix of these, so ``_fitting`` finds the same count as it would over
    every ranked file.
    """
    lines: list[str] = []
    size = len(_KEY_TITLE) + 2
    for entry in islice(ranked, KEY_FILES_MAX):
        line = _key_file(entry)
        lines.append(line)
        size += len(line) + 1
        if size > budget:
            break
    return lines


def render(
    snapshot: Snapshot, ranked: Iterable[Ranked], *, chars: int = DEFAULT_MAP_CHARS
) -> Rendered:
    """The map of ``snapshot`` with ``ranked`` as its key files, at most ``chars`` characters.

    ``ranked`` is drawn only as far as the key files could fill the whole budget
    (``rank.ranking`` makes each file as it is drawn), never past ``KEY_FILES_MAX``.
    """
    budget = max(chars, 0)
    headers = _headers(snapshot.coverage, snapshot.git, snapshot.exact, snapshot.unlinked)
    footers = _footers()
    uncommitted = _Forms.of(_uncommitted(snapshot))
    trees = _trees(snapshot)
    lines = _drawn(ranked, budget)

    header, footer = headers[0], footers[0]
    fixed = len(header) + len(footer)
    changes = uncommitted.fit(UNCOMMITTED_SHARE * budget)
    tree = trees.fit(TREE_SHARE * budget)
    shown = _fitting(lines, budget - fixed - len(changes) - len(tree))
    keys = _key_files(lines, shown)
    # What the key files left over goes back to the tree, then to the uncommitted list.
    tree = trees.fit(budget - fixed - len(changes) - len(keys))
    changes = uncommitted.fit(budget - fixed - len(tree) - len(keys))
    parts = [header, changes, tree, keys, footer]
    if sum(map(len, parts)) > budget:
        parts, shown = _squeeze(changes, headers, footers, uncommitted, trees, budget), 0
    text = "".join(parts)
    if len(text) > budget:
        text = _cut(text, budget)
    return Rendered(text, hashlib.sha256(text.encode()).hexdigest(), shown)


def _squeeze(
    changes: str,
    headers: list[str],
    footers: list[str],
    uncommitted: _Forms,
    trees: _Forms,
    budget: int,
) -> list[str]:
    """The map without key files, each section plainer in turn until the whole fits."""
    plain = uncommitted.plainest()
    for head, change, foot in (
        (headers[0], changes, footers[0]),
        (headers[0], plain, footers[0]),
        (headers[0], plain, footers[-1]),
        (headers[-1], plain, footers[-1]),
    ):
        room = budget - len(head) - len(change) - len(foot)
        tree = trees.fit(room)
        if len(tree) <= room:
            return [head, change, tree, foot]
    return [headers[-1], plain, trees.plainest(), footers[-1]]


def _cut(text: str, budget: int) -> str:
    """The longest prefix of ``text`` that fits, ended at a line break where there is one."""
    prefix = text[:budget]
    end = prefix.rfind("\n")
    return prefix[: end + 1] if end >= 0 else prefix
