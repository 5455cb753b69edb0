"""The query-independent half of a ranking: the file graph, its PageRank, the prior.

``structure_of(snapshot)`` computes, once per snapshot, everything a ranking needs
that no query changes: the file graph (def/ref edges weighted as Aider weighs them,
plus resolved imports), its PageRank, the structural prior, each file's best
symbols and the lookup tables a query is matched against. It is kept in memory,
keyed by the snapshot object itself (never by anything a query says), for as long
as that snapshot lives. A snapshot is treated as immutable: mutating one after it
was ranked is not seen.

Every sum is taken in a fixed order, or over exact integers, so the result never
depends on a hash seed or on the order the index listed things in.
"""

from __future__ import annotations

import math
import re
import weakref
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from operator import attrgetter, mul, neg, sub

from .model import FileEntry, Snapshot, Symbol
from .printable import printable

# PageRank over the file graph.
DAMPING = 0.85
PAGERANK_MAX_ITERATIONS = 100
# Summed absolute change of all ranks between two sweeps at which the ranks are final.
PAGERANK_TOLERANCE = 1e-6

# Edge weights, in integer hundredths so that sums are exact in any order.
NAME_WEIGHT_UNIT = 100
# A camelCase or snake_case name this long says which definition it means.
SPECIFIC_NAME_MIN_CHARS = 8
SPECIFIC_NAME_BOOST = 10
PRIVATE_NAME_DIVISOR = 10
# A name defined in more files than this (get, run, __init__) says little about
# which of them a reference means; in more than NAME_DEFINERS_MAX, nothing at all,
# and leaving it out also keeps a 20,000-file graph from growing quadratically.
COMMON_NAME_DEFINERS = 5
COMMON_NAME_DIVISOR = 10
NAME_DEFINERS_MAX = 30
# One- and two-letter names are every file's locals, not references to a definition.
SHORT_NAME_MAX_CHARS = 2
# A resolved import is a stated dependency: worth about three plain shared names.
IMPORT_EDGE_WEIGHT = 3.0

# The structural prior: multipliers on a file's PageRank.
ENTRY_POINT_FACTOR = 2.0
MANIFEST_FACTOR = 2.0
UNCOMMITTED_FACTOR = 2.0
TEST_FACTOR = 0.3
VENDORED_FACTOR = 0.1
GENERATED_FACTOR = 0.1
# Each folder level below the first DEPTH_FREE_LEVELS costs this factor.
DEPTH_FREE_LEVELS = 2
DEPTH_FACTOR = 0.9

ENTRY_POINT_NAMES = frozenset(
    {"__main__.py", "main.py", "cli.py", "manage.py", "app.py", "wsgi.py", "asgi.py"}
    | {"main.go", "main.rs", "lib.rs", "main.c", "main.cc", "main.cpp", "Main.java"}
    | {"index.js", "index.ts", "main.js", "main.ts"}
)
MANIFEST_NAMES = frozenset(
    {"setup.py", "setup.cfg", "pyproject.toml", "tox.ini", "noxfile.py", "package.json"}
    | {"Cargo.toml", "go.mod", "CMakeLists.txt", "Makefile", "meson.build", "justfile"}
    | {"pom.xml", "build.gradle", "build.gradle.kts", "Gemfile", "composer.json"}
)
TEST_FOLDERS = frozenset({"test", "tests", "testing", "__tests__", "spec", "specs", "testdata"})
VENDORED_FOLDERS = frozenset(
    {"vendor", "vendored", "_vendor", "third_party", "third-party", "thirdparty", "node_modules"}
)
GENERATED_FOLDERS = frozenset({"dist", "build", "generated", "__generated__"})
GENERATED_SUFFIXES = ("_pb2.py", "_pb2_grpc.py", "_pb2.pyi", ".pb.go", ".pb.cc", ".pb.h")
# A file named like this stands for its folder (email/__init__.py is "email").
FOLDER_STEMS = frozenset({"__init__", "index", "mod"})

# How a path token names a file, strongest first (query.py gives each its strength).
PATH_STEM, PATH_FOLDER, PATH_PART = 0, 1, 2

# Neighbours of one file that a personalisation spreads to, strongest first.
NEIGHBOURS_PER_SEED_MAX = 100
# Snapshots whose structure is kept in memory at once (most recently used first).
SNAPSHOT_CACHE_ENTRIES = 4

KIND_WEIGHT = {
    "class": 1.0,
    "type": 1.0,
    "interface": 1.0,
    "struct": 1.0,
    "trait": 1.0,
    "enum": 1.0,
    "function": 0.8,
    "method": 0.5,
    "constant": 0.5,
}
OTHER_KIND_WEIGHT = 0.4

# Digits stay with the letters before them (b64, utf8, sha256): they name one thing.
_SUBWORD = re.compile(r"[A-Z]+[0-9]*(?=[A-Z][a-z])|[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*|[0-9]+")


def parts(name: str) -> list[str]:
    """The lowercased camelCase / snake_case parts of ``name`` (HTTPServer -> http, server)."""
    if name.islower() and name.replace("_", "").isalpha():
        # snake_case without digits, the common case: str.split gives the same parts.
        return [part for part in name.split("_") if part]
    return [part.lower() for part in _SUBWORD.findall(name)]


def subwords(name: str) -> list[str]:
    """The parts of ``name``, and for a name split by case each two adjacent ones joined.

    IPv4Network gives i, pv4, network, and the pairs ipv4 and pv4network: a
    mixed-case acronym cannot be split by case alone.
    """
    if name.islower() and name.replace("_", "").isalpha():
        return [part for part in name.split("_") if part]
    found = [part.lower() for part in _SUBWORD.findall(name)]
    if len(found) < 3:
        return found
    return [*found, *(a + b for a, b in pairwise(found))]


def is_specific(name: str) -> bool:
    """A long compound name (parse_known_args, ArgumentParser): it points at one definition."""
    if len(name) < SPECIFIC_NAME_MIN_CHARS:
        return False
    core = name.strip("_")
    if "_" in core:
        return True
    # camelCase: a capital after the first letter, and some lower case.
    tail = core[1:]
    return tail != tail.lower() and core != core.upper()


def name_units(name: str, definers: int) -> int:
    """A name's edge weight in NAME_WEIGHT_UNITs (exact integers: sums never depend on order)."""
    units = NAME_WEIGHT_UNIT
    if is_specific(name):
        units *= SPECIFIC_NAME_BOOST
    if name.startswith("_"):
        units //= PRIVATE_NAME_DIVISOR
    if definers > COMMON_NAME_DEFINERS:
        units //= COMMON_NAME_DIVISOR
    return units


def is_test_path(path: str) -> bool:
    folders = path.split("/")
    name = folders.pop()
    stem = name.split(".", 1)[0]
    return (
        any(f.lower() in TEST_FOLDERS or f.endswith(("_test", "_tests")) for f in folders)
        or stem.startswith("test_")
        or stem.endswith(("_test", "_tests", "Test", "Tests"))
        or ".test." in name
        or ".spec." in name
        or name == "conftest.py"
    )


def is_vendored_path(path: str) -> bool:
    return any(part.lower() in VENDORED_FOLDERS for part in path.split("/")[:-1])


def is_generated_path(path: str) -> bool:
    folders = path.split("/")
    name = folders.pop()
    return (
        any(part.lower() in GENERATED_FOLDERS for part in folders)
        or name.endswith(GENERATED_SUFFIXES)
        or ".generated." in name
        or "_generated." in name
    )


def is_entry_point(path: str) -> bool:
    return path.rsplit("/", 1)[-1] in ENTRY_POINT_NAMES


def is_manifest(path: str) -> bool:
    return path.rsplit("/", 1)[-1] in MANIFEST_NAMES


def is_uncommitted(entry: FileEntry, git: bool) -> bool:
    """Changed, or new and not ignored: what ``git status`` would show (only in git)."""
    return git and (entry.changed or not entry.tracked)


@dataclass
class Graph:
    """The weighted file graph: edges out of each node, and into it (sources in order)."""

    out: list[dict[int, float]]
    sources: list[list[int]]
    weights: list[list[float]]
    edges: int


@dataclass
class Lookup:
    """The tables a query is matched against, built on the first query (a map needs none).

    name -> the files defining it is ``Structure.definers``; here: lowercased name ->
    names, subword -> names, the lowercased names joined into one string (a substring
    search then runs in C) with where each starts, and the same for path tokens:
    token -> (node, PATH_STEM / PATH_FOLDER / PATH_PART).
    """

    lower_names: dict[str, list[str]]
    subword_names: dict[str, list[str]]
    name_vocab: str
    name_starts: list[int]
    name_list: list[str]
    path_tokens: dict[str, tuple[tuple[int, int], ...]]
    path_vocab: str
    path_starts: list[int]
    path_list: list[str]


@dataclass
class Structure:
    """The query-independent half of a ranking, for one snapshot (see ``structure_of``).

    Files are numbered in path order (node 0 has the smallest path), so ordering by
    node number is ordering by path. Only numbers are computed up front; the words
    (signals), a file's best symbols and the query tables are made when first asked,
    so the map of a large repository does not wait for what it never shows.
    """

    git: bool
    paths: list[str]
    index: dict[str, int]
    entries: list[FileEntry]
    graph: Graph
    pagerank: list[float]
    iterations: int
    # prior x PageRank, scaled so that the best file has 1.0.
    structure: list[float]
    # The down-weighting factors alone (test, vendored, generated): they apply to a
    # query match too, so a vendored copy of a definition ranks below the original.
    penalty: list[float]
    # Nodes by structure, best first (ties by path), and each node's place in it.
    order: list[int]
    place: list[int]
    imported_by: list[int]
    referenced_by: list[int]
    # Each file's symbols by line; name -> the files defining it; how many use it.
    symbols: list[list[Symbol]]
    definers: dict[str, list[int]]
    referenced_in: Counter[str]
    units_of: dict[str, int]
    _top: dict[int, tuple[Symbol, ...]] = field(default_factory=dict)
    _near: dict[int, tuple[tuple[tuple[int, float], ...], float]] = field(default_factory=dict)
    _lookup: Lookup | None = None

    def signals(self, node: int) -> list[str]:
        """Why the structure ranks ``node`` where it does, in words."""
        said = _prior(self.entries[node], self.git)[2]
        said.append(f"structural rank {self.place[node]:,} of {len(self.paths):,}")
        if self.imported_by[node]:
            said.append(f"imported by {_files(self.imported_by[node])}")
        if self.referenced_by[node]:
            said.append(f"names used by {_files(self.referenced_by[node])}")
        return said

    def top_symbols(self, node: int) -> tuple[Symbol, ...]:
        """The file's distinct (name, kind)s, the most used and most specific first."""
        held = self._top.get(node)
        if held is None:
            held = _top_symbols(self.symbols[node], self.referenced_in, self.units_of)
            self._top[node] = held
        return held

    @property
    def lookup(self) -> Lookup:
        if self._lookup is None:
            self._lookup = _lookup(self.definers, self.paths)
        return self._lookup

    def neighbours(self, node: int) -> tuple[tuple[tuple[int, float], ...], float]:
        """The strongest neighbours of ``node``, either way (NEIGHBOURS_PER_SEED_MAX at most),
        and the total weight of all its edges.

        Computed when first asked: only the files a query or a session picks out
        ever need theirs, and a snapshot-wide table would cost the build a sort per file.
        """
        held = self._near.get(node)
        if held is None:
            near = dict(self.graph.out[node])
            for source, weight in zip(
                self.graph.sources[node], self.graph.weights[node], strict=True
            ):
                near[source] = near.get(source, 0.0) + weight
            # Node numbers follow path order, so (-weight, node) breaks ties by path.
            ranked = sorted(zip(map(neg, near.values()), near, strict=True))
            total = math.fsum(near.values())
            held = (tuple((n, -w) for w, n in ranked[:NEIGHBOURS_PER_SEED_MAX]), total)
            self._near[node] = held
        return held


_CACHE: list[tuple[weakref.ref[Snapshot], Structure]] = []


def structure_of(snapshot: Snapshot) -> Structure:
    """The structure of ``snapshot``, computed on first use and kept while it lives."""
    for position, (ref, structure) in enumerate(_CACHE):
        if ref() is snapshot:
            _CACHE.insert(0, _CACHE.pop(position))
            return structure
    structure = build_structure(snapshot)
    _CACHE[:] = [(ref, s) for ref, s in _CACHE if ref() is not None]
    _CACHE.insert(0, (weakref.ref(snapshot), structure))
    del _CACHE[SNAPSHOT_CACHE_ENTRIES:]
    return structure


def _rankable(entry: FileEntry) -> bool:
    # A listed file was never read: only a manifest is worth ranking by its name alone.
    return entry.status != "listed" or is_manifest(entry.path)


def build_structure(snapshot: Snapshot) -> Structure:
    """The structure of ``snapshot``, computed now (``structure_of`` caches it)."""
    entries = sorted(
        (e for e in {e.path: e for e in snapshot.files}.values() if _rankable(e)),
        key=attrgetter("path"),
    )
    paths = [e.path for e in entries]
    index = {path: i for i, path in enumerate(paths)}
    count = len(paths)

    symbols_of: list[list[Symbol]] = [[] for _ in range(count)]
    for symbol in snapshot.symbols:
        node = index.get(symbol.path)
        if node is not None:
            symbols_of[node].append(symbol)
    by_line = attrgetter("line", "name", "kind")
    for found in symbols_of:
        found.sort(key=by_line)
    defined = [frozenset(s.name for s in found) for found in symbols_of]
    definers: dict[str, list[int]] = {}
    for node, names in enumerate(defined):
        for name in names:
            held = definers.get(name)
            if held is None:
                definers[name] = [node]
            else:
                held.append(node)
    references = [snapshot.references.get(path, frozenset()) for path in paths]
    # How many files use each defined name (a name nothing defines is not counted).
    referenced_in: Counter[str] = Counter()
    known = definers.keys()
    for names in references:
        referenced_in.update(names & known)
    units_of = {name: name_units(name, len(nodes)) for name, nodes in definers.items()}

    out, referenced_by = _name_edges(count, definers, defined, references, units_of)
    imported_by = [0] * count
    for importer, imported in sorted(set(snapshot.imports)):
        source, sink = index.get(importer), index.get(imported)
        if source is None or sink is None or source == sink:
            continue
        imported_by[sink] += 1
        out[source][sink] = out[source].get(sink, 0.0) + IMPORT_EDGE_WEIGHT
    graph = _graph(out)
    pagerank, iterations = _pagerank(graph)

    structure, penalty = _prior_all(snapshot.git, entries, pagerank)
    order = sorted(range(count), key=lambda n: (-structure[n], n))
    place = [0] * count
    for position, node in enumerate(order, start=1):
        place[node] = position
    return Structure(
        git=snapshot.git,
        paths=paths,
        index=index,
        entries=entries,
        graph=graph,
        pagerank=pagerank,
        iterations=iterations,
        structure=structure,
        penalty=penalty,
        order=order,
        place=place,
        imported_by=imported_by,
        referenced_by=referenced_by,
        symbols=symbols_of,
        definers=definers,
        referenced_in=referenced_in,
        units_of=units_of,
    )


def _lookup(definers: dict[str, list[int]], paths: list[str]) -> Lookup:
    name_list = sorted(definers)
    lower_names: dict[str, list[str]] = {}
    subword_names: dict[str, list[str]] = {}
    lowered = []
    for name in name_list:
        lower = name.lower()
        lowered.append(lower)
        held = lower_names.get(lower)
        if held is None:
            lower_names[lower] = [name]
        else:
            held.append(name)
        pieces = subwords(name)
        if len(pieces) > 1:
            for piece in dict.fromkeys(pieces):
                found = subword_names.get(piece)
                if found is None:
                    subword_names[piece] = [name]
                else:
                    found.append(name)
    name_vocab, name_starts = _vocabulary(lowered)
    path_tokens = _path_tokens(paths)
    path_list = sorted(path_tokens)
    path_vocab, path_starts = _vocabulary(path_list)
    return Lookup(
        lower_names=lower_names,
        subword_names=subword_names,
        name_vocab=name_vocab,
        name_starts=name_starts,
        name_list=name_list,
        path_tokens=path_tokens,
        path_vocab=path_vocab,
        path_starts=path_starts,
        path_list=path_list,
    )


def _name_edges(
    count: int,
    definers: dict[str, list[int]],
    defined: list[frozenset[str]],
    references: list[frozenset[str]],
    units_of: dict[str, int],
) -> tuple[list[dict[int, float]], list[int]]:
    """Edges from each file to the files defining the names it uses; in-degrees by name."""
    # Only names that can make an edge: defined somewhere, not everywhere, not short.
    linking = {
        name
        for name, nodes in definers.items()
        if len(nodes) <= NAME_DEFINERS_MAX and len(name) > SHORT_NAME_MAX_CHARS
    }
    out: list[dict[int, float]] = []
    referenced_by = [0] * count
    for node in range(count):
        totals: dict[int, list[int]] = {}
        # A name the file defines itself most likely means its own definition.
        for name in (references[node] & linking) - defined[node]:
            units = units_of[name]
            for target in definers[name]:
                acc = totals.get(target)
                if acc is None:
                    totals[target] = [units, 1]
                else:
                    acc[0] += units
                    acc[1] += 1
        # Aider's sqrt(references): many names from one file count, but sublinearly.
        weights = {
            target: units / NAME_WEIGHT_UNIT / math.sqrt(uses)
            for target, (units, uses) in totals.items()
        }
        for target in weights:
            referenced_by[target] += 1
        out.append(weights)
    return out, referenced_by


def _graph(out: list[dict[int, float]]) -> Graph:
    count = len(out)
    sources: list[list[int]] = [[] for _ in range(count)]
    weights: list[list[float]] = [[] for _ in range(count)]
    edges = 0
    for node, targets in enumerate(out):
        for target in sorted(targets):
            sources[target].append(node)
            weights[target].append(targets[target])
            edges += 1
    return Graph(out, sources, weights, edges)


def _pagerank(graph: Graph) -> tuple[list[float], int]:
    """PageRank of the weighted graph, deterministic; and the number of sweeps it took.

    The mass of a node with no outgoing edge (dangling) is spread evenly, as the
    teleport is, so ranks always sum to 1. Ranks are pulled along incoming edges in
    node order, so every sum is taken in the same order on every run.
    """
    count = len(graph.out)
    if count == 0:
        return [], 0
    totals = [math.fsum(targets.values()) for targets in graph.out]
    dangling = [node for node, total in enumerate(totals) if total <= 0.0]
    shares = [
        [weight / totals[source] for source, weight in zip(s, w, strict=True)]
        for s, w in zip(graph.sources, graph.weights, strict=True)
    ]
    ranks = [1.0 / count] * count
    iterations = 0
    teleport = (1.0 - DAMPING) / count
    change = math.inf
    while change >= PAGERANK_TOLERANCE and iterations < PAGERANK_MAX_ITERATIONS:
        iterations += 1
        lost = DAMPING * math.fsum(ranks[node] for node in dangling) / count
        base = teleport + lost
        fresh = [
            base + DAMPING * sum(map(mul, w, map(ranks.__getitem__, s)))
            for s, w in zip(graph.sources, shares, strict=True)
        ]
        change = math.fsum(map(abs, map(sub, fresh, ranks)))
        ranks = fresh
    return ranks, iterations


def _prior(entry: FileEntry, git: bool) -> tuple[float, float, list[str]]:
    """(the whole prior, its down-weighting part, the signals saying why)."""
    path = entry.path
    factor, penalty = 1.0, 1.0
    signals: list[str] = []
    if entry.status == "pending":
        signals.append("not indexed yet (pending): its symbols are not known")
    elif entry.status == "listed":
        signals.append(f"listed, not read ({printable(entry.skip or 'no reason recorded')})")
    if is_uncommitted(entry, git):
        factor *= UNCOMMITTED_FACTOR
        signals.append("uncommitted change" if entry.tracked else "new file, not committed")
    if is_entry_point(path):
        factor *= ENTRY_POINT_FACTOR
        signals.append("entry point")
    if is_manifest(path):
        factor *= MANIFEST_FACTOR
        signals.append("manifest")
    if is_vendored_path(path):
        penalty *= VENDORED_FACTOR
        signals.append("vendored code, ranked down")
    elif is_generated_path(path):
        penalty *= GENERATED_FACTOR
        signals.append("generated code, ranked down")
    if is_test_path(path):
        penalty *= TEST_FACTOR
        signals.append("test file, ranked down")
    depth = path.count("/")
    if depth > DEPTH_FREE_LEVELS:
        factor *= DEPTH_FACTOR ** (depth - DEPTH_FREE_LEVELS)
    return factor * penalty, penalty, signals


def _prior_all(
    git: bool, entries: list[FileEntry], pagerank: list[float]
) -> tuple[list[float], list[float]]:
    """Prior x PageRank scaled to 1.0 at the best file, and each file's penalty."""
    raw: list[float] = []
    penalty: list[float] = []
    for node, entry in enumerate(entries):
        factor, down, _ = _prior(entry, git)
        raw.append(pagerank[node] * factor)
        penalty.append(down)
    top = max(raw, default=0.0)
    structure = [value / top for value in raw] if top > 0 else [0.0] * len(raw)
    return structure, penalty


def _files(count: int) -> str:
    return f"{count:,} file" + ("" if count == 1 else "s")


def _top_symbols(
    found: list[Symbol], referenced_in: Counter[str], units_of: dict[str, int]
) -> tuple[Symbol, ...]:
    """A file's distinct (name, kind)s, the most used and most specific first."""
    unique: dict[tuple[str, str], Symbol] = {}
    for symbol in found:
        unique.setdefault((symbol.name, symbol.kind), symbol)
    weighed = [
        (
            -KIND_WEIGHT.get(s.kind, OTHER_KIND_WEIGHT)
            * units_of[s.name]
            * math.log(2 + referenced_in.get(s.name, 0)),
            s.line,
            s.name,
            s.kind,
            s,
        )
        for s in unique.values()
    ]
    weighed.sort()
    return tuple(item[-1] for item in weighed)


def _path_tokens(paths: list[str]) -> dict[str, tuple[tuple[int, int], ...]]:
    """Every word a path offers a query: its stem, its folders, and their parts."""
    tokens: dict[str, dict[int, int]] = {}

    def offer(token: str, node: int, kind: int) -> None:
        held = tokens.setdefault(token, {})
        if held.get(node, PATH_PART + 1) > kind:
            held[node] = kind

    for node, path in enumerate(paths):
        folders = path.split("/")
        name = folders.pop()
        stem = name if name.startswith(".") else name.split(".", 1)[0]
        if stem in FOLDER_STEMS and folders:
            stem = folders[-1]
        offer(name.lower(), node, PATH_STEM)
        offer(stem.lower(), node, PATH_STEM)
        for piece in subwords(stem):
            offer(piece, node, PATH_PART)
        for folder in folders:
            offer(folder.lower(), node, PATH_FOLDER)
            for piece in subwords(folder):
                offer(piece, node, PATH_PART)
    return {token: tuple(sorted(held.items())) for token, held in tokens.items()}


def _vocabulary(words: Sequence[str]) -> tuple[str, list[int]]:
    """``words`` joined by newlines, and where each starts: a substring search in C."""
    starts: list[int] = []
    position = 0
    for word in words:
        starts.append(position)
        position += len(word) + 1
    return "\n".join(words) + "\n", starts
