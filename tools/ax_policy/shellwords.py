"""A strict tokenizer for the read-only proof.

It accepts only a small, quote-aware subset of POSIX shell words, so that
whatever it returns is exactly the argv a shell builds from the same string:

- outside quotes: letters, digits and ``_ . / = , : + @ % -``, and the glob
  characters ``* ? [ ]`` (a word holding them is marked ``glob``; the review
  expands it as the shell would, see ``globs``, and a glob word may not also
  hold quoted text);
- inside single quotes: any printable ASCII but the closing quote. Nothing is
  special there to any shell (``$``, backticks, backslashes, ``!`` included);
- inside double quotes: any printable ASCII but ``$``, backticks and ``!``
  (expansions, and history expansion in an interactive shell); a backslash
  only where the shell keeps it as it is: before a character other than a
  dollar sign, a backtick, a double quote, a backslash or a newline.

Everything else a shell would expand or interpret (``$``, backticks,
backslashes and ``!`` outside quotes, operators, braces, ``~``, ``#``) is
refused with the reason, and so are control characters and every non-ASCII
character, quoted or not.

``split_sequence`` adds exactly four operators on top of that, outside quotes:
``|``, ``&&``, ``||`` and ``;`` between simple commands. Each command between
them goes through ``split_words`` unchanged, so a sequence is refused for
everything a single command is, plus a background ``&``, ``|&``, ``;;``, an
empty command or more than ``MAX_PARTS`` commands.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

MAX_COMMAND_CHARS = 4096
MAX_WORDS = 256
MAX_PARTS = 16

_UNQUOTED_OK = frozenset(string.ascii_letters + string.digits + "_./=,:+@%-")
GLOB_CHARS = frozenset("*?[]")

# Refused outside quotes and inside double quotes (a backslash there only before
# the characters it escapes); inside single quotes each is a plain character.
_EXPANDING = {
    "$": "a $ expansion (variables, $(...) or arithmetic)",
    "`": "a backtick command substitution",
    "\\": "a backslash escape",
    "!": "a ! (history expansion or negation)",
}
# What a backslash escapes inside double quotes; before anything else it stays.
_DOUBLE_QUOTE_ESCAPED = frozenset('$`"\\\n')

_UNQUOTED_MEANING = {
    ";": "command chaining (;)",
    "&": "a background or chaining operator (&)",
    "|": "a pipe or chaining operator (|)",
    "<": "a redirection (<)",
    ">": "a redirection (>)",
    "(": "a subshell or grouping parenthesis",
    ")": "a subshell or grouping parenthesis",
    "{": "a brace expansion or group ({)",
    "}": "a brace expansion or group (})",
    "#": "a comment (#)",
    "~": "a tilde expansion (~)",
    "^": "a ^ (a pipe in old shells, history substitution in bash)",
}


class NotSimple(Exception):
    """The string is not one plain simple command; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Word:
    text: str
    quoted: bool
    # Unquoted * ? [ ] in it: the shell replaces it with the names it matches.
    glob: bool = False


def describe_char(char: str) -> str:
    code = ord(char)
    if char == "\n" or char == "\r":
        return "a newline (a second command)"
    if code == 0:
        return "a NUL byte"
    if code < 0x20 or code == 0x7F:
        return f"a control character U+{code:04X}"
    if code > 0x7E:
        return (
            f"a non-ASCII character U+{code:04X} (look-alike letters and "
            "invisible characters are never reviewed as safe)"
        )
    return _EXPANDING.get(char) or _UNQUOTED_MEANING.get(char) or f"the character {char!r}"


def _check_characters(command: str) -> None:
    if len(command) > MAX_COMMAND_CHARS:
        raise NotSimple(f"the command is longer than {MAX_COMMAND_CHARS} characters")
    for char in command:
        code = ord(char)
        if code < 0x20 or code >= 0x7F:
            raise NotSimple(f"it contains {describe_char(char)}")


def _in_double_quotes(command: str, index: int) -> None:
    """Refuse what a shell expands at ``command[index]`` inside double quotes."""
    char = command[index]
    if char == "\\":
        following = command[index + 1] if index + 1 < len(command) else ""
        if following in _DOUBLE_QUOTE_ESCAPED:
            raise NotSimple(f"it contains {describe_char(char)} inside double quotes")
    elif char in _EXPANDING:
        raise NotSimple(f"it contains {describe_char(char)} inside double quotes")


def split_words(command: str) -> list[Word]:
    """The words of ``command``, or NotSimple naming the first thing that disqualifies it."""
    _check_characters(command)

    words: list[Word] = []
    current: list[str] = []
    in_word = quoted = globbed = False
    quote: str | None = None

    def finish() -> None:
        if globbed and quoted:
            raise NotSimple(
                f"the glob {''.join(current)!r} is joined to quoted text; quote all of it or none"
            )
        words.append(Word("".join(current), quoted, globbed))

    for index, char in enumerate(command):
        if quote is not None:
            if char == quote:
                quote = None
                continue
            if quote == '"':
                _in_double_quotes(command, index)
            current.append(char)
            continue
        if char == " ":
            if in_word:
                finish()
                current, in_word, quoted, globbed = [], False, False, False
            continue
        in_word = True
        if char in "'\"":
            quote, quoted = char, True
        elif char in _UNQUOTED_OK:
            current.append(char)
        elif char in GLOB_CHARS:
            current.append(char)
            globbed = True
        else:
            raise NotSimple(f"it contains {describe_char(char)}")
    if quote is not None:
        raise NotSimple("it has an unterminated quote")
    if in_word:
        finish()
    if not words:
        raise NotSimple("the command is empty")
    if len(words) > MAX_WORDS:
        raise NotSimple(f"the command has more than {MAX_WORDS} words")
    return words


@dataclass(frozen=True)
class Part:
    """One simple command of a sequence and the operator after it (None for the last)."""

    text: str
    words: list[Word]
    operator: str | None


_OPERATOR_CHARS = frozenset("|&;")
OPERATORS = frozenset({"|", "&&", "||", ";"})
_REFUSED_OPERATORS = {
    "&": "a background job (&)",
    "|&": "a pipe of standard error too (|&)",
    ";;": "a case terminator (;;)",
}


def split_sequence(command: str) -> list[Part]:
    """The simple commands of ``command`` joined by ``| && || ;``, or NotSimple saying why not."""
    _check_characters(command)
    pieces: list[tuple[str, str | None]] = []
    start = index = 0
    quote: str | None = None
    while index < len(command):
        char = command[index]
        if quote is not None:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "<>":
            # Checked here so that 2>&1 is named a redirection, not a background job.
            raise NotSimple(f"it contains {describe_char(char)}")
        elif char in _OPERATOR_CHARS:
            end = index
            while end < len(command) and command[end] in _OPERATOR_CHARS:
                end += 1
            operator = command[index:end]
            if operator not in OPERATORS:
                raise NotSimple(f"it contains {_describe_operator(operator)}")
            pieces.append((command[start:index], operator))
            start = index = end
            continue
        index += 1
    if quote is not None:
        raise NotSimple("it has an unterminated quote")
    pieces.append((command[start:], None))
    if len(pieces) > MAX_PARTS:
        raise NotSimple(f"it joins more than {MAX_PARTS} commands")
    if len(pieces) == 1:
        return [Part(command.strip(" "), split_words(command), None)]
    parts: list[Part] = []
    for number, (text, joiner) in enumerate(pieces):
        stripped = text.strip(" ")
        if not stripped:
            raise NotSimple(_empty_reason(pieces, number))
        parts.append(Part(stripped, split_words(stripped), joiner))
    return parts


def _describe_operator(operator: str) -> str:
    known = _REFUSED_OPERATORS.get(operator)
    if known is not None:
        return known
    return f"the operator {operator!r} (only | && || ; join reviewed commands)"


def _empty_reason(pieces: list[tuple[str, str | None]], number: int) -> str:
    after = pieces[number][1]
    before = pieces[number - 1][1] if number > 0 else None
    if before is None:
        return f"no command comes before the first {after}"
    if after is None:
        return f"no command follows the last {before}"
    return f"no command comes between {before} and {after}"
