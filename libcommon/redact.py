"""The one secret redactor.

Everything ax persists or shows passes through ``redact`` first. The patterns
aim at secret *shapes* (provider key formats, bearer tokens, private-key blocks,
URL userinfo, ``*_TOKEN=`` style assignments); a false positive costs a few
characters of a log, a false negative leaks a credential, so they lean wide.
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "[REDACTED]"

_KEY_BEGIN = r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
_KEY_END = r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
# An unterminated block is a secret to the end of the text.
_PRIVATE_KEY = re.compile(rf"{_KEY_BEGIN}(?:.*?{_KEY_END}|.*\Z)", re.DOTALL)

# (kind, pattern, needles): the whole match is the secret, and every match holds one of
# the needles. A pattern runs only over a text holding a needle: most text holds none,
# and a substring search costs a hundredth of a regex pass.
_PATTERNS: list[tuple[str, re.Pattern[str], tuple[str, ...]]] = [
    ("private-key", _PRIVATE_KEY, ("PRIVATE KEY",)),
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{16,}"), ("sk-ant-",)),
    ("openai-key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"), ("sk-",)),
    (
        "aws-access-key",
        re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
        ("AKIA", "ASIA", "ABIA", "ACCA"),
    ),
    (
        "github-token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    ("gitlab-token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), ("glpat-",)),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), ("AIza",)),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), ("xox",)),
    (
        "stripe-key",
        re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
        ("_live_", "_test_"),
    ),
    ("huggingface-token", re.compile(r"\bhf_[A-Za-z0-9]{30,}"), ("hf_",)),
    ("npm-token", re.compile(r"\bnpm_[A-Za-z0-9]{36}"), ("npm_",)),
    (
        "jwt",
        re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
        ("eyJ",),
    ),
]

# These keep a prefix (the scheme, the header word, the variable name) so the
# redacted text still says what was there.
_BEARER = re.compile(r"(?i)\b(bearer|basic|token)(\s+)([A-Za-z0-9._~+/=-]{8,})")
# Greedy up to the last '@' of the authority, so a password holding '@' is covered.
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/\s?#]+)@")
_SECRET_NAME = (
    r"[A-Z0-9_.-]*(?:_TOKEN|_KEY|_SECRET|_PASSWORD|_PASSWD|_PAT|_CREDENTIALS?)"
    r"|PASSWORD|SECRET|TOKEN|API_?KEY"
)
# NAME=value, NAME: value, "NAME": "value"; a quoted value is covered up to its closing quote.
_ASSIGNMENT = re.compile(
    rf"""(?i)\b({_SECRET_NAME})(["']?\s*[:=]\s*)(?:(["'])(.*?)\3|([^\s"',;]+))"""
)
_SECRET_KEY_NAME = re.compile(rf"(?i)(?:{_SECRET_NAME})")
_HEADER = re.compile(r"(?i)\b((?:x-api-key|api-key|authorization|cookie)\s*:\s*)([^\r\n]+)")

# The needles of the case-blind patterns, searched in the lowered text.
_HEADER_WORDS = ("api-key", "authorization", "cookie")
_BEARER_WORDS = ("bearer", "basic", "token")
_ASSIGNMENT_WORDS = ("token", "_key", "secret", "passw", "_pat", "_credential", "apikey", "api_key")


def _words(text: str) -> str:
    """``text`` lowered so that each case-blind needle is found wherever re would match it.

    Ignoring case, Python's re also matches İ and ı to i, ſ to s and the Kelvin sign to
    k. str.lower() turns the sign into k and İ into i and a combining dot; the dot goes.
    """
    lowered = text.lower()
    if lowered.isascii():
        return lowered
    return lowered.replace("\u0131", "i").replace("\u017f", "s").replace("\u0307", "")


def _holds(text: str, needles: tuple[str, ...]) -> bool:
    return any(needle in text for needle in needles)


def redact(text: str) -> str:
    """Replace every secret-shaped substring of ``text`` with a marker."""
    # A marker can open a word boundary another pattern needs ("AIza…Ssk-…": once the
    # Google key is a marker, the OpenAI key after it starts a word), so the patterns
    # run again after any replacement. Each replacement removes a needle and a marker
    # holds none, so this ends; a text with no secret takes one round.
    replaced = True
    while replaced:
        replaced = False
        for kind, pattern, needles in _PATTERNS:
            if _holds(text, needles):
                text, count = pattern.subn(f"[REDACTED:{kind}]", text)
                replaced = replaced or count > 0
    # The passes below only replace text with bracketed markers, which join no new
    # needle: the words of the text as it is now serve all of them.
    words = _words(text)
    if _holds(words, _HEADER_WORDS):
        text = _HEADER.sub(lambda m: m.group(1) + REDACTED, text)
    if _holds(words, _BEARER_WORDS):
        text = _BEARER.sub(_redact_scheme_token, text)
    if "://" in text:
        text = _URL_USERINFO.sub(lambda m: m.group(1) + REDACTED + "@", text)
    if _holds(words, _ASSIGNMENT_WORDS):
        text = _ASSIGNMENT.sub(_redact_assignment, text)
    return text


def _redact_scheme_token(match: re.Match[str]) -> str:
    value = match.group(3)
    # Prose ("Basic configuration", "the token returned") has no digits or base64
    # punctuation; real credentials almost always do, or are long.
    if not (re.search(r"[0-9+/=]", value) or len(value) >= 24):
        return match.group(0)
    return match.group(1) + match.group(2) + REDACTED


def _redact_assignment(match: re.Match[str]) -> str:
    name, separator, quote, quoted, bare = match.groups()
    value = quoted if quote else bare
    if value.startswith("[REDACTED") or value.startswith("$"):
        # Already redacted, or a reference like $API_KEY rather than a value.
        return match.group(0)
    quote = quote or ""
    return f"{name}{separator}{quote}{REDACTED}{quote}"


def redact_value(value: Any) -> Any:
    """Redact every string inside a JSON-shaped value.

    Dict keys are kept; a string stored under a secret-named key (``DB_PASSWORD``,
    ``api_key``) is replaced whole, whatever it looks like.
    """
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {
            key: REDACTED
            if isinstance(item, str)
            and isinstance(key, str)
            and _SECRET_KEY_NAME.fullmatch(key)
            and not item.startswith("$")
            else redact_value(item)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_value(item) for item in value]
    return value


# Streaming: text that arrives in pieces (a command's output on its way to disk) is
# redacted as ``redact`` would redact the whole of it. The patterns allow this: apart
# from a private-key block (held as its marker from its start), a match crosses line
# breaks only through its separator (``NAME\n=\n value``: at most three lines with
# something on them), so a few such lines on each side of a break show whether any
# pass, each working on what the one before left, treats the text across it
# differently from the pieces on either side.
#
# The longest match, other than a private-key block, that is redacted exactly wherever
# the pieces split it. A longer one lies on a line longer than this, which is cut
# inside; when the redaction reaches such a cut, the rest of the line is dropped.
STREAM_WINDOW_CHARS = 32 * 1024
# Lines with something on them, on each side of a break, that must agree before it is
# a cut: two for the widest match, and the reach of the passes before it.
STREAM_CONTEXT_LINES = 8
# Text held back while a line gives no safe cut: beyond it a long line is cut inside,
# and beyond twice this the cut is forced.
STREAM_HOLD_CHARS = 256 * 1024
# Places tried, newest first, before waiting for more text.
STREAM_CUT_TRIES = 4

_KEY_BEGIN_RE = re.compile(_KEY_BEGIN)
_KEY_END_RE = re.compile(_KEY_END)
_KEY_MARKER = "[REDACTED:private-key]"
_MARKER_AT_END = re.compile(r"\[REDACTED(?::[a-z-]+)?\]\Z")


class StreamRedactor:
    """Redacts a text given in pieces: ``feed`` each piece, then ``finish``.

    The answers, joined, equal ``redact`` of the whole text for every secret shorter
    than ``STREAM_WINDOW_CHARS`` and every private-key block, wherever the pieces were
    split. A private-key block is held as its marker from the moment it starts (its
    body is never held), so what follows it meets the marker as in the whole text.
    Text is released a line at a time, once ``STREAM_CONTEXT_LINES`` lines with
    something on them have come after it and the lines around the break agree; at
    most about ``2 * STREAM_HOLD_CHARS`` characters are held back.
    """

    def __init__(self) -> None:
        self._pending = ""
        # The end of an open private-key block's body, where its end marker is looked
        # for; None outside a block.
        self._key_tail: str | None = None
        # The rest of a line whose marker is out (a match longer than the window).
        self._dropping_line = False

    def feed(self, text: str) -> str:
        self._take(text)
        return self._release(final=False)

    def finish(self) -> str:
        return self._release(final=True)

    def _take(self, text: str) -> None:
        if self._dropping_line:
            newline = text.find("\n")
            if newline < 0:
                return
            text = text[newline:]
            self._dropping_line = False
        if self._key_tail is not None:
            text = self._key_tail + text
            end = _KEY_END_RE.search(text)
            if end is None:
                # Keep what may be the start of an end marker that the next piece completes.
                self._key_tail = text[-STREAM_WINDOW_CHARS:]
                return
            self._key_tail = None
            text = text[end.end() :]
        self._pending += text
        if "PRIVATE KEY" not in self._pending:
            return
        # The first pass of redact, done now: every block is its marker.
        begin = _open_key(self._pending)
        if begin is None:
            self._pending = _PRIVATE_KEY.sub(_KEY_MARKER, self._pending)
            return
        self._key_tail = self._pending[begin.end() :][-STREAM_WINDOW_CHARS:]
        self._pending = _PRIVATE_KEY.sub(_KEY_MARKER, self._pending[: begin.start()]) + _KEY_MARKER

    def _release(self, final: bool) -> str:
        out: list[str] = []
        while self._pending:
            found = (len(self._pending), redact(self._pending)) if final else self._cut()
            if found is None:
                break
            cut, redacted = found
            segment, self._pending = self._pending[:cut], self._pending[cut:]
            out.append(redacted)
            if _MARKER_AT_END.search(redacted) and not _MARKER_AT_END.search(segment):
                # A match runs up to the cut and maybe past it: drop the rest of its line.
                newline = self._pending.find("\n")
                self._dropping_line = newline < 0
                self._pending = "" if newline < 0 else self._pending[newline:]
        return "".join(out)

    def _cut(self) -> tuple[int, str] | None:
        """A place where nothing spans a cut, and the redacted text before it."""
        text = self._pending
        lines = _content_lines(
            text, text.rfind("\n") + 1, 2 * STREAM_CONTEXT_LINES + STREAM_CUT_TRIES
        )
        for tried in range(STREAM_CUT_TRIES):
            # Before the newest line that has enough complete lines after it.
            first_after = STREAM_CONTEXT_LINES - 1 + tried
            if first_after >= len(lines) or lines[first_after][0] == 0:
                break
            cut = lines[first_after][0]
            after = min(lines[tried][1], cut + STREAM_WINDOW_CHARS)
            first_before = first_after + STREAM_CONTEXT_LINES
            before = lines[first_before][0] if first_before < len(lines) else 0
            if _neutral(text, max(before, cut - STREAM_WINDOW_CHARS), cut, after):
                return cut, redact(text[:cut])
        if len(text) < STREAM_HOLD_CHARS:
            return None
        # A long line: cut inside it, where a window of context on each side shows
        # nothing spanning the cut and no redaction runs up to it.
        for back in range(STREAM_CUT_TRIES):
            cut = len(text) - STREAM_WINDOW_CHARS - back * (STREAM_WINDOW_CHARS // 2)
            if _neutral(text, cut - STREAM_WINDOW_CHARS, cut, cut + STREAM_WINDOW_CHARS):
                redacted = redact(text[:cut])
                if not _MARKER_AT_END.search(redacted):
                    return cut, redacted
        if len(text) < 2 * STREAM_HOLD_CHARS:
            return None
        # Something spans every place tried: a match longer than the window. When
        # the redaction runs up to the cut, the rest of the line is dropped.
        cut = len(text) - STREAM_WINDOW_CHARS
        return cut, redact(text[:cut])


def _neutral(text: str, start: int, cut: int, end: int) -> bool:
    """True when no redaction of ``text[start:end]`` spans ``cut``."""
    before, after = text[max(0, start) : cut], text[cut:end]
    return redact(before) + redact(after) == redact(before + after)


def _content_lines(text: str, end: int, count: int) -> list[tuple[int, int]]:
    """Start and end (after its break) of up to ``count`` lines with something on them,
    newest first, before ``end`` (a line start); a window of blanks stops the search."""
    lines: list[tuple[int, int]] = []
    while len(lines) < count and end > 0:
        floor = max(0, end - STREAM_WINDOW_CHARS)
        content = floor + len(text[floor:end].rstrip())
        if content == floor:
            break
        start = text.rfind("\n", 0, content) + 1
        lines.append((start, text.find("\n", content) + 1))
        end = start
    return lines


def _open_key(text: str) -> re.Match[str] | None:
    """The start marker of a private-key block with no end marker after it, if any."""
    position = 0
    while (begin := _KEY_BEGIN_RE.search(text, position)) is not None:
        end = _KEY_END_RE.search(text, begin.end())
        if end is None:
            return begin
        position = end.end()
    return None
