"""Ranking: the graph and its PageRank, the prior, personalisation, signals, determinism."""

from __future__ import annotations

import gc
import json
import math
import os
import pickle
import subprocess
import sys
import weakref
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from map.snapshots import snapshot

from ax_map import structure
from ax_map.model import Coverage, Snapshot
from ax_map.query import query_terms
from ax_map.rank import matches, rank
from ax_map.structure import build_structure, is_specific, name_units, structure_of, subwords

ROOT = Path(__file__).resolve().parents[2]


def paths(ranked: list) -> list[str]:
    return [r.path for r in ranked]


def signals_of(ranked: list, path: str) -> list[str]:
    return next(r.signals for r in ranked if r.path == path)


def test_an_empty_snapshot_ranks_nothing() -> None:
    empty = Snapshot("/ws", [], [], {}, [], Coverage(total=0, indexed=0), git=True)
    assert rank(empty) == []
    assert rank(empty, query="anything", focus=["src"], touched=["a.py"]) == []
    assert matches(empty, "anything") == []


def test_pagerank_on_a_dangling_node_matches_the_closed_form() -> None:
    # a -> b, b has no outgoing edge: its mass is spread evenly, as the teleport is.
    snap = snapshot({"a.py": ([], ["target_function"]), "b.py": (["target_function"], [])})
    st_ = build_structure(snap)
    ranks = dict(zip(st_.paths, st_.pagerank, strict=True))
    d = structure.DAMPING
    # r_a = (1 - d)/2 + d r_b/2 (teleport, and half of b's dangling mass), r_b = 1 - r_a.
    a = 0.5 / (1 + d / 2)
    assert ranks["a.py"] == pytest.approx(a, abs=1e-6)
    assert ranks["b.py"] == pytest.approx(1 - a, abs=1e-6)


def test_a_cycle_shares_its_rank_evenly_and_ranks_sum_to_one() -> None:
    snap = snapshot(
        {
            "a.py": (["alpha_function"], ["beta_function"]),
            "b.py": (["beta_function"], ["gamma_function"]),
            "c.py": (["gamma_function"], ["alpha_function"]),
            "lonely.py": (["nothing_here"], []),
        }
    )
    st_ = build_structure(snap)
    ranks = dict(zip(st_.paths, st_.pagerank, strict=True))
    assert math.fsum(st_.pagerank) == pytest.approx(1.0, abs=1e-9)
    assert ranks["a.py"] == pytest.approx(ranks["b.py"], abs=1e-9)
    assert ranks["b.py"] == pytest.approx(ranks["c.py"], abs=1e-9)
    assert ranks["lonely.py"] < ranks["a.py"]
    assert st_.iterations < structure.PAGERANK_MAX_ITERATIONS


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 11), st.integers(0, 11)),
        max_size=40,
    )
)
def test_pagerank_of_any_graph_is_a_distribution(edges: list[tuple[int, int]]) -> None:
    names = [f"defined_name_{i}" for i in range(12)]
    uses: dict[int, set[str]] = {i: set() for i in range(12)}
    for source, target in edges:
        uses[source].add(names[target])
    snap = snapshot({f"f{i:02}.py": ([names[i]], uses[i]) for i in range(12)})
    st_ = build_structure(snap)
    assert math.fsum(st_.pagerank) == pytest.approx(1.0, abs=1e-9)
    assert all(r > 0 for r in st_.pagerank)
    assert max(st_.structure) == pytest.approx(1.0)


def test_a_specific_name_weighs_more_than_a_generic_one() -> None:
    assert is_specific("parse_known_args") and is_specific("ArgumentParser")
    assert not is_specific("run") and not is_specific("parseargs") and not is_specific("short_n")
    assert name_units("parse_known_args", 1) == 10 * name_units("runner", 1)
    assert name_units("_private_name", 1) < name_units("private_name", 1)
    assert name_units("run", structure.COMMON_NAME_DEFINERS + 1) < name_units("run", 1)
    snap = snapshot(
        {
            "user.py": ([], ["load_configuration_file", "runner"]),
            "specific.py": (["load_configuration_file"], []),
            "generic.py": (["runner"], []),
        }
    )
    order = paths(rank(snap))
    assert order.index("specific.py") < order.index("generic.py")


def test_a_name_defined_everywhere_or_a_short_name_makes_no_edge() -> None:
    many = structure.NAME_DEFINERS_MAX + 1
    files = {f"d{i:02}.py": (["get_value"], []) for i in range(many)}
    files["user.py"] = ([], ["get_value", "xy"])
    files["short.py"] = (["xy"], [])
    st_ = build_structure(snapshot(files))
    assert st_.graph.edges == 0


def test_a_file_using_its_own_definition_makes_no_edge_to_another_definer() -> None:
    snap = snapshot(
        {"a.py": (["shared_helper"], ["shared_helper"]), "b.py": (["shared_helper"], [])}
    )
    assert build_structure(snap).graph.edges == 0


def test_imports_are_edges_and_are_said() -> None:
    files = {f"m{i}.py": ([f"thing_{i}"], []) for i in range(4)}
    files["core.py"] = (["Core"], [])
    snap = snapshot(files, imports=[(f"m{i}.py", "core.py") for i in range(4)])
    ranked = rank(snap)
    assert ranked[0].path == "core.py"
    assert "imported by 4 files" in ranked[0].signals
    assert "structural rank 1 of 5" in ranked[0].signals


def test_the_prior_moves_files_and_says_why() -> None:
    same = ([], [])
    files = {
        "pkg/plain.py": same,
        "pkg/__main__.py": same,
        "pkg/tests/test_plain.py": same,
        "vendor/lib/x.py": same,
        "gen/api_pb2.py": same,
        "pkg/dirty.py": same,
        "pyproject.toml": same,
    }
    snap = snapshot(files, changed=["pkg/dirty.py"])
    ranked = rank(snap)
    order = paths(ranked)
    assert order.index("pkg/__main__.py") < order.index("pkg/plain.py")
    assert order.index("pkg/dirty.py") < order.index("pkg/plain.py")
    assert order.index("pyproject.toml") < order.index("pkg/plain.py")
    for low in ("pkg/tests/test_plain.py", "vendor/lib/x.py", "gen/api_pb2.py"):
        assert order.index(low) > order.index("pkg/plain.py")
    assert "entry point" in signals_of(ranked, "pkg/__main__.py")
    assert "manifest" in signals_of(ranked, "pyproject.toml")
    assert "uncommitted change" in signals_of(ranked, "pkg/dirty.py")
    assert "test file, ranked down" in signals_of(ranked, "pkg/tests/test_plain.py")
    assert "vendored code, ranked down" in signals_of(ranked, "vendor/lib/x.py")
    assert "generated code, ranked down" in signals_of(ranked, "gen/api_pb2.py")


def test_uncommitted_means_nothing_outside_git() -> None:
    snap = snapshot({"a.py": ([], []), "b.py": ([], [])}, changed=["b.py"], git=False)
    assert not any("uncommitted" in s for r in rank(snap) for s in r.signals)


def test_listed_files_are_not_ranked_unless_they_are_manifests() -> None:
    snap = snapshot(
        {"a.py": ([], []), "later.py": ([], [])},
        listed={".env": "secret-named", "logo.png": "binary", "package.json": "too large"},
        pending=["later.py"],
    )
    ranked = rank(snap)
    assert sorted(paths(ranked)) == ["a.py", "later.py", "package.json"]
    assert "listed, not read (too large)" in signals_of(ranked, "package.json")
    assert any("pending" in s for s in signals_of(ranked, "later.py"))


def central_repo() -> Snapshot:
    """core.py is central; widgets/frob.py is peripheral but defines frobnicate_widget."""
    files = {f"app/m{i}.py": ([f"module_fn_{i}"], ["core_helper"]) for i in range(8)}
    files["core.py"] = (["core_helper", "CoreThing"], [])
    files["widgets/frob.py"] = (["frobnicate_widget", "FrobConfig"], ["core_helper"])
    files["widgets/other.py"] = (["other_widget"], ["frobnicate_widget"])
    files["unrelated.py"] = (["unrelated_thing"], [])
    return snapshot(files)


def test_a_query_moves_the_defining_file_to_the_top_and_says_why() -> None:
    snap = central_repo()
    assert rank(snap)[0].path == "core.py"
    for query in ("frobnicate_widget", "frobnicate widget", "FrobnicateWidget", "frobnicate"):
        ranked = rank(snap, query=query)
        assert ranked[0].path == "widgets/frob.py", query
        assert any("frobnicate_widget" in s for s in ranked[0].signals), ranked[0].signals
        assert ranked[0].matched[0].name == "frobnicate_widget"
        assert ranked[0].symbols[0].name == "frobnicate_widget"
    assert "defines 'frobnicate_widget' (query)" in rank(snap, query="frobnicate_widget")[0].signals


def test_a_query_matching_a_path_finds_the_file() -> None:
    ranked = rank(central_repo(), query="widgets")
    assert set(paths(ranked[:2])) == {"widgets/frob.py", "widgets/other.py"}
    assert "path matches 'widgets'" in ranked[0].signals
    assert rank(central_repo(), query="widgets/other.py")[0].path == "widgets/other.py"
    assert "its path is the query" in rank(central_repo(), query="widgets/other.py")[0].signals


def test_exact_beats_case_blind_beats_part_beats_substring() -> None:
    snap = snapshot(
        {
            "a_substring.py": (["ConfigParsers"], []),
            "b_part.py": (["xml_parser_base"], []),
            "c_icase.py": (["PARSER"], []),
            "d_exact.py": (["parser"], []),
        }
    )
    assert paths(rank(snap, query="parser")) == [
        "d_exact.py",
        "c_icase.py",
        "b_part.py",
        "a_substring.py",
    ]


def test_a_name_or_path_starting_with_the_word_beats_one_holding_it_inside() -> None:
    # heapq.py and heappush: compounds written without a separator start with their first
    # word; "cheap" only holds the letters.
    snap = snapshot({"a_inside.py": (["cheapest"], []), "b_prefix.py": (["_heappush"], [])})
    assert paths(rank(snap, query="heap")) == ["b_prefix.py", "a_inside.py"]
    snap = snapshot({"cheap.py": ([], []), "heapq.py": ([], [])})
    assert paths(matches(snap, "heap")) == ["heapq.py", "cheap.py"]


def test_query_words_split_camel_and_snake_case() -> None:
    assert [t.text for t in query_terms("parseArgs of HTTPServer")] == [
        "parseargs",
        "parse",
        "args",
        "httpserver",
        "http",
        "server",
    ]
    assert "ipv4" in subwords("IPv4Network") and "http" in subwords("SimpleHTTPServer")
    snap = snapshot({"cli.py": (["parseArgs"], []), "other.py": (["parse_config"], [])})
    assert rank(snap, query="parse args")[0].path == "cli.py"
    assert rank(snap, query="parse_args")[0].path == "cli.py"


def test_a_name_holding_several_query_words_wins() -> None:
    snap = snapshot(
        {
            "scattered.py": (["temporary_value", "file_name"], []),
            "together.py": (["TemporaryFile"], []),
        }
    )
    ranked = rank(snap, query="create a temporary file")
    assert ranked[0].path == "together.py"
    assert "defines 'TemporaryFile' (matches 'temporary file')" in ranked[0].signals


def test_focus_and_touched_move_files_and_their_neighbours_up() -> None:
    snap = central_repo()
    ranked = rank(snap, focus=["widgets/"])
    assert set(paths(ranked[:2])) == {"widgets/frob.py", "widgets/other.py"}
    assert "in focus 'widgets'" in ranked[0].signals
    ranked = rank(snap, touched=["./unrelated.py"])
    assert ranked[0].path == "unrelated.py"
    assert "touched this session" in ranked[0].signals
    ranked = rank(snap, touched=["widgets/other.py"])
    before = next(r.score for r in rank(snap) if r.path == "widgets/frob.py")
    assert next(r.score for r in ranked if r.path == "widgets/frob.py") > before
    assert "neighbour of 'widgets/other.py' (touched)" in signals_of(ranked, "widgets/frob.py")


def test_a_test_files_match_ranks_below_the_definitions_match() -> None:
    snap = snapshot(
        {"tests/test_thing.py": (["special_thing"], []), "thing.py": (["special_thing"], [])}
    )
    assert paths(rank(snap, query="special_thing")) == ["thing.py", "tests/test_thing.py"]


def test_matches_leaves_out_files_that_do_not_match() -> None:
    snap = central_repo()
    found = matches(snap, "frobnicate", touched=["unrelated.py"])
    assert "unrelated.py" not in paths(found) and "core.py" not in paths(found)
    assert found[0].path == "widgets/frob.py"
    assert matches(snap, "zzzz_nothing_matches") == []


def test_limit_and_every_file_once() -> None:
    snap = central_repo()
    everything = rank(snap, query="widget")
    assert sorted(paths(everything)) == sorted(e.path for e in snap.files)
    assert rank(snap, query="widget", limit=3) == everything[:3]


def test_ties_go_by_path_and_input_order_does_not_matter() -> None:
    files = {f"z{i}.py": (["same_name_everywhere"], []) for i in range(5)}
    snap = snapshot(files)
    assert paths(rank(snap)) == sorted(files)
    shuffled = replace(
        central_repo(),
        files=list(reversed(central_repo().files)),
        symbols=list(reversed(central_repo().symbols)),
        imports=list(reversed(central_repo().imports)),
    )
    assert rank(shuffled, query="widget core") == rank(central_repo(), query="widget core")


DETERMINISM_SCRIPT = """
import json, sys
sys.path[:0] = [{tests!r}]
from map.test_rank import central_repo
from ax_map.rank import rank
out = [[r.path, repr(r.score), r.signals, [s.name for s in r.symbols]]
       for q in (None, "widget core helper", "frob config")
       for r in rank(central_repo(), query=q, touched=["app/m1.py"])]
print(json.dumps(out))
"""


def test_the_ranking_is_the_same_under_every_hash_seed() -> None:
    script = DETERMINISM_SCRIPT.format(tests=str(ROOT / "tests"))
    outputs = set()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        )
        outputs.add(done.stdout)
    assert len(outputs) == 1
    assert json.loads(outputs.pop())


def test_the_structure_is_cached_per_snapshot_and_never_holds_a_query() -> None:
    snap = central_repo()
    first = structure_of(snap)

    def state() -> bytes:
        return pickle.dumps((first.pagerank, first.structure, first.order, first.lookup))

    before = state()
    rank(snap, query="frobnicate", focus=["widgets"], touched=["core.py"])
    matches(snap, "core helper")
    assert structure_of(snap) is first
    assert state() == before
    # What it fills in on demand is per file, never per query.
    assert set(first._near) <= set(range(len(first.paths)))
    assert set(first._top) <= set(range(len(first.paths)))
    assert structure_of(central_repo()) is not first


def test_a_dropped_snapshot_is_not_kept_alive() -> None:
    snap = central_repo()
    structure_of(snap)
    alive = weakref.ref(snap)
    del snap
    gc.collect()
    assert alive() is None


def test_top_symbols_prefer_used_classes_and_functions() -> None:
    snap = snapshot(
        {
            "lib.py": (["local_value", "_private_helper", "UsedEverywhere", "rarely_used"], []),
            **{f"u{i}.py": ([], ["UsedEverywhere"]) for i in range(3)},
        }
    )
    ranked = {r.path: r for r in rank(snap)}
    assert ranked["lib.py"].symbols[0].name == "UsedEverywhere"
    assert ranked["lib.py"].symbols[-1].name == "_private_helper"


def test_signals_never_hold_an_unprintable_character() -> None:
    evil = "w/evil\nline.py"
    snap = snapshot(
        {evil: (["evil_helper"], []), "user.py": ([], ["evil_helper"])},
        listed={"package.json": "too\nlarge"},
    )
    for ranked in (rank(snap, touched=[evil]), rank(snap, focus=["w\n"]), rank(snap, query="evil")):
        for entry in ranked:
            assert all(s.isprintable() for s in entry.signals), entry.signals
    said = signals_of(rank(snap, touched=[evil]), "user.py")
    assert "neighbour of 'w/evil\\nline.py' (touched)" in said


def test_the_cache_keeps_the_most_recently_used_snapshots() -> None:
    kept = [central_repo() for _ in range(structure.SNAPSHOT_CACHE_ENTRIES)]
    first = structure_of(kept[0])
    for snap in kept[1:]:
        structure_of(snap)
    assert structure_of(kept[0]) is first  # used again: now the most recent
    structure_of(central_repo())  # one more pushes out the least recently used
    assert structure_of(kept[0]) is first
    assert not any(ref() is kept[1] for ref, _ in structure._CACHE)
