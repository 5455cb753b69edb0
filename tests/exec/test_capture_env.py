"""Head/tail capture and environment hygiene as pure functions."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ax_exec.capture import HeadTail, split_caps
from ax_exec.environment import RUN_MARKER, clean_environment


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
    data = b"".join(chunks)
    assert capture.total == len(data)
    assert bytes(capture.head) == data[:head_cap]
    assert len(capture.tail) <= 2 * tail_cap + 300
    kept_tail = bytes(capture.tail[-tail_cap:]) if tail_cap else b""
    if len(data) <= head_cap + tail_cap:
        assert not capture.truncated
        assert bytes(capture.head) + kept_tail == data
    else:
        assert capture.truncated
        assert kept_tail == data[-tail_cap:] if tail_cap else kept_tail == b""


def test_decoding_drops_a_character_cut_at_the_tail_start() -> None:
    capture = HeadTail(head_cap=2, tail_cap=3)
    # The last 3 bytes are the second half of one "é" and all of the next.
    capture.feed(("ab" + "x" * 10 + "é" * 2).encode())
    head, tail = capture.decoded()
    assert head == "ab"
    assert tail == "é"


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
