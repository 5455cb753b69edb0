"""Which files matter, for this query and this session, and why, in words.

``rank`` starts from the snapshot's structure (structure.py: PageRank over the
file graph times a structural prior, computed once per snapshot and cached) and
adds what this call personalises: files matching the query (query.py), files
under a focus path, files the session touched, and a share of each of those
boosts for their neighbours in the graph. Nothing query-dependent is cached.

The order is deterministic: equal scores are ordered by path. Every ``Ranked``
carries its signals in words, the query's evidence first.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from heapq import merge
from itertools import islice

from .model import Snapshot, Symbol
from .printable import printable
from .query import QueryMatch, match_query
from .structure import Structure, structure_of

# The final score: STRUCTURE_WEIGHT x structure (0..1) plus the personal parts
# (a query match is worth up to query.QUERY_WEIGHT = 10).
STRUCTURE_WEIGHT = 2.0
TOUCHED_WEIGHT = 6.0
FOCUS_WEIGHT = 6.0
# Share of a personalised file's boost that spreads to its graph neighbours.
NEIGHBOUR_SHARE = 0.3
NEIGHBOUR_SEEDS_MAX = 50
RANKED_SYMBOLS_MAX = 10
MATCHED_SYMBOLS_MAX = 10


@dataclass(frozen=True)
class Ranked:
    """One file of a ranking: why it is there (``signals``) and its best symbols.

    ``symbols`` are the file's top definitions, best first, those matching the query
    first; ``matched`` are the ones that matched the query (empty without one).
    """

    path: str
    score: float
    signals: list[str]
    symbols: list[Symbol]
    matched: list[Symbol] = field(default_factory=list)


@dataclass
class _Personal:
    """What this call adds to the structure: boosts per file, and the evidence for each."""

    boost: dict[int, float] = field(default_factory=dict)
    touched: set[int] = field(default_factory=set)
    focus: dict[int, str] = field(default_factory=dict)
    # node -> the personalised file it is a neighbour of (the one that gave it most).
    near: dict[int, int] = field(default_factory=dict)
    query: QueryMatch | None = None

    def hits(self) -> set[int]:
        return set(self.query.scores) if self.query is not None else set()


def _normal(path: str) -> str:
    path = path.strip()
    while path.startswith("./"):
        path = path[2:]
    return path.rstrip("/")


def _under(st: Structure, folder: str) -> Iterator[int]:
    """The file ``folder`` names, or every file below it (paths are sorted)."""
    node = st.index.get(folder)
    if node is not None:
        yield node
        return
    prefix = folder + "/"
    for node in range(bisect_left(st.paths, prefix), len(st.paths)):
        if not st.paths[node].startswith(prefix):
            break
        yield node


def _personalise(
    st: Structure, query: str | None, focus: Sequence[str], touched: Sequence[str]
) -> _Personal:
    personal = _Personal()
    fixed: dict[int, float] = {}
    for raw in sorted({_normal(t) for t in touched}):
        node = st.index.get(raw)
        if node is not None:
            personal.touched.add(node)
            fixed[node] = fixed.get(node, 0.0) + TOUCHED_WEIGHT
    for raw in sorted({_normal(f) for f in focus} - {"", "."}):
        for node in _under(st, raw):
            if node not in personal.focus:
                personal.focus[node] = raw
                fixed[node] = fixed.get(node, 0.0) + FOCUS_WEIGHT
    matched: dict[int, float] = {}
    if query:
        personal.query = match_query(st, query)
        matched = personal.query.scores
    seeds = dict(fixed)
    for node, amount in matched.items():
        seeds[node] = seeds.get(node, 0.0) + amount
    spread = _spread(st, seeds, personal.near)
    boost = personal.boost
    for node in fixed.keys() | matched.keys() | spread.keys():
        # A test, vendored or generated file's match counts for less; what the session
        # touched or focused on counts in full: it was chosen.
        found = matched.get(node, 0.0) + spread.get(node, 0.0)
        boost[node] = fixed.get(node, 0.0) + st.penalty[node] * found
    for node in fixed.keys() | matched.keys():
        personal.near.pop(node, None)
    return personal


def _spread(st: Structure, seeds: dict[int, float], near: dict[int, int]) -> dict[int, float]:
    """NEIGHBOUR_SHARE of each seed's boost, shared among its neighbours by edge weight.

    This is the first step of a personalised PageRank's walk from the seeds, on top
    of the global ranks; ``near`` records, per neighbour, the seed that gave it most.
    """
    spread: dict[int, float] = {}
    most: dict[int, float] = {}
    strongest = sorted(seeds, key=lambda n: (-seeds[n], n))[:NEIGHBOUR_SEEDS_MAX]
    for seed in strongest:
        neighbours, total = st.neighbours(seed)
        share = NEIGHBOUR_SHARE * seeds[seed] / total if total else 0.0
        for node, weight in neighbours:
            amount = share * weight
            spread[node] = spread.get(node, 0.0) + amount
            if most.get(node, 0.0) < amount:
                most[node] = amount
                near[node] = seed
    return spread


def rank(
    snapshot: Snapshot,
    *,
    query: str | None = None,
    focus: Sequence[str] = (),
    touched: Sequence[str] = (),
    limit: int | None = None,
) -> list[Ranked]:
    """The files of ``snapshot``, most relevant first (at most ``limit`` of them)."""
    return list(islice(ranking(snapshot, query=query, focus=focus, touched=touched), limit))


def ranking(
    snapshot: Snapshot,
    *,
    query: str | None = None,
    focus: Sequence[str] = (),
    touched: Sequence[str] = (),
) -> Iterator[Ranked]:
    """``rank``'s order, made one file at a time as it is drawn.

    A file's signals and symbols cost more than its place in the order, and a map
    shows only the files its budget holds: the renderer draws as many as fit.

    Why a blend and not a personalised PageRank: one PageRank sweep is a pass over
    every edge (tests/bench/map_rank.py prints its cost: tens of milliseconds at
    20,000 files in plain Python), and a personalised run needs tens of sweeps, far
    over the 100 ms a re-rank may take. The blend (``_spread``) is the first step of
    that walk on top of the global ranks, and costs a pass over the matching files
    and their strongest neighbours.
    """
    st = structure_of(snapshot)
    personal = _personalise(st, query, focus, touched)
    boost = personal.boost

    def key(node: int) -> tuple[float, int]:
        # Node numbers follow path order: ties go by path.
        return (-(STRUCTURE_WEIGHT * st.structure[node] + boost.get(node, 0.0)), node)

    chosen = sorted(boost, key=key)
    # Every other file keeps its structural place, so the two ordered runs merge.
    rest = (node for node in st.order if node not in boost)
    return (_ranked(st, node, personal) for node in merge(chosen, rest, key=key))


def matches(
    snapshot: Snapshot, query: str, *, touched: Sequence[str] = (), limit: int | None = None
) -> list[Ranked]:
    """The files matching ``query`` by path or by a name they define, ranked as ``rank`` does.

    Unlike ``rank``, a file that is only central, touched or a neighbour is left out:
    this is the answer to a search, not a map.
    """
    st = structure_of(snapshot)
    personal = _personalise(st, query, (), touched)
    boost = personal.boost
    ordered = sorted(
        personal.hits(), key=lambda n: (-(STRUCTURE_WEIGHT * st.structure[n] + boost[n]), n)
    )
    return _take(st, ordered, personal, limit)


def _take(
    st: Structure, ordered: Iterable[int], personal: _Personal, limit: int | None
) -> list[Ranked]:
    result: list[Ranked] = []
    for node in ordered:
        if limit is not None and len(result) >= limit:
            break
        result.append(_ranked(st, node, personal))
    return result


def _ranked(st: Structure, node: int, personal: _Personal) -> Ranked:
    signals: list[str] = []
    matched: list[Symbol] = []
    if personal.query is not None and node in personal.query.scores:
        signals.extend(personal.query.reasons(node))
        names = personal.query.names(node)
        hits = [s for s in st.symbols[node] if s.name in names]
        hits.sort(key=lambda s: (-names[s.name], s.name, s.line))
        matched = hits[:MATCHED_SYMBOLS_MAX]
    if node in personal.touched:
        signals.append("touched this session")
    if node in personal.focus:
        signals.append(f"in focus '{printable(personal.focus[node])}'")
    seed = personal.near.get(node)
    if seed is not None:
        why = "touched" if seed in personal.touched else "in focus"
        if personal.query is not None and seed in personal.query.scores:
            why = "matches the query"
        signals.append(f"neighbour of '{printable(st.paths[seed])}' ({why})")
    signals.extend(st.signals(node))
    shown = list(dict.fromkeys((*matched, *st.top_symbols(node))))
    return Ranked(
        path=st.paths[node],
        score=STRUCTURE_WEIGHT * st.structure[node] + personal.boost.get(node, 0.0),
        signals=signals,
        symbols=shown[:RANKED_SYMBOLS_MAX],
        matched=matched,
    )
