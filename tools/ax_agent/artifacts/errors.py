"""The pack's failure vocabulary, and the limits every reader shares.

A reason never carries a byte of the file it is about: it names what the pack
found (a count, a size, a part's role), never what the file says, so a secret
renamed ``report.docx`` cannot reach the model through an error.
"""

from __future__ import annotations

from typing import Literal

# Why a document was not read. Each is a fact about the bytes, not a guess at intent.
UnsupportedCode = Literal[
    "not-a-document",  # the magic bytes (or the OOXML content types) match no reader
    "too-large",  # the file, an entry or the whole archive passes its byte cap
    "too-many-entries",  # the archive has more entries than ZIP_MAX_ENTRIES
    "bad-entry-name",  # an entry name a reader could mistake for a path outside the archive
    "encrypted",  # an encrypted archive entry or PDF (no password is tried)
    "malformed",  # the container or its XML does not parse
    "unsafe-xml",  # a DTD, an entity declaration, or nesting past XML_MAX_DEPTH
    "toolchain-unavailable",  # the library or program the format needs is not installed
]

# The whole file a reader accepts.
DOC_MAX_BYTES = 64 * 1024 * 1024
# An OOXML archive: entries, one entry's bytes and all entries' bytes, each measured as the
# larger of the compressed and the declared size (a stored entry is its compressed size).
ZIP_MAX_ENTRIES = 4_096
ZIP_ENTRY_MAX_BYTES = 32 * 1024 * 1024
ZIP_TOTAL_MAX_BYTES = 128 * 1024 * 1024
ZIP_NAME_MAX_CHARS = 512
# One XML part: its bytes and how deeply its elements nest.
XML_MAX_BYTES = ZIP_ENTRY_MAX_BYTES
XML_MAX_DEPTH = 256
# The text a summary carries; past it the coverage is partial.
SUMMARY_TEXT_MAX_CHARS = 100_000
# PDF pages a reader looks at; past it the coverage is partial.
PDF_MAX_PAGES = 2_000
# Wall time for extracting a PDF's text (pypdf is pure Python: a printed page can take
# half a second); past it the pages not reached are not read (partial) or not searched.
PDF_READ_BUDGET_S = 20.0

DOCS_EXTRA_CURE = "install the documents pack: pip install 'ax-tools[docs]'"


class Unsupported(Exception):
    """A document the pack will not read; ``reason`` echoes no file content."""

    def __init__(self, code: UnsupportedCode, reason: str) -> None:
        super().__init__(f"{code}: {reason}")
        self.code: UnsupportedCode = code
        self.reason = reason


class ToolchainUnavailable(Unsupported):
    """A library or program the pack needs is missing; ``reason`` names the cure."""

    def __init__(self, reason: str) -> None:
        super().__init__("toolchain-unavailable", reason)


# Why a render did not produce its artifact.
RenderCode = Literal[
    "image-unsupported",  # a spec image that is not a PNG, JPEG or GIF by its bytes
    "image-too-large",  # a spec image over IMAGE_MAX_BYTES
    "toolchain-unavailable",  # python-docx, playwright or Chromium is missing
    "print-failed",  # the browser could not print the page
]
IMAGE_MAX_BYTES = 10 * 1024 * 1024


class RenderFailed(Exception):
    def __init__(self, code: RenderCode, reason: str) -> None:
        super().__init__(f"{code}: {reason}")
        self.code: RenderCode = code
        self.reason = reason
