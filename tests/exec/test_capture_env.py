"""Head/tail capture and environment hygiene as pure functions."""

from __future__ import annotations

import hashlib
from pathlib import Path

from axtest import PLANTED_SECRETS
from hypothesis import given
from hypothesis import strategies as st

from ax_exec.capture import HeadTail, Spill, StreamName, split_caps
from ax_exec.environment import RUN_MARKER, clean_environment
from libcommon.redact import redact


@given(
    chunks=st.lists(st.binary(max_size=300), max_size=40),
    head_cap=st.integers(min_value=0, max_value=200),
    tail_cap=st.integers(min_value=0, max_value=200),
)
def test_head_tail_keeps_exactly_the_ends(
    chunks: list[bytes], head_cap: int, tail_cap: int
) -> None:
    capture = HeadTail(head_cap, tail_cap)
    for chunk in chunks:
        capture.feed(chunk)
        # The tail is a ring: it never holds more than its cap, whatever the chunks.
        assert len(capture.ring) <= tail_cap
    data = b"".join(chunks)
    assert capture.total == len(data)
    assert bytes(capture.head) == data[:head_cap]
    if len(data) <= head_cap + tail_cap:
        assert not capture.truncated
        assert bytes(capture.head) + capture.tail_bytes() == data
    else:
        assert capture.truncated
        assert capture.tail_bytes() == (data[-tail_cap:] if tail_cap else b"")


def test_decoding_lets_the_bytes_go() -> None:
    capture = HeadTail(head_cap=4, tail_cap=8)
    capture.feed(b"head" + b"x" * 100 + b"the tail")
    assert capture.decode() == ("head", "the tail")
    assert not capture.head and not capture.ring
    assert capture.truncated and capture.total == 112


def test_decoding_drops_a_character_cut_at_the_tail_start() -> None:
    capture = HeadTail(head_cap=2, tail_cap=3)
    # The last 3 bytes are the second half of one "é" and all of the next.
    capture.feed(("ab" + "x" * 10 + "é" * 2).encode())
    head, tail = capture.decode()
    assert head == "ab"
    assert tail == "é"


def spilled(directory: Path, feeds: list[tuple[StreamName, bytes]], limit: int = 10**6) -> Spill:
    spill = Spill(directory, limit)
    for stream, chunk in feeds:
        spill.feed(stream, chunk)
    return spill


def kept_bytes(spill: Spill) -> bytes:
    path = spill.keep()
    data = path.read_bytes()
    # The name is the hash of what is stored: the redacted bytes.
    assert path.name == hashlib.sha256(data).hexdigest()
    return data


SPILLED_TEXT = (
    "café ☕ ".encode()
    + b"\xff\xfe not UTF-8\n"
    + (
        f"ANTHROPIC_API_KEY={PLANTED_SECRETS['anthropic']}\n"
        f"push with {PLANTED_SECRETS['github']} then\n"
        "-----BEGIN " + "PRIVATE KEY-----\n"
        f"{PLANTED_SECRETS['private-key-body']}\n"
        "-----END " + "PRIVATE KEY-----\n"
        "the end\n"
    ).encode()
)


def test_a_spill_chunk_boundary_at_every_offset_of_a_secret(tmp_path: Path) -> None:
    """A read can end anywhere, and the other stream can speak in between: each stream
    is redacted whole, and undecodable bytes are kept as they were."""

    text = SPILLED_TEXT
    expected = redact(text.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
    assert b"\xff\xfe" in expected and b"[REDACTED:private-key]" in expected
    for cut in range(len(text) + 1):
        feeds: list[tuple[StreamName, bytes]] = [
            ("stdout", text[:cut]),
            ("stderr", b"warning: noise\n"),
            ("stdout", text[cut:]),
        ]
        assert kept_bytes(spilled(tmp_path / "objects", feeds)) == expected + b"warning: noise\n"


def test_the_spill_cap_counts_the_bytes_stored(tmp_path: Path) -> None:
    spill = spilled(tmp_path, [("stdout", b"line\n" * 1000)], limit=100)
    assert len(kept_bytes(spill)) == 100
    assert spill.complete is False


def test_stderr_caps_favour_the_end() -> None:
    assert split_caps(1000, keep_end=True) == (250, 750)
    assert split_caps(1000, keep_end=False) == (500, 500)


def test_secret_names_are_removed_case_insensitively_and_the_floor_stays() -> None:
    clean = clean_environment(
        {
            "PATH": "/bin",
            "HOME": "/h",
            "TERM": "xterm",
            "Api_Key": "1",
            "SESSION_TOKEN": "2",
            "my_secret_file": "3",
            "PGPASSWORD": "4",
            "CREDENTIALS_PATH": "5",
            "KEYBOARD": "6",
            "HTTP_PROXY": "http://p",
            "http_proxy": "http://p",
            "EDITOR": "vi",
            RUN_MARKER: "run-from-an-outer-harness",
        },
        extra_patterns=["EDIT*"],
    )
    assert sorted(clean.variables) == sorted(["PATH", "HOME", "TERM", "HTTP_PROXY", "http_proxy"])
    assert clean.removed == sorted(
        [
            "Api_Key",
            "SESSION_TOKEN",
            "my_secret_file",
            "PGPASSWORD",
            "CREDENTIALS_PATH",
            "KEYBOARD",
            "EDITOR",
        ]
    )


def test_the_floor_survives_even_a_pattern_that_matches_it() -> None:
    clean = clean_environment(
        {"PATH": "/bin", "HOME": "/h", "PATHFINDER": "x"}, extra_patterns=["*PATH*", "HOME"]
    )
    assert clean.variables == {"PATH": "/bin", "HOME": "/h"}
    assert clean.removed == ["PATHFINDER"]


def test_variables_a_shell_reads_as_code_or_options_are_removed() -> None:
    parent = {
        name: "x"
        for name in (
            "BASH_ENV",
            "ENV",
            "SHELLOPTS",
            "BASHOPTS",
            "PS4",
            "PROMPT_COMMAND",
            "ZDOTDIR",
            "GLOBIGNORE",
            "CDPATH",
            "cdpath",
            "BASH_FUNC_ls%%",
            "BASH_FUNC_cd%%",
        )
    }
    clean = clean_environment({**parent, "PATH": "/bin", "BASHFUL": "y", "ENVIRONMENT": "z"})
    assert clean.variables == {"PATH": "/bin", "BASHFUL": "y", "ENVIRONMENT": "z"}
    assert clean.removed == sorted(parent)


def test_overrides_are_set_after_filtering() -> None:
    clean = clean_environment({"A_TOKEN": "x"}, overrides={"CI_TOKEN": "given"})
    assert clean.variables == {"CI_TOKEN": "given"}
    assert clean.removed == ["A_TOKEN"]
