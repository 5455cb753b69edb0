"""A finished run whose output is still the captured bytes, and its two ways out.

``decode`` builds the ExecOutcome an in-process caller gets (ax-agent, ax-check,
ax-preview): its head and tail are Python strings, which take 4 bytes a character
once one of them holds an emoji. ``placeheld`` is what ``ax-exec run`` prints from: the
same outcome with a placeholder for each text and the text itself as slices decoded
from the bytes, so printing it never holds a stream's text whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ax_exec.capture import HeadTail
from ax_exec.models import ExecOutcome, StreamCapture
from libcommon import jsonio


@dataclass
class CapturedRun:
    """A run's outcome with its output as bytes.

    ``without_text`` is the validated outcome with every head and tail empty (its
    byte counts and truncation are the streams'); ``stdout`` and ``stderr`` hold the
    bytes those texts are decoded from.
    """

    without_text: ExecOutcome
    stdout: HeadTail
    stderr: HeadTail

    def decode(self) -> ExecOutcome:
        """The outcome with its text, decoded once; the bytes are let go as they are."""
        stdout = self.stdout.decode()
        stderr = self.stderr.decode()
        return self._with_text(stdout, stderr)

    def placeheld(self) -> tuple[ExecOutcome, dict[str, Iterator[str]]]:
        """The outcome with a placeholder (``jsonio.placeholder()``) for each text, and
        each placeholder's text as slices, for ``cliapp.emit_json(texts=...)``.

        The bytes are kept: the slices are decoded from them as they are read.
        """
        texts: dict[str, Iterator[str]] = {}

        def hold(slices: Iterator[str]) -> str:
            key = jsonio.placeholder()
            texts[key] = slices
            return key

        outcome = self._with_text(
            (hold(self.stdout.head_text()), hold(self.stdout.tail_text())),
            (hold(self.stderr.head_text()), hold(self.stderr.tail_text())),
        )
        return outcome, texts

    def _with_text(self, stdout: tuple[str, str], stderr: tuple[str, str]) -> ExecOutcome:
        return self.without_text.model_copy(
            update={
                "stdout": _texted(self.without_text.stdout, *stdout),
                "stderr": _texted(self.without_text.stderr, *stderr),
            }
        )


def _texted(stream: StreamCapture, head: str, tail: str) -> StreamCapture:
    return stream.model_copy(update={"head": head, "tail": tail})
