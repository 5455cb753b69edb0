"""The outcome JSON ``ax-exec run`` prints from the captured bytes, a slice at a time, is
byte for byte the JSON of the decoded ExecOutcome that run_managed returns."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
from collections.abc import Iterator
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ax_exec import ExecOutcome, ExecSpec, KillReport, SandboxStatus, StreamCapture
from ax_exec import capture as capture_module
from ax_exec.capture import DECODE_SLICE_BYTES, HeadTail, split_caps
from ax_exec.outcome import CapturedRun
from ax_exec.run import run_captured
from libcommon.cliapp import emit_json

# Pieces a stream is made of: text with 1- to 4-byte characters, bytes that are not
# UTF-8 (a lone continuation byte, a lead byte cut short, an overlong form, a surrogate
# and an out-of-range lead), and plain random bytes.
_PIECES = st.one_of(
    st.text(alphabet=st.sampled_from('aZ \n\t"\\\x00\x1fé€😀\U0010fffd'), max_size=12).map(
        str.encode
    ),
    st.sampled_from(
        [b"\x80", b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf8"]
    ),
    st.binary(max_size=16),
)
_STREAM = st.lists(_PIECES, max_size=30).map(b"".join)


def _feed(stream: HeadTail, data: bytes, cuts: list[int]) -> HeadTail:
    """Feed ``data`` in chunks cut at ``cuts`` (so the ring wraps at odd places)."""
    points = sorted({0, len(data), *(cut % (len(data) + 1) for cut in cuts)})
    for start, end in itertools.pairwise(points):
        stream.feed(data[start:end])
    return stream


def _captured(
    stdout: bytes, stderr: bytes, max_bytes: int, cuts: list[int], outcome: ExecOutcome
) -> CapturedRun:
    streams = (
        _feed(HeadTail(*split_caps(max_bytes, keep_end=False)), stdout, cuts),
        _feed(HeadTail(*split_caps(max_bytes, keep_end=True)), stderr, cuts),
    )
    counts = {
        name: StreamCapture(head="", tail="", bytes=s.total, truncated=s.truncated)
        for name, s in zip(("stdout", "stderr"), streams, strict=True)
    }
    return CapturedRun(outcome.model_copy(update=counts), *streams)


def _emitted(value: object, texts: dict[str, Iterator[str]] | None = None) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        emit_json(value, texts=texts)
    return out.getvalue()


def _streamed_and_decoded(run: CapturedRun) -> tuple[str, str]:
    """What ``ax-exec run`` prints, and what it printed before: the decoded outcome's JSON."""
    outcome, texts = run.placeheld()
    streamed = _emitted(outcome.to_json(), texts)
    decoded = run.decode()
    # The texts were put in a copy of a validated outcome: it prints as one built whole.
    whole = type(decoded).model_validate(decoded.model_dump())
    assert _emitted(whole.to_json()) == _emitted(decoded.to_json())
    return streamed, _emitted(decoded.to_json())


def _outcome(**fields: object) -> ExecOutcome:
    empty = StreamCapture(head="", tail="", bytes=0, truncated=False)
    values: dict[str, object] = {
        "run_id": "run-1",
        "argv": ["bash", "-c", 'printf "%s" "é😀"'],
        "cwd": "/work/ws",
        "termination": "exited",
        "exit_code": 0,
        "duration_ms": 12,
        "stdout": empty,
        "stderr": empty,
        "kill": KillReport(attempted=False, verified=True, leftovers=0),
        "sandbox": SandboxStatus(backend="none", profile="none", enforced=False),
    }
    values.update(fields)
    return ExecOutcome.model_validate(values)


OUTCOMES = [
    _outcome(),
    _outcome(
        termination="timeout",
        exit_code=None,
        signal="SIGKILL",
        kill=KillReport(attempted=True, verified=False, leftovers=3, survivors=[41, 42]),
        spill_path="/state/objects/ab",
        spill_complete=False,
        drain_timed_out=True,
        env_removed=["API_KEY", "BASH_ENV"],
        error="the sandbox launcher did not exec within 10s",
    ),
]


@settings(max_examples=600, deadline=None)
@given(
    stdout=_STREAM,
    stderr=_STREAM,
    max_bytes=st.integers(min_value=0, max_value=64),
    cuts=st.lists(st.integers(min_value=0, max_value=500), max_size=8),
    slice_bytes=st.integers(min_value=1, max_value=9),
    which=st.sampled_from(range(len(OUTCOMES))),
)
def test_the_streamed_json_is_the_decoded_outcomes_json(
    stdout: bytes, stderr: bytes, max_bytes: int, cuts: list[int], slice_bytes: int, which: int
) -> None:
    run = _captured(stdout, stderr, max_bytes, cuts, OUTCOMES[which])
    # Slices of a few bytes, so that they cut characters (and replaced bytes) anywhere.
    with mock.patch.object(capture_module, "DECODE_SLICE_BYTES", slice_bytes):
        streamed, decoded = _streamed_and_decoded(run)
    assert streamed == decoded


@pytest.mark.parametrize("max_bytes", [0, 1, 7, 2 * DECODE_SLICE_BYTES + 5, 8 * DECODE_SLICE_BYTES])
def test_long_streams_of_every_kind_at_the_real_slice_size(max_bytes: int) -> None:
    text = ('aé€😀\\"\x01' * 40_000).encode()
    noisy = bytes(range(256)) * 2_000 + b"\xf0\x9f" + text[1:]
    cuts = [1, 65_537, 131_071, 400_001, 777_777]
    run = _captured(text, noisy, max_bytes, cuts, OUTCOMES[1])
    # The largest cap keeps stdout whole, split across its head and its tail.
    assert run.stderr.truncated and run.stdout.total > run.stdout.head_cap
    streamed, decoded = _streamed_and_decoded(run)
    assert streamed == decoded


def test_empty_streams() -> None:
    run = _captured(b"", b"", 1024, [], OUTCOMES[0])
    streamed, decoded = _streamed_and_decoded(run)
    assert streamed == decoded
    assert json.loads(streamed)["stdout"] == {
        "head": "",
        "tail": "",
        "bytes": 0,
        "truncated": False,
    }


def test_printing_keeps_the_bytes_and_never_builds_a_whole_text() -> None:
    data = ("😀" * (3 * DECODE_SLICE_BYTES)).encode()
    run = _captured(data, data, len(data), [], OUTCOMES[0])
    _, texts = run.placeheld()
    slices = [piece for text in texts.values() for piece in text]
    assert max(len(piece.encode()) for piece in slices) <= DECODE_SLICE_BYTES
    assert "".join(slices) == "😀" * (3 * DECODE_SLICE_BYTES) * 2
    # The bytes are still there for the next reader.
    assert bytes(run.stdout.head) == data[: len(data) // 2]


def test_a_field_added_to_the_outcome_is_printed_without_naming_it_anywhere() -> None:
    class Wider(ExecOutcome):
        cpu_time_ms: int = 7

    wider = Wider.model_validate(OUTCOMES[1].model_dump())
    run = _captured(b"out", b"err", 1024, [], wider)
    streamed, decoded = _streamed_and_decoded(run)
    assert streamed == decoded
    assert json.loads(streamed)["cpuTimeMs"] == 7


def test_a_real_run_prints_every_field_of_the_contract() -> None:
    shell = r"printf 'caf\xc3\xa9 \xf0\x9f\x98\x80 \xff\xfe'; head -c 5000 /dev/urandom >&2"
    run = run_captured(ExecSpec(shell=shell, max_output_bytes=1024))
    assert run.stderr.truncated
    streamed, decoded = _streamed_and_decoded(run)
    assert streamed == decoded
    document = json.loads(streamed)
    aliases = {field.alias or name for name, field in ExecOutcome.model_fields.items()}
    assert set(document) == aliases
    assert document["stdout"]["head"] == "café 😀 \ufffd\ufffd"
