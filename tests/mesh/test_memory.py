"""memory.*: the contract on both backends (SQLite and a real PostgreSQL server)."""

from __future__ import annotations

import json

import pytest
from mesh.meshtest import Harness

from ax_mesh.limits import RESULT_MAX_BYTES
from libcommon.errors import UsageError


def test_write_read_and_revisions(mesh: Harness) -> None:
    a = mesh.seat("a", revise=("team",))
    made = a.call("memory.write", store="team", path="notes/plan.md", text="one\ntwo\nthree")
    assert (made["revision"], made["created"], made["author"]) == (1, True, "a")
    again = a.call("memory.write", store="team", path="notes/plan.md", text="uno\ndos")
    assert (again["revision"], again["created"]) == (2, False)
    now = a.call("memory.read", store="team", path="notes/plan.md")
    assert (now["text"], now["revision"], now["line_count"]) == ("uno\ndos", 2, 2)
    past = a.call("memory.read", record_id=made["record_id"], revision=1)
    assert past["text"] == "one\ntwo\nthree" and past["current_revision"] == 2
    tail = a.call("memory.read", store="team", path="notes/plan.md", start_line=-1)
    assert (tail["text"], tail["start_line"]) == ("dos", 2)
    history = a.call("memory.history", locator="team/notes/plan.md")
    assert [(r["revision"], r["author"], r["lease_generation"]) for r in history["revisions"]] == [
        (2, "a", a.generation),
        (1, "a", a.generation),
    ]


def test_compare_and_swap_conflicts_name_revision_and_author_and_write_nothing(
    mesh: Harness,
) -> None:
    a = mesh.seat("a", revise=("team",))
    b = mesh.seat("b", revise=("team",))
    a.call("memory.write", store="team", path="d.md", text="first", expected_revision=0)
    refused = b.refused(
        "memory.write", "conflict", store="team", path="d.md", text="mine", expected_revision=0
    )
    assert refused.details == {"current_revision": 1, "author": "a"}
    b.call("memory.write", store="team", path="d.md", text="second", expected_revision=1)
    stale = a.refused(
        "memory.write", "conflict", store="team", path="d.md", text="stale", expected_revision=1
    )
    assert stale.details == {"current_revision": 2, "author": "b"}
    assert a.call("memory.read", store="team", path="d.md")["text"] == "second"
    missing = a.refused(
        "memory.write", "conflict", store="team", path="nope.md", text="x", expected_revision=3
    )
    assert missing.details["current_revision"] == 0
    assert a.call("memory.list", store="team")["records"][0]["path"] == "d.md"
    assert len(a.call("memory.list", store="team")["records"]) == 1


def test_replacing_needs_revise_and_append_never_overwrites(mesh: Harness) -> None:
    a = mesh.seat("a", revise=("team",))
    w = mesh.seat("w", write=("team",))
    a.call("memory.write", store="team", path="log.md", text="start")
    w.refused("memory.write", "forbidden", store="team", path="log.md", text="gone")
    w.call("memory.append", store="team", path="log.md", text="from w")
    a.call("memory.append", store="team", path="log.md", text="from a")
    assert a.call("memory.read", store="team", path="log.md")["text"] == "start\nfrom w\nfrom a"
    w.call("memory.append", store="team", path="new.md", text="created by append")
    assert w.call("memory.read", store="team", path="new.md")["revision"] == 1


def test_unreadable_stores_are_not_found_and_leak_nothing(mesh: Harness) -> None:
    a = mesh.seat("a", revise=("secret",))
    b = mesh.seat("b", revise=("team",))
    a.call("memory.write", store="secret", path="plans/launch.md", text="the launch codeword")
    rid = a.call("memory.list", store="secret")["records"][0]["record_id"]
    b.call("memory.write", store="team", path="x.md", text="nothing about it")
    for tool, args in [
        ("memory.list", {"store": "secret"}),
        ("memory.read", {"store": "secret", "path": "plans/launch.md"}),
        ("memory.read", {"record_id": rid}),
        ("memory.search", {"query": "codeword", "stores": ["secret"]}),
        ("memory.history", {"locator": rid}),
        ("memory.history", {"locator": "secret/plans/launch.md"}),
        ("memory.read", {"store": "nosuch", "path": "plans/launch.md"}),
    ]:
        error = b.refused(tool, "not_found", **args)
        # Word for word what a record that never existed gets: nothing tells them apart.
        ghost = json.loads(json.dumps(args).replace("launch", "ghost").replace(rid, "R-999"))
        assert b.refused(tool, "not_found", **ghost).message == error.message.replace(
            "launch", "ghost"
        ).replace(rid, "R-999")
    # Unscoped search and listing only ever see readable stores: no hit, no count.
    assert b.call("memory.search", query="codeword")["results"] == []
    literal = b.call("memory.search", queries=["codeword"])
    assert literal["results"] == []
    assert all(r["store"] != "secret" for r in b.call("memory.list")["records"])
    # Personal stores are their seat's alone.
    a.call("memory.write", store="@a", path="me.md", text="private codeword")
    b.refused("memory.read", "not_found", store="@a", path="me.md")
    b.refused("memory.write", "not_found", store="@a", path="x.md", text="x")


def test_full_text_search_ranks_with_snippets_and_filters(mesh: Harness) -> None:
    a = mesh.seat("a", revise=("team",))
    a.call(
        "memory.write",
        store="team",
        path="auth/tokens.md",
        tags=["auth"],
        text="Token rotation: rotate tokens weekly.\nTokens expire after a day.",
    )
    a.call("memory.write", store="team", path="auth/misc.md", text="one token mention")
    a.call("memory.write", store="team", path="ops/deploy.md", text="deploy on friday")
    hits = a.call("memory.search", query="tokens")["results"]
    assert [h["path"] for h in hits][:1] == ["auth/tokens.md"]
    assert "«" in hits[0]["snippet"] and "»" in hits[0]["snippet"]
    assert [h["path"] for h in a.call("memory.search", query="tokens -rotation")["results"]] == []
    assert [h["path"] for h in a.call("memory.search", query="deploy OR rotation")["results"]]
    tagged = a.call("memory.search", query="token OR tokens", tags=["auth"])["results"]
    assert [h["path"] for h in tagged] == ["auth/tokens.md"]
    assert a.call("memory.search", query="deploy", path_prefix="auth/")["results"] == []
    a.refused("memory.search", "invalid", query="-tokens")


def test_search_ranks_a_bounded_set_of_the_newest_matches_and_says_so(
    mesh: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ax_mesh import memory_tools

    monkeypatch.setattr(memory_tools, "SEARCH_RANK_MAX", 3)
    a = mesh.seat("a", revise=("team",))
    hidden = mesh.seat("h", revise=("vault",))
    # The oldest record is the best match: a bounded search must not see it.
    a.call("memory.write", store="team", path="n/0.md", text="deploy deploy deploy deploy")
    for i in range(1, 5):
        rare = "rare " * i if i < 3 else ""
        a.call("memory.write", store="team", path=f"n/{i}.md", text=f"deploy {rare}then")
    unbounded = a.call("memory.search", query="deploy rare", max_results=10)
    assert sorted(h["path"] for h in unbounded["results"]) == ["n/1.md", "n/2.md"]
    assert unbounded["bounded"] is False and "hint" not in unbounded
    found = a.call("memory.search", query="deploy", max_results=2)
    assert found["bounded"] is True and "newest" in found["hint"]
    rest = a.call("memory.search", query="deploy", max_results=2, cursor=found["next_cursor"])
    assert rest["bounded"] is True and rest["next_cursor"] is None
    ranked = found["results"] + rest["results"]
    assert sorted(h["path"] for h in ranked) == ["n/2.md", "n/3.md", "n/4.md"]
    assert all("score" not in hit for hit in ranked)
    inside = mesh.mesh.store.search(["team"], "deploy", "", [], 10, 0, 3).hits
    assert [hit.record.path for hit in inside] == [hit["path"] for hit in ranked]
    assert [hit.score for hit in inside] == sorted((hit.score for hit in inside), reverse=True)
    # A page past the bound is empty and still says the bound cut.
    past = mesh.mesh.store.search(["team"], "deploy", "", [], 10, 3, 3)
    assert (past.hits, past.bounded) == ([], True)
    # Matches in a store the seat cannot read neither take a candidate's place nor bound it.
    for i in range(6):
        hidden.call("memory.write", store="vault", path=f"v/{i}.md", text="deploy rare secret")
    again = a.call("memory.search", query="deploy rare", max_results=10)
    assert [h["path"] for h in again["results"]] == [h["path"] for h in unbounded["results"]]
    assert again["bounded"] is False
    assert all("secret" not in h["snippet"] for h in again["results"])


def test_literal_search_modes_and_context(mesh: Harness) -> None:
    a = mesh.seat("a", revise=("team",))
    a.call(
        "memory.write",
        store="team",
        path="f.txt",
        text="alpha\nbeta gamma\ndelta\nGAMMA alpha\nomega",
    )
    any_ = a.call("memory.search", queries=["gamma"])["results"]
    assert [m["line"] for m in any_] == [2, 4]
    sensitive = a.call("memory.search", queries=["gamma"], case_sensitive=True)["results"]
    assert [m["line"] for m in sensitive] == [2]
    same = a.call("memory.search", queries=["gamma", "alpha"], match_mode="all_on_same_line")
    assert [m["line"] for m in same["results"]] == [4]
    within = a.call(
        "memory.search",
        queries=["beta", "delta"],
        match_mode="all_within_lines",
        line_count=2,
        context_lines=1,
    )["results"]
    assert [(m["line"], m["end_line"], m["before"], m["after"]) for m in within] == [
        (2, 3, ["alpha"], ["GAMMA alpha"])
    ]


def test_lists_page_with_a_cursor_and_stay_under_the_cap(mesh: Harness) -> None:
    a = mesh.seat("a", revise=("team",))
    for i in range(7):
        a.call("memory.write", store="team", path=f"n/{i:02d}.md", text=f"note {i} " * 50)
    seen: list[str] = []
    cursor = None
    while True:
        args = {"store": "team", "max_results": 3} | ({"cursor": cursor} if cursor else {})
        page = a.call("memory.list", **args)
        seen += [r["path"] for r in page["records"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [f"n/{i:02d}.md" for i in range(7)]
    with pytest.raises(UsageError, match="different query"):
        a.call("memory.list", store="team", prefix="x", cursor=page_cursor(a))
    big = "word " * 40_000
    a.call("memory.write", store="team", path="big.md", text="\n".join([big[:3000]] * 60))
    read = a.call("memory.read", store="team", path="big.md")
    assert read["next_start_line"] is not None
    assert len(json.dumps(read).encode()) <= RESULT_MAX_BYTES
    rest = a.call("memory.read", store="team", path="big.md", start_line=read["next_start_line"])
    assert rest["start_line"] == read["next_start_line"]
    found = a.call("memory.search", queries=["word"], max_results=100)
    assert len(json.dumps(found).encode()) <= RESULT_MAX_BYTES and found["next_cursor"]


def page_cursor(seat: object) -> str:
    page = seat.call("memory.list", store="team", max_results=1)  # type: ignore[attr-defined]
    return str(page["next_cursor"])


def test_archive_hides_and_keeps_history_and_publish_carries_provenance(mesh: Harness) -> None:
    a = mesh.seat("a", revise=("team", "public"))
    made = a.call("memory.write", store="team", path="d.md", text="decided: use postgres")
    a.refused("memory.archive", "conflict", locator=made["record_id"], expected_revision=9)
    a.call("memory.archive", locator=made["record_id"], expected_revision=1)
    assert a.call("memory.search", query="postgres")["results"] == []
    assert a.call("memory.list", store="team")["records"] == []
    assert [r["op"] for r in a.call("memory.history", locator=made["record_id"])["revisions"]] == [
        "archive",
        "write",
    ]
    b = a.call("memory.write", store="team", path="e.md", text="the full reasoning")
    out = a.call(
        "memory.publish", locator=b["record_id"], destination="public", text="summary: postgres"
    )
    assert out["store"] == "public" and out["provenance"]["source_record_id"] == b["record_id"]
    copy = a.call("memory.read", store="public", path="e.md")
    assert copy["text"] == "summary: postgres" and copy["provenance"]["summary"] is True
    assert a.call("memory.read", store="team", path="e.md")["text"] == "the full reasoning"


def test_records_under_work_change_only_through_work_tools(mesh: Harness) -> None:
    a = mesh.seat("a", revise=("team",))
    item = a.call("work.create", store="team", objective="ship it")
    path = item["id"].split("/", 1)[1]
    for tool, args in [
        ("memory.write", {"store": "team", "path": "work/W-1.md", "text": "hijack"}),
        ("memory.append", {"store": "team", "path": "work/W-1.md", "text": "hijack"}),
        ("memory.write", {"store": "team", "path": "work/new.md", "text": "x"}),
        ("memory.archive", {"locator": item["record_id"], "expected_revision": 1}),
    ]:
        a.refused(tool, "forbidden", **args)
    assert path == "W-1"
    text = a.call("memory.read", store="team", path="work/W-1.md")["text"]
    assert "ship it" in text
    assert a.call("memory.search", query="ship")["results"][0]["path"] == "work/W-1.md"


@pytest.mark.parametrize(
    ("tool", "args", "field"),
    [
        ("memory.write", {"store": "team", "path": "/abs", "text": "x"}, "path"),
        ("memory.write", {"store": "team", "path": "a/../b", "text": "x"}, "path"),
        ("memory.write", {"store": "Team!", "path": "a", "text": "x"}, "store"),
        ("memory.write", {"store": "team", "path": "a", "text": 3}, "text"),
        (
            "memory.write",
            {"store": "team", "path": "a", "text": "x", "expected_revision": "1"},
            "expected_revision",
        ),
        (
            "memory.write",
            {"store": "team", "path": "a", "text": "x", "expected_revision": -1},
            "expected_revision",
        ),
        ("memory.list", {"max_results": 101}, "max_results"),
        ("memory.list", {"order_by": "size"}, "order_by"),
        ("memory.search", {"queries": ["a"], "context_lines": 6}, "context_lines"),
        ("memory.search", {"query": "a", "extra": 1}, "extra"),
        ("memory.read", {"store": "team"}, "(root)"),
        ("memory.archive", {"locator": "R-x", "expected_revision": 1}, "locator"),
        ("memory.history", {"locator": "team/a", "cursor": "garbage!"}, "cursor"),
    ],
)
def test_bad_arguments_are_refused_naming_the_field(
    mesh: Harness, tool: str, args: dict[str, object], field: str
) -> None:
    a = mesh.seat("a", revise=("team",))
    a.call("memory.write", store="team", path="a", text="x")
    with pytest.raises(UsageError) as caught:
        a.call(tool, **args)
    assert f"'{field}'" in caught.value.message
    assert a.call("memory.read", store="team", path="a")["revision"] == 1
