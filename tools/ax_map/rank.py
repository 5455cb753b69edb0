"""Which files matter: PageRank over the file graph, a structural prior, and a query.

Two halves with different lifetimes. ``structure_of(snapshot)`` is everything that
does not depend on a query: the file graph (def/ref edges weighted as Aider weighs
them, plus resolved imports), its PageRank, the structural prior, each file's best
symbols and the lookup tables a query needs. It is computed once per snapshot and
kept in memory, keyed by the snapshot object itself, so nothing a query says ever
enters it. ``rank`` then applies the query, the focus paths and the files the
session touched on top of it, which costs milliseconds, not a PageRank.

Every number has a reason a person can read: each ``Ranked`` carries its signals in
words, and the order is deterministic (equal scores are ordered by path; sums are
taken in a fixed order or over exact integers, so hash seeds never reorder a tie).
A snapshot is treated as immutable: mutating one after it was ranked is not seen.
"""

from __future__ import annotations

import math
import re
import weakref
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from heapq import merge
from itertools import pairwise
from operator import mul, neg, sub

from .model import FileEntry, Snapshot, Symbol

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
    {
        "__main__.py",
        "main.py",
        "cli.py",
        "manage.py",
        "app.py",
        "wsgi.py",
        "asgi.py",
        "main.go",
        "main.rs",
        "lib.rs",
        "main.c",
        "main.cc",
        "main.cpp",
        "Main.java",
        "index.js",
        "index.ts",
        "main.js",
        "main.ts",
    }
)
MANIFEST_NAMES = frozenset(
    {
        "setup.py",
        "setup.cfg",
        "pyproject.toml",
        "package.json",
        "Cargo.toml",
        "go.mod",
        "CMakeLists.txt",
        "Makefile",
        "meson.build",
        "pom.xml",
        "build.gradle",
        "build.gradle.kts",
        "Gemfile",
        "composer.json",
        "tox.ini",
        "noxfile.py",
        "justfile",
    }
)
TEST_FOLDERS = frozenset({"test", "tests", "testing", "__tests__", "spec", "specs", "testdata"})
VENDORED_FOLDERS = frozenset(
    {"vendor", "vendored", "_vendor", "third_party", "third-party", "thirdparty", "node_modules"}
)
GENERATED_FOLDERS = frozenset({"dist", "build", "generated", "__generated__"})
GENERATED_SUFFIXES = ("_pb2.py", "_pb2_grpc.py", "_pb2.pyi", ".pb.go", ".pb.cc", ".pb.h")
# A file named like this stands for its folder (email/__init__.py is "email").
FOLDER_STEMS = frozenset({"__init__", "index", "mod"})

# How a query's term matches a file, strongest first.
MATCH_PATH_EXACT = 10.0
MATCH_EXACT = 8.0
MATCH_ICASE = 6.0
MATCH_PATH_STEM = 6.0
MATCH_PATH_FOLDER = 4.0
MATCH_SUBWORD = 3.0
MATCH_PATH_SUBWORD = 3.0
MATCH_SUBSTRING = 1.0
MATCH_PATH_SUBSTRING = 1.0
# A term matched only after stripping a suffix (options -> option) counts for less.
VARIANT_FACTOR = 0.8
# Parts of a compound query word (parse_args -> parse, args) count for less than it.
PART_TERM_WEIGHT = 0.5
# Each query word found inside one name together with another adds this strength.
PHRASE_BONUS = 2.0
# A file matching only some of the terms keeps this share, plus the rest pro rata.
COVERAGE_FLOOR = 0.4
# A term matching more than this share of the files says nothing and is dropped.
COMMON_TERM_SHARE = 0.5
# Substring matches are skipped for a term found inside more names than this.
SUBSTRING_NAMES_MAX = 2_000
SUBSTRING_MIN_CHARS = 3
PREFIX_MIN_CHARS = 5
QUERY_MAX_CHARS = 1_000
QUERY_TERMS_MAX = 16
QUERY_SIGNALS_MAX = 3
STOP_WORDS = frozenset(
    {"a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "how"}
    | {"in", "into", "is", "it", "of", "on", "or", "that", "the", "this", "to", "what"}
    | {"when", "where", "which", "with"}
)

# The final score: STRUCTURE_WEIGHT x structure (0..1) plus the personal parts.
STRUCTURE_WEIGHT = 2.0
QUERY_WEIGHT = 10.0
TOUCHED_WEIGHT = 6.0
FOCUS_WEIGHT = 6.0
# Share of a personalised file's boost that spreads to its graph neighbours.
NEIGHBOUR_SHARE = 0.3
NEIGHBOUR_SEEDS_MAX = 50
NEIGHBOURS_PER_SEED_MAX = 100

RANKED_SYMBOLS_MAX = 10
MATCHED_SYMBOLS_MAX = 10
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
_TOKEN = re.compile(r"[A-Za-z0-9_]+")
_SUFFIXES = ("ing", "es", "ed", "s")


@dataclass(frozen=True)
class Ranked:
    """One file of a ranking: why it is there (``signals``) and its best symbols.

    ``symbols`` are the file's top definitions, best first, with those matching the
    query first; ``matched`` are the ones that matched the query (empty without one).
    """

    path: str
    score: float
    signals: list[str]
    symbols: list[Symbol]
    matched: list[Symbol] = field(default_factory=list)


def subwords(name: str) -> list[str]:
    """The lowercased camelCase / snake_case parts of ``name``, and each two adjacent joined.

    HTTPServer gives http, server; IPv4Network gives i, pv4, network, and the pairs
    ipv4 and pv4network, since a mixed-case acronym cannot be split by case alone.
    """
    parts = [part.lower() for part in _SUBWORD.findall(name)]
    if len(parts) < 3:
        return parts
    return [*parts, *(a + b for a, b in pairwise(parts))]


def is_specific(name: str) -> bool:
    """A long compound name (parse_known_args, ArgumentParser): it points at one definition."""
    if len(name) < SPECIFIC_NAME_MIN_CHARS:
        return False
    core = name.strip("_")
    snake = "_" in core
    camel = any(c.isupper() for c in core[1:]) and any(c.islower() for c in core)
    return snake or camel


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
    parts = path.split("/")
    name = parts[-1]
    stem = name.split(".", 1)[0]
    return (
        any(
            part.lower() in TEST_FOLDERS or part.endswith(("_test", "_tests"))
            for part in parts[:-1]
        )
        or stem.startswith("test_")
        or stem.endswith(("_test", "_tests", "Test", "Tests"))
        or ".test." in name
        or ".spec." in name
        or name == "conftest.py"
    )


def is_vendored_path(path: str) -> bool:
    return any(part.lower() in VENDORED_FOLDERS for part in path.split("/")[:-1])


def is_generated_path(path: str) -> bool:
    parts = path.split("/")
    name = parts[-1]
    return (
        any(part.lower() in GENERATED_FOLDERS for part in parts[:-1])
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
class Structure:
    """The query-independent half of a ranking, for one snapshot (see ``structure_of``)."""

    paths: list[str]
    index: dict[str, int]
    entries: list[FileEntry]
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
    signals: list[tuple[str, ...]]
    symbols: list[tuple[Symbol, ...]]
    top_symbols: list[tuple[Symbol, ...]]
    graph: _Graph
    name_nodes: dict[str, tuple[int, ...]]
    lower_names: dict[str, tuple[str, ...]]
    subword_names: dict[str, tuple[str, ...]]
    name_vocab: str
    name_starts: list[int]
    name_list: list[str]
    # path token -> (node, strength, what matched), and the same vocabulary trick.
    path_tokens: dict[str, tuple[tuple[int, float], ...]]
    path_vocab: str
    path_starts: list[int]
    path_list: list[str]
    _near: dict[int, tuple[tuple[tuple[int, float], ...], float]] = field(default_factory=dict)

    @property
    def edges(self) -> int:
        return self.graph.edges

    def neighbours(self, node: int) -> tuple[tuple[tuple[int, float], ...], float]:
        """The strongest neighbours of ``node`` either way (at most NEIGHBOURS_PER_SEED_MAX),
        and the total weight of all its edges. Computed when first asked: only the files a
        query or a session picks out ever need theirs."""
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
    for ref, structure in _CACHE:
        if ref() is snapshot:
            return structure
    structure = build_structure(snapshot)
    _CACHE[:] = [(ref, s) for ref, s in _CACHE if ref() is not None]
    _CACHE.insert(0, (weakref.ref(snapshot), structure))
    del _CACHE[SNAPSHOT_CACHE_ENTRIES:]
    return structure


def _rankable(entry: FileEntry) -> bool:
    # A listed file was never read: only a manifest is worth ranking by its name alone.
    return entry.status != "listed" or is_manifest(entry.path)


def _vocabulary(words: Sequence[str]) -> tuple[str, list[int]]:
    """``words`` joined by newlines, and where each starts: a substring search in C."""
    starts: list[int] = []
    position = 0
    for word in words:
        starts.append(position)
        position += len(word) + 1
    return "\n".join(words) + "\n", starts


def build_structure(snapshot: Snapshot) -> Structure:
    entries = sorted(
        (e for e in {e.path: e for e in snapshot.files}.values() if _rankable(e)),
        key=lambda e: e.path,
    )
    paths = [e.path for e in entries]
    index = {path: i for i, path in enumerate(paths)}
    count = len(paths)

    symbols_of: list[list[Symbol]] = [[] for _ in range(count)]
    for symbol in snapshot.symbols:
        node = index.get(symbol.path)
        if node is not None:
            symbols_of[node].append(symbol)
    for found in symbols_of:
        found.sort(key=lambda s: (s.line, s.name, s.kind))
    defined = [frozenset(s.name for s in found) for found in symbols_of]
    definers: dict[str, list[int]] = {}
    for node, names in enumerate(defined):
        for name in names:
            definers.setdefault(name, []).append(node)

    references = [snapshot.references.get(path, frozenset()) for path in paths]
    referenced_in: Counter[str] = Counter()
    for names in references:
        referenced_in.update(names)

    units_of = {name: name_units(name, len(nodes)) for name, nodes in definers.items()}
    # Only names that can make an edge: defined somewhere, and not everywhere.
    linking = {name for name, nodes in definers.items() if len(nodes) <= NAME_DEFINERS_MAX}
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

    imported_by = [0] * count
    for importer, imported in sorted(set(snapshot.imports)):
        source, sink = index.get(importer), index.get(imported)
        if source is None or sink is None or source == sink:
            continue
        imported_by[sink] += 1
        out[source][sink] = out[source].get(sink, 0.0) + IMPORT_EDGE_WEIGHT

    graph = _graph(out)
    pagerank, iterations = _pagerank(graph)
    return _assemble(
        snapshot,
        entries,
        paths,
        index,
        graph,
        pagerank,
        iterations,
        symbols_of,
        definers,
        units_of,
        referenced_in,
        referenced_by,
        imported_by,
    )


@dataclass
class _Graph:
    """The weighted file graph: edges out of each node, and into it (sources in order)."""

    out: list[dict[int, float]]
    sources: list[list[int]]
    weights: list[list[float]]
    edges: int


def _graph(out: list[dict[int, float]]) -> _Graph:
    count = len(out)
    sources: list[list[int]] = [[] for _ in range(count)]
    weights: list[list[float]] = [[] for _ in range(count)]
    edges = 0
    for node, targets in enumerate(out):
        for target in sorted(targets):
            sources[target].append(node)
            weights[target].append(targets[target])
            edges += 1
    return _Graph(out, sources, weights, edges)


def _pagerank(graph: _Graph) -> tuple[list[float], int]:
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
        signals.append(f"listed, not read ({entry.skip or 'no reason recorded'})")
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


def _symbol_weight(symbol: Symbol, referenced_in: Counter[str], units: int) -> float:
    used = referenced_in.get(symbol.name, 0)
    kind = KIND_WEIGHT.get(symbol.kind, OTHER_KIND_WEIGHT)
    return kind * units * math.log(2 + used)


def _files(count: int) -> str:
    return f"{count:,} file" + ("" if count == 1 else "s")


def _assemble(
    snapshot: Snapshot,
    entries: list[FileEntry],
    paths: list[str],
    index: dict[str, int],
    graph: _Graph,
    pagerank: list[float],
    iterations: int,
    symbols_of: list[list[Symbol]],
    definers: dict[str, list[int]],
    units_of: dict[str, int],
    referenced_in: Counter[str],
    referenced_by: list[int],
    imported_by: list[int],
) -> Structure:
    count = len(paths)
    raw: list[float] = []
    penalty: list[float] = []
    prior_signals: list[list[str]] = []
    for node, entry in enumerate(entries):
        factor, down, said = _prior(entry, snapshot.git)
        raw.append(pagerank[node] * factor)
        penalty.append(down)
        prior_signals.append(said)
    top = max(raw, default=0.0)
    structure = [value / top for value in raw] if top > 0 else [0.0] * count
    order = sorted(range(count), key=lambda n: (-structure[n], paths[n]))
    place = [0] * count
    for position, node in enumerate(order, start=1):
        place[node] = position

    signals: list[tuple[str, ...]] = []
    for node in range(count):
        said = [f"structural rank {place[node]:,} of {count:,}"]
        if imported_by[node]:
            said.append(f"imported by {_files(imported_by[node])}")
        if referenced_by[node]:
            said.append(f"names used by {_files(referenced_by[node])}")
        signals.append((*prior_signals[node], *said))

    top_symbols: list[tuple[Symbol, ...]] = []
    for found in symbols_of:
        seen: set[tuple[str, str]] = set()
        unique = []
        for symbol in found:
            key = (symbol.name, symbol.kind)
            if key not in seen:
                seen.add(key)
                unique.append(symbol)
        weight_of = {id(s): _symbol_weight(s, referenced_in, units_of[s.name]) for s in unique}
        unique.sort(key=lambda s: (-weight_of[id(s)], s.line, s.name))
        top_symbols.append(tuple(unique))

    name_nodes = {name: tuple(nodes) for name, nodes in definers.items()}
    name_list = sorted(name_nodes)
    lower_names: dict[str, list[str]] = {}
    subword_names: dict[str, list[str]] = {}
    for name in name_list:
        lower = name.lower()
        lower_names.setdefault(lower, []).append(name)
        parts = subwords(name)
        if len(parts) > 1:
            for part in dict.fromkeys(parts):
                subword_names.setdefault(part, []).append(name)
    lowered = [name.lower() for name in name_list]
    name_vocab, name_starts = _vocabulary(lowered)

    path_tokens: dict[str, dict[int, float]] = {}

    def offer(token: str, node: int, strength: float) -> None:
        held = path_tokens.setdefault(token, {})
        if held.get(node, 0.0) < strength:
            held[node] = strength

    for node, path in enumerate(paths):
        parts = path.split("/")
        name = parts[-1]
        stem = name.split(".", 1)[0] if not name.startswith(".") else name
        if stem in FOLDER_STEMS and len(parts) > 1:
            stem = parts[-2]
        offer(name.lower(), node, MATCH_PATH_STEM)
        offer(stem.lower(), node, MATCH_PATH_STEM)
        for part in subwords(stem):
            offer(part, node, MATCH_PATH_SUBWORD)
        for folder in parts[:-1]:
            offer(folder.lower(), node, MATCH_PATH_FOLDER)
            for part in subwords(folder):
                offer(part, node, MATCH_PATH_SUBWORD)
    path_list = sorted(path_tokens)
    path_vocab, path_starts = _vocabulary(path_list)

    return Structure(
        paths=paths,
        index=index,
        entries=entries,
        pagerank=pagerank,
        iterations=iterations,
        structure=structure,
        penalty=penalty,
        order=order,
        place=place,
        signals=signals,
        symbols=[tuple(found) for found in symbols_of],
        top_symbols=top_symbols,
        graph=graph,
        name_nodes=name_nodes,
        lower_names={k: tuple(v) for k, v in lower_names.items()},
        subword_names={k: tuple(v) for k, v in subword_names.items()},
        name_vocab=name_vocab,
        name_starts=name_starts,
        name_list=name_list,
        path_tokens={k: tuple(sorted(v.items())) for k, v in path_tokens.items()},
        path_vocab=path_vocab,
        path_starts=path_starts,
        path_list=path_list,
    )


@dataclass(frozen=True)
class Term:
    """One word of a query: ``raw`` as typed, ``text`` lowercased, and its weight."""

    raw: str
    text: str
    weight: float


def query_terms(query: str) -> list[Term]:
    """The words of ``query`` worth matching, each compound word also split into its parts."""
    terms: dict[str, Term] = {}
    for raw in _TOKEN.findall(query[:QUERY_MAX_CHARS]):
        text = raw.lower()
        if text in STOP_WORDS or len(text) < 2:
            continue
        if text not in terms or terms[text].weight < 1.0:
            terms[text] = Term(raw, text, 1.0)
        parts = [p for p in subwords(raw) if len(p) >= 2 and p not in STOP_WORDS]
        if len(parts) > 1:
            for part in parts:
                terms.setdefault(part, Term(part, part, PART_TERM_WEIGHT))
    return list(terms.values())[:QUERY_TERMS_MAX]


def _variant(text: str) -> str | None:
    for suffix in _SUFFIXES:
        if text.endswith(suffix) and len(text) - len(suffix) >= SUBSTRING_MIN_CHARS:
            return text[: -len(suffix)]
    return None


def _containing(vocab: str, starts: list[int], words: list[str], part: str) -> list[str] | None:
    """The words of a vocabulary containing ``part``; None when there are too many."""
    found: list[str] = []
    at = vocab.find(part)
    while at >= 0:
        word = words[bisect_right(starts, at) - 1]
        if not found or found[-1] != word:
            found.append(word)
            if len(found) > SUBSTRING_NAMES_MAX:
                return None
        at = vocab.find(part, at + 1)
    return found


@dataclass
class _TermMatch:
    """How one term matched one file: its best name, and its path, as two kinds of evidence.

    The two add up, as fields do in BM25F: glob.py, which is named "glob" and
    defines "glob", is a better answer to "glob" than a file that only defines it.
    """

    name: str | None = None
    name_strength: float = 0.0
    path_strength: float = 0.0

    @property
    def strength(self) -> float:
        return self.name_strength + self.path_strength


def _match_term(st: Structure, term: Term) -> tuple[dict[int, _TermMatch], set[str]]:
    """Every file ``term`` matches, and how; and every name it matched."""
    best: dict[int, _TermMatch] = {}
    matched: set[str] = set()

    def offer_name(node: int, strength: float, name: str) -> None:
        held = best.setdefault(node, _TermMatch())
        if held.name_strength < strength:
            held.name, held.name_strength = name, strength

    def offer_path(node: int, strength: float) -> None:
        held = best.setdefault(node, _TermMatch())
        held.path_strength = max(held.path_strength, strength)

    def names(found: Sequence[str], strength: float) -> None:
        matched.update(found)
        for name in found:
            exact = strength == MATCH_ICASE and name == term.raw
            for node in st.name_nodes[name]:
                offer_name(node, MATCH_EXACT if exact else strength, name)

    variant = _variant(term.text)
    for text, factor in ((term.text, 1.0), (variant, VARIANT_FACTOR)):
        if text is None:
            continue
        names(st.lower_names.get(text, ()), MATCH_ICASE * factor)
        names(st.subword_names.get(text, ()), MATCH_SUBWORD * factor)
        for node, strength in st.path_tokens.get(text, ()):
            offer_path(node, strength * factor)
    shortest = variant or term.text
    if len(shortest) >= SUBSTRING_MIN_CHARS:
        # The vocabulary holds the lowercased names in name_list's order.
        inside = _containing(st.name_vocab, st.name_starts, st.name_list, shortest)
        names(inside or (), MATCH_SUBSTRING)
        tokens = _containing(st.path_vocab, st.path_starts, st.path_list, shortest)
        for token in tokens or ():
            for node, _ in st.path_tokens[token]:
                offer_path(node, MATCH_PATH_SUBSTRING)
    # A known word the term starts with is its stem (configuration -> config).
    for end in range(PREFIX_MIN_CHARS, len(term.text)):
        prefix = term.text[:end]
        names(st.lower_names.get(prefix, ()), MATCH_SUBSTRING)
        names(st.subword_names.get(prefix, ()), MATCH_SUBSTRING)
        for node, _ in st.path_tokens.get(prefix, ()):
            offer_path(node, MATCH_PATH_SUBSTRING)
    return best, matched


def _path_query(st: Structure, query: str) -> int | None:
    """The file a query names by its path (``urllib/parse.py``, ``./src/x.go``), if any."""
    wanted = query.strip().removeprefix("./")
    if "/" not in wanted and "." not in wanted:
        return None
    node = st.index.get(wanted)
    if node is not None:
        return node
    ends = [n for n, path in enumerate(st.paths) if path.endswith("/" + wanted)]
    return ends[0] if len(ends) == 1 else None


@dataclass
class _Personal:
    boost: dict[int, float] = field(default_factory=dict)
    said: dict[int, list[str]] = field(default_factory=dict)
    matched: dict[int, dict[str, float]] = field(default_factory=dict)

    def add(self, node: int, amount: float, signal: str | None) -> None:
        self.boost[node] = self.boost.get(node, 0.0) + amount
        if signal is not None:
            self.said.setdefault(node, []).append(signal)


def _apply_query(st: Structure, query: str, personal: _Personal) -> dict[int, float]:
    """Each matching file's query score scaled to QUERY_WEIGHT for the best, before penalty."""
    count = len(st.paths)
    terms = query_terms(query)
    scores: dict[int, float] = {}
    covered: dict[int, float] = {}
    why: dict[int, list[tuple[float, str]]] = {}
    total_weight = 0.0
    # name -> the terms it matched, with each term's weight x idf
    spans: dict[str, list[tuple[str, float]]] = {}
    for term in terms:
        found, names = _match_term(st, term)
        if not found or len(found) > COMMON_TERM_SHARE * count:
            continue
        total_weight += term.weight
        df = len(found)
        idf = math.log(1.0 + (count - df + 0.5) / (df + 0.5))
        for matched_name in names:
            spans.setdefault(matched_name, []).append((term.text, term.weight * idf))
        for node in sorted(found):
            match = found[node]
            scores[node] = scores.get(node, 0.0) + term.weight * idf * match.strength
            covered[node] = covered.get(node, 0.0) + term.weight
            reasons = why.setdefault(node, [])
            if match.name is not None:
                strength = match.name_strength
                held = personal.matched.setdefault(node, {})
                held[match.name] = max(held.get(match.name, 0.0), strength)
                how = "(query)" if strength >= MATCH_ICASE else f"(matches '{term.text}')"
                reasons.append((strength, f"defines '{match.name}' {how}"))
            if match.path_strength:
                reasons.append((match.path_strength, f"path matches '{term.text}'"))
    _phrases(st, spans, scores, why)
    named = _path_query(st, query)
    if named is not None:
        scores[named] = scores.get(named, 0.0) + MATCH_PATH_EXACT * max(total_weight, 1.0)
        covered[named] = total_weight
        why.setdefault(named, []).insert(0, (MATCH_PATH_EXACT * 10, "its path is the query"))
    if not scores:
        return {}
    for node in scores:
        share = covered[node] / total_weight if total_weight else 1.0
        scores[node] *= COVERAGE_FLOOR + (1.0 - COVERAGE_FLOOR) * share
    top = max(scores.values())
    result = {}
    for node in sorted(scores):
        result[node] = QUERY_WEIGHT * scores[node] / top
        reasons = sorted(why[node], key=lambda item: -item[0])
        unique = list(dict.fromkeys(reason for _, reason in reasons))
        personal.said.setdefault(node, []).extend(unique[:QUERY_SIGNALS_MAX])
    return result


def _phrases(
    st: Structure,
    spans: dict[str, list[tuple[str, float]]],
    scores: dict[int, float],
    why: dict[int, list[tuple[float, str]]],
) -> None:
    """Add the bonus of the best name per file that holds several of the query's words.

    TemporaryFile for "create a temporary file" is better evidence than a file
    defining "create" and another name holding "file": the words were meant together.
    """
    best: dict[int, tuple[float, str, list[str]]] = {}
    for name in sorted(spans):
        held = spans[name]
        if len(held) < 2:
            continue
        bonus = PHRASE_BONUS * math.fsum(value for _, value in held)
        for node in st.name_nodes[name]:
            if node not in best or best[node][0] < bonus:
                best[node] = (bonus, name, [text for text, _ in held])
    for node, (bonus, name, words) in best.items():
        scores[node] = scores.get(node, 0.0) + bonus
        said = f"defines '{name}' (matches '{' '.join(words)}')"
        why.setdefault(node, []).append((MATCH_EXACT + len(words), said))


def _normal(path: str) -> str:
    path = path.strip()
    while path.startswith("./"):
        path = path[2:]
    return path.rstrip("/")


def _personalise(
    st: Structure, query: str | None, focus: Sequence[str], touched: Sequence[str]
) -> _Personal:
    personal = _Personal()
    fixed: dict[int, float] = {}
    label: dict[int, str] = {}
    for raw in sorted(set(touched)):
        node = st.index.get(_normal(raw))
        if node is not None:
            fixed[node] = fixed.get(node, 0.0) + TOUCHED_WEIGHT
            personal.said.setdefault(node, []).append("touched this session")
            label[node] = "touched"
    for raw in sorted({_normal(f) for f in focus}):
        if raw in ("", "."):
            continue
        for node in _under(st, raw):
            fixed[node] = fixed.get(node, 0.0) + FOCUS_WEIGHT
            personal.said.setdefault(node, []).append(f"in focus '{raw}'")
            label.setdefault(node, "in focus")
    query_part = _apply_query(st, query, personal) if query else {}
    for node in query_part:
        label.setdefault(node, "matches the query")
    seeds: dict[int, float] = dict(fixed)
    for node, amount in query_part.items():
        seeds[node] = seeds.get(node, 0.0) + amount
    # node -> (boost from all seeds, the seed that gave the most, how much it gave)
    spread: dict[int, tuple[float, int, float]] = {}
    strongest = sorted(seeds, key=lambda n: (-seeds[n], st.paths[n]))[:NEIGHBOUR_SEEDS_MAX]
    for seed in strongest:
        near, total = st.neighbours(seed)
        for node, weight in near:
            amount = NEIGHBOUR_SHARE * seeds[seed] * weight / total
            held = spread.get(node)
            if held is None:
                spread[node] = (amount, seed, amount)
            elif amount > held[2]:
                spread[node] = (held[0] + amount, seed, amount)
            else:
                spread[node] = (held[0] + amount, held[1], held[2])
    for node in sorted(set(fixed) | set(query_part) | set(spread)):
        boosted = fixed.get(node, 0.0)
        matched = query_part.get(node, 0.0)
        neighbour = spread.get(node)
        nudge = neighbour[0] if neighbour else 0.0
        personal.add(node, boosted + st.penalty[node] * (matched + nudge), None)
        if neighbour is not None and node not in fixed and node not in query_part:
            seed = neighbour[1]
            personal.said.setdefault(node, []).append(
                f"neighbour of '{st.paths[seed]}' ({label[seed]})"
            )
    return personal


def _under(st: Structure, folder: str) -> Iterator[int]:
    node = st.index.get(folder)
    if node is not None:
        yield node
        return
    prefix = folder + "/"
    start = bisect_right(st.paths, prefix)
    # Paths are sorted: every path under the folder follows prefix directly.
    if start > 0 and st.paths[start - 1].startswith(prefix):
        start -= 1
    for node in range(start, len(st.paths)):
        if not st.paths[node].startswith(prefix):
            break
        yield node


def rank(
    snapshot: Snapshot,
    *,
    query: str | None = None,
    focus: Sequence[str] = (),
    touched: Sequence[str] = (),
    limit: int | None = None,
) -> list[Ranked]:
    """The files of ``snapshot``, most relevant first (at most ``limit`` of them).

    Relevance is the structural score (PageRank times the prior, computed once per
    snapshot) plus what this call personalises: files matching ``query`` by path or
    by symbol, files under a ``focus`` path, files the session ``touched``, and a
    share of each of those boosts for their neighbours in the graph.

    Why a blend and not a personalised PageRank: one PageRank sweep costs a pass
    over every edge (tests/bench/map_rank.py prints it: tens of milliseconds at
    20,000 files in plain Python), and a personalised run needs tens of sweeps,
    far over the 100 ms a re-rank may take. The blend is the first step of that
    walk (each seed's restart mass spread once over its edges, by edge weight) on
    top of the global ranks, and costs a dictionary pass over the matching files.
    """
    st = structure_of(snapshot)
    personal = _personalise(st, query, focus, touched)
    boost = personal.boost
    chosen = sorted(
        boost, key=lambda n: (-(STRUCTURE_WEIGHT * st.structure[n] + boost[n]), st.paths[n])
    )
    # Every other file keeps its structural place, so the two ordered runs merge.
    rest = (n for n in st.order if n not in boost)
    ordered = merge(
        chosen,
        rest,
        key=lambda n: (-(STRUCTURE_WEIGHT * st.structure[n] + boost.get(n, 0.0)), st.paths[n]),
    )
    result: list[Ranked] = []
    for node in ordered:
        if limit is not None and len(result) >= limit:
            break
        result.append(_ranked(st, node, boost.get(node, 0.0), personal))
    return result


def _ranked(st: Structure, node: int, boost: float, personal: _Personal) -> Ranked:
    matched_names = personal.matched.get(node, {})
    matched: list[Symbol] = []
    if matched_names:
        order = sorted(matched_names, key=lambda n: (-matched_names[n], n))
        place = {name: i for i, name in enumerate(order)}
        hits = [s for s in st.symbols[node] if s.name in place]
        hits.sort(key=lambda s: (place[s.name], s.line))
        matched = hits[:MATCHED_SYMBOLS_MAX]
    shown = list(dict.fromkeys((*matched, *st.top_symbols[node])))
    return Ranked(
        path=st.paths[node],
        score=STRUCTURE_WEIGHT * st.structure[node] + boost,
        signals=[*personal.said.get(node, ()), *st.signals[node]],
        symbols=shown[:RANKED_SYMBOLS_MAX],
        matched=matched,
    )
