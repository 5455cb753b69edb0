"""The one SSE parser: any split of a byte stream parses the same, and the spec's line rules."""

from __future__ import annotations

import itertools
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ax_agent.providers import ProviderError, streaming
from ax_agent.providers.streaming import SSEEvent, SSEParser, iter_sse


def parse(*chunks: bytes) -> list[SSEEvent]:
    return list(iter_sse(chunks))


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    edges = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges)]


# Lines of a stream: fields, comments, blank lines, multi-byte text, each with any line end.
_field = st.sampled_from(["data", "event", "id", "retry", "other", ""])
_value = st.text(st.sampled_from('aé☕𝄞 :[]DONE{}"0'), max_size=8)
_line = st.one_of(
    st.builds(lambda f, v: f"{f}: {v}" if f else f":{v}", _field, _value),
    st.builds(lambda f, v: f"{f}:{v}", _field, _value),
    st.just(""),
    st.just("data"),
)
_ending = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(st.tuples(_line, _ending), max_size=25))
    return "".join(line + end for line, end in lines).encode()


@settings(max_examples=300, deadline=None)
@given(streams(), st.lists(st.integers(min_value=0), max_size=12))
def test_any_split_parses_as_the_whole(data: bytes, cuts: list[int]) -> None:
    assert parse(*split(data, cuts)) == parse(data)


@settings(max_examples=200, deadline=None)
@given(streams())
def test_byte_by_byte_parses_as_the_whole(data: bytes) -> None:
    assert parse(*(data[i : i + 1] for i in range(len(data)))) == parse(data)


def test_utf8_split_mid_character() -> None:
    data = "data: café ☕ 𝄞\n\n".encode()
    cut = data.index("☕".encode()) + 1
    assert parse(data[:cut], data[cut:]) == [SSEEvent("message", "café ☕ 𝄞")]


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"])
def test_each_line_end(end: str) -> None:
    text = f"event: delta{end}data: one{end}data: two{end}{end}"
    assert parse(text.encode()) == [SSEEvent("delta", "one\ntwo")]


def test_crlf_split_between_cr_and_lf_is_one_line_end() -> None:
    # Were the CR and the LF two line ends, the blank line between would dispatch twice.
    assert parse(b"data: a\r", b"\ndata: b\r\n\r\n") == [SSEEvent("message", "a\nb")]


def test_comments_retry_and_unknown_fields_are_skipped() -> None:
    data = b": keep-alive\n\nretry: 100\nfoo: bar\ndata: x\n\n: ping\n\n"
    assert parse(data) == [SSEEvent("message", "x")]


def test_id_persists_and_a_nul_id_is_ignored() -> None:
    data = b"id: 7\ndata: a\n\ndata: b\n\nid: bad\x00\ndata: c\n\n"
    assert [e.id for e in parse(data)] == ["7", "7", "7"]


def test_field_without_colon_and_one_space_removed() -> None:
    assert parse(b"data\ndata:  two spaces\n\n") == [SSEEvent("message", "\n two spaces")]


def test_event_without_data_is_not_dispatched_and_resets_its_name() -> None:
    assert parse(b"event: ping\n\ndata: x\n\n") == [SSEEvent("message", "x")]


def test_done_is_an_ordinary_event() -> None:
    assert parse(b"data: [DONE]\n\n") == [SSEEvent("message", "[DONE]")]


def test_byte_order_mark_at_the_start_is_dropped() -> None:
    assert parse("\ufeffdata: x\n\n".encode()) == [SSEEvent("message", "x")]


def test_an_event_cut_by_the_end_of_the_stream_is_never_dispatched() -> None:
    parser = SSEParser()
    assert parser.feed(b'data: {"half": ') == []
    assert parser.incomplete
    assert parser.feed(b"1}\n") == []
    assert parser.incomplete  # a complete line, but no blank line ends the event
    assert parse(b"data: whole\n\ndata: cut\n") == [SSEEvent("message", "whole")]
    assert not SSEParser().incomplete


def test_a_long_line_in_many_chunks_is_scanned_once_and_capped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    line = b"data: " + b"x" * 200_000 + b"\n\n"
    chunks = [line[i : i + 64] for i in range(0, len(line), 64)]
    started = time.perf_counter()
    (event,) = parse(*chunks)
    # Scanning the growing buffer again for every chunk takes seconds here.
    assert time.perf_counter() - started < 1.0
    assert len(event.data) == 200_000
    monkeypatch.setattr(streaming, "SSE_EVENT_MAX_BYTES", 1000)
    with pytest.raises(ProviderError) as caught:
        parse(b"data: " + b"y" * 600 + b"\n", b"data: " + b"y" * 600 + b"\n")
    assert caught.value.kind == "protocol"
    with pytest.raises(ProviderError):
        parse(b"z" * 1001)
