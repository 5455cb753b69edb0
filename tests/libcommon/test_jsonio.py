"""libcommon.jsonio: a missing store is the default, a corrupt one is a hard error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from libcommon import jsonio
from libcommon.errors import CorruptStore, ExitStatus


def test_read_json_missing_gives_default(tmp_path: Path) -> None:
    assert jsonio.read_json(tmp_path / "missing.json") is None
    assert jsonio.read_json(tmp_path / "missing.json", default={"a": 1}) == {"a": 1}
    assert not (tmp_path / "missing.json").exists()


def test_read_json_reads_document(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    path.write_text('{"a": [1, "two", null]}\n')
    assert jsonio.read_json(path, default={}) == {"a": [1, "two", None]}


@pytest.mark.parametrize(
    "content",
    [b"{not json", b"", b"   \n", b'{"a": 1}{"b": 2}', b"\xff\xfe{}", b'{"a": 1'],
    ids=["garbage", "empty", "blank", "two-docs", "bad-utf8", "truncated"],
)
def test_read_json_corrupt_raises_naming_the_path(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "store.json"
    path.write_bytes(content)
    with pytest.raises(CorruptStore) as info:
        jsonio.read_json(path, default={})
    error = info.value
    assert error.path == str(path)
    assert str(path) in error.message
    assert error.line is None
    assert error.status == ExitStatus.FAILED
    assert error.hint
    # Never silently rewritten.
    assert path.read_bytes() == content


def test_iter_jsonl_yields_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"seq": 1}\n\n{"seq": 2}\n  \n[3]\n"four"')
    assert list(jsonio.iter_jsonl(path)) == [
        (1, {"seq": 1}),
        (3, {"seq": 2}),
        (5, [3]),
        (6, "four"),
    ]


def test_iter_jsonl_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"")
    assert list(jsonio.iter_jsonl(path)) == []


def test_iter_jsonl_bad_line_raises_naming_path_and_line(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"seq": 1}\n{"seq": 2}\n{"seq": 3, tor\n{"seq": 4}\n')
    seen = []
    with pytest.raises(CorruptStore) as info:
        for number, value in jsonio.iter_jsonl(path):
            seen.append((number, value))
    assert seen == [(1, {"seq": 1}), (2, {"seq": 2})]
    error = info.value
    assert error.line == 3
    assert error.path == str(path)
    assert f"{path}:3" in error.message


def test_iter_jsonl_partial_trailing_line_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"seq": 1}\n{"seq": 2, "ty')
    with pytest.raises(CorruptStore) as info:
        list(jsonio.iter_jsonl(path))
    assert info.value.line == 2


def test_dumps_and_dumps_line() -> None:
    assert jsonio.dumps({"a": 1}) == b'{"a":1}'
    assert jsonio.dumps({1: "x"}) == b'{"1":"x"}'
    assert jsonio.dumps({"a": [1]}, indent=True) == b'{\n  "a": [\n    1\n  ]\n}'
    line = jsonio.dumps_line({"type": "x", "text": "a\nb"})
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1  # the embedded newline is escaped
    assert jsonio.loads(line) == {"type": "x", "text": "a\nb"}
    assert jsonio.loads('{"s": "str input"}') == {"s": "str input"}


LONG_TEXTS = {
    "head": 'a\x00é😀"\\\n' * 30_000,
    "tail": "😀" * 70_000,
    "empty": "",
}


def _slices(text: str, size: int) -> Iterator[str]:
    return (text[start : start + size] for start in range(0, len(text), size))


def _document(head: str, tail: str, empty: str) -> dict[str, Any]:
    return {"head": head, "nested": [{"tail": tail, "n": 1}, "short", None], "empty": empty}


@pytest.mark.parametrize("indent", [False, True])
def test_iter_dumps_writes_what_dumps_writes_with_the_texts_in_place(indent: bool) -> None:
    keys = {name: jsonio.placeholder() for name in LONG_TEXTS}
    slices = {keys[name]: _slices(text, 1000) for name, text in LONG_TEXTS.items()}
    pieces = list(jsonio.iter_dumps(_document(**keys), slices, indent=indent))
    assert b"".join(pieces) == jsonio.dumps(_document(**LONG_TEXTS), indent=indent)
    # Each text went out a slice at a time: no piece holds more than one slice's worth.
    assert max(len(piece) for piece in pieces) <= 6 * 1000


def test_iter_dumps_without_texts_is_dumps() -> None:
    assert list(jsonio.iter_dumps({"a": "b"}, {}, indent=True)) == [
        jsonio.dumps({"a": "b"}, indent=True)
    ]


def test_iter_dumps_refuses_a_placeholder_that_is_missing_or_stands_twice() -> None:
    key = jsonio.placeholder()
    for document in ({"a": "x"}, {"a": key, "b": key}, {"a": key, "b": 'q"' + key}):
        with pytest.raises(ValueError, match="exactly once"):
            next(jsonio.iter_dumps(document, {key: iter(["text"])}))
