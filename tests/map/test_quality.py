"""Retrieval quality: recall@5 on labelled queries over this interpreter's standard library.

The snapshot comes from the throwaway regex extractor in stdlib_snapshot.py (the
real index is built elsewhere); the queries and their answers are the data files
next to this one. ``pytest -s`` prints the figures and the misses.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from map.stdlib_snapshot import build_snapshot, read_queries, stdlib_root

from ax_map.model import Snapshot
from ax_map.retrieve import retrieve

HERE = Path(__file__).parent
RECALL_AT = 5
RECALL_GOAL = 0.9
LABELLED_MIN = 40


@pytest.fixture(scope="module")
def stdlib() -> Snapshot:
    return build_snapshot(stdlib_root())


def recall(snap: Snapshot, queries: list[tuple[str, list[str]]]) -> tuple[float, list[str]]:
    found = 0
    misses = []
    for query, expected in queries:
        hits = [hit.path for hit in retrieve(snap, stdlib_root(), query, limit=RECALL_AT)]
        if any(path in hits for path in expected):
            found += 1
        else:
            misses.append(f"{query!r} -> {expected} (got {hits})")
    return found / len(queries), misses


@pytest.mark.parametrize("labels", ["stdlib_queries.txt", "stdlib_queries_heldout.txt"])
def test_recall_at_5_on_the_labelled_stdlib_queries(stdlib: Snapshot, labels: str) -> None:
    queries = read_queries(HERE / labels)
    indexed = {entry.path for entry in stdlib.files}
    for query, expected in queries:
        assert any(path in indexed for path in expected), (query, expected)
    score, misses = recall(stdlib, queries)
    print(f"\n{labels}: recall@{RECALL_AT} {score:.3f} over {len(queries)} queries")
    for miss in misses:
        print(f"  miss: {miss}")
    assert score >= RECALL_GOAL, misses


def test_each_labelled_set_is_large_enough_on_its_own() -> None:
    assert len(read_queries(HERE / "stdlib_queries.txt")) >= LABELLED_MIN
    assert len(read_queries(HERE / "stdlib_queries_heldout.txt")) >= LABELLED_MIN // 2
