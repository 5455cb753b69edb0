"""The first tier: definitions, references and imports from per-language patterns.

Regular expressions over the bytes, about ten times faster than a tree-sitter parse
(docs/ax-map.md, "Two tiers"), so every file gets its structure within a build's
first seconds. A build takes the tier in two steps over the whole workspace:
``scan_definitions`` (what each file defines: the structure the map shows) and then
``scan_links`` (the names and modules each file uses: what links files in the
ranking), so the structure of every file is there before any file's links are.
Definitions and imports are line-anchored patterns; a match that starts inside a
comment or string spanning lines (a docstring's example) is dropped. References
are the identifiers left once comments and strings are blanked out, less the
language's keywords. The second tier (ax_map.treesit) replaces all three with a
parse where the budget allows.

Every captured name passes ``languages.IDENTIFIER`` or is dropped; import
specifiers pass ``SPECIFIER`` or are dropped.
"""

from __future__ import annotations

import bisect
import keyword
import operator
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from itertools import accumulate, compress, product, repeat

from .languages import (
    IDENTIFIER_BYTES,
    NAME_MAX_CHARS,
    PLAIN_IDENTIFIER_BYTES,
    REFERENCE_MIN_CHARS,
)

# What an import specifier may hold: module paths, relative paths, package names.
SPECIFIER_MAX_CHARS = 256
SPECIFIER = re.compile(rf"[A-Za-z0-9_@$.~+:/-]{{1,{SPECIFIER_MAX_CHARS}}}")

KINDS = frozenset(
    {
        "function",
        "method",
        "class",
        "struct",
        "interface",
        "type",
        "enum",
        "module",
        "macro",
        "variable",
        "constant",
    }
)

# A whole name: a name running on into non-ASCII (cafe\xcc\x81) is not cut short.
_ID = rb"[A-Za-z_$][A-Za-z0-9_$]*+(?![\x80-\xff])"
# The bytes a name is made of, one by one (``xrequire(`` is no call of require).
_NAME_BYTES = frozenset(
    bytes([c]) for c in b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_$."
)


_NAME_START = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_$"
_NAME_REST = _NAME_START + "0123456789"
# The names too short to be references (REFERENCE_MIN_CHARS), every one of them.
_SHORT_NAMES = frozenset(
    first + "".join(rest)
    for length in range(1, REFERENCE_MIN_CHARS)
    for first in _NAME_START
    for rest in product(_NAME_REST, repeat=length - 1)
)


@cache
def _word_table(names: re.Pattern[bytes]) -> bytes:
    """A ``bytes.translate`` table keeping the bytes ``names`` may hold, the rest spaces."""
    return bytes(c if names.fullmatch(b"a" + bytes([c])) else 0x20 for c in range(256))


@dataclass(frozen=True)
class Extraction:
    """What one file holds: (name, kind, line) definitions, referenced names, import
    specifiers (resolved to files later, when the whole inventory is known)."""

    definitions: tuple[tuple[str, str, int], ...]
    references: frozenset[str]
    imports: tuple[str, ...]


@dataclass(frozen=True)
class DefinitionRule:
    kind: str
    pattern: re.Pattern[bytes]

    @cached_property
    def needs(self) -> tuple[bytes, ...]:
        """Bytes every match holds (``needed``): a file without them is not searched.
        Worked out when first scanned with, not when imported (a warm build never is)."""
        return needed(self.pattern)


@dataclass(frozen=True)
class Language:
    # Comments and strings (``prose``), in one alternation so that a quote inside a
    # comment or a comment marker inside a string is read as the tokenizer would.
    prose: re.Pattern[bytes]
    definitions: tuple[DefinitionRule, ...]
    imports: tuple[re.Pattern[bytes], ...]
    keywords: frozenset[bytes]
    # What a name looks like in the code: with '$' (JavaScript, Java) or without.
    names: re.Pattern[bytes] = PLAIN_IDENTIFIER_BYTES
    # No line can match two of ``definitions`` (each rule's first word rules out the
    # others'): they run as one alternation, one pass over the text instead of one a
    # rule, with the same matches (tests/map/test_scan.py compares the two).
    exclusive: bool = False

    @cached_property
    def one_pass(self) -> tuple[re.Pattern[bytes], dict[int, tuple[str, int, int | None]]]:
        """The definition rules as one pattern, and for each rule's name group (a
        match's ``lastindex``) its kind, name group and indent group."""
        bodies = []
        for number, rule in enumerate(self.definitions):
            if set(rule.pattern.groupindex) - {"name", "indent"}:
                raise ValueError(f"a {rule.kind} rule holds a group besides name and indent")
            body = rule.pattern.pattern[1:]
            body = body.replace(b"(?P<name>", b"(?P<name%d>" % number)
            bodies.append(body.replace(b"(?P<indent>", b"(?P<indent%d>" % number))
        pattern = re.compile(b"\n(?:" + b"|".join(bodies) + b")", re.M)
        groups = pattern.groupindex
        kinds = {
            groups[f"name{number}"]: (
                rule.kind,
                groups[f"name{number}"],
                groups.get(f"indent{number}"),
            )
            for number, rule in enumerate(self.definitions)
        }
        return pattern, kinds

    @cached_property
    def keyword_names(self) -> frozenset[str]:
        return frozenset(word.decode("ascii") for word in self.keywords)

    @cached_property
    def import_needs(self) -> tuple[tuple[bytes, ...], ...]:
        return tuple(needed(pattern) for pattern in self.imports)


def _line(pattern: bytes) -> re.Pattern[bytes]:
    """A pattern anchored at a line start, matched against the text with a newline put
    before it: a literal first character lets the regex engine jump from one newline to
    the next, where ``^`` (MULTILINE) would make it try every position (~10x slower).
    A match's start is then the offset of its line in the original text."""
    if not pattern.startswith(b"^"):
        raise ValueError(f"not anchored at a line start: {pattern!r}")
    return re.compile(b"\n" + pattern[1:], re.M)


def _prose(alternatives: bytes, flags: int = 0) -> re.Pattern[bytes]:
    """Comments and strings as one capturing group, so ``split`` hands back code and
    prose in turn without a Python step per token."""
    pattern = re.compile(b"(" + alternatives + b")", flags)
    if pattern.groups != 1:
        raise ValueError("a prose pattern holds no group of its own")
    return pattern


def _rules(*pairs: tuple[str, bytes]) -> tuple[DefinitionRule, ...]:
    return tuple(DefinitionRule(kind, _line(pattern)) for kind, pattern in pairs)


def needed(pattern: re.Pattern[bytes]) -> tuple[bytes, ...]:
    """The runs of literal bytes (two or more) in ``pattern``'s top-level sequence, which
    every match therefore holds, longest first.

    A text without one of them cannot match, so a file is searched only by the patterns
    whose runs it holds (``bytes in``, far cheaper than a pass of the pattern): a Go file
    without ``interface`` is not searched for interfaces, nor a JavaScript file without
    ``from`` for re-exports. The runs are read from the parse Python's own ``re`` makes
    of the pattern, not written by hand beside it.
    """
    from re import _constants, _parser  # type: ignore[attr-defined]

    if pattern.flags & re.IGNORECASE:
        return ()
    runs, run = [], bytearray()
    for op, value in [*_parser.parse(pattern.pattern.decode("latin-1")).data, (None, None)]:
        if op is _constants.LITERAL:
            run.append(value)
            continue
        if len(run) >= 2:
            runs.append(bytes(run))
        run = bytearray()
    return tuple(sorted(runs, key=len, reverse=True))


def _holds(text: bytes, runs: tuple[bytes, ...]) -> bool:
    return all(map(text.__contains__, runs))


def _words(text: str) -> frozenset[bytes]:
    return frozenset(word.encode() for word in text.split())


# Unrolled loops ("[^"\\]*(?:\\.[^"\\]*)*"): the fast form for Python's regex engine.
_DQ = rb'"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
_SQ = rb"'[^'\\\n]*(?:\\.[^'\\\n]*)*'"
_CHAR = rb"'(?:\\.[^'\\\n]{0,8}|[^'\\\n])'"
_LINE_COMMENT = rb"//[^\n]*"
_BLOCK_COMMENT = rb"/\*[^*]*\*+(?:[^/*][^*]*\*+)*/|/\*.*\Z"
_BACKTICK = rb"`[^`\\]*(?:\\.[^`\\]*)*`"

_PYTHON = Language(
    prose=_prose(
        rb'"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*(?:"""|\Z)'
        rb"|'''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*(?:'''|\Z)|" + _DQ + rb"|" + _SQ + rb"|#[^\n]*",
        re.S,
    ),
    definitions=_rules(
        ("class", rb"^(?P<indent>[ \t]*+)class[ \t]+(?P<name>" + _ID + rb")"),
        ("function", rb"^(?P<indent>[ \t]*+)(?:async[ \t]+)?def[ \t]+(?P<name>" + _ID + rb")"),
        ("variable", rb"^(?P<name>" + _ID + rb")[ \t]*(?::[^=\n]*)?=(?!=)"),
    ),
    imports=(
        _line(rb"^[ \t]*+import[ \t]+(?P<names>[^\n#;]+)"),
        _line(
            rb"^[ \t]*+from[ \t]+(?P<module>\.*[\w.]*)[ \t]+import[ \t]+"
            rb"(?P<names>\([^)]*\)|[^\n#;]+)"
        ),
    ),
    keywords=_words(" ".join([*keyword.kwlist, *keyword.softkwlist, "self", "cls"])),
    # A class or def line starts with its keyword and a name, a variable's with a name
    # and then ':' or '=': never both.
    exclusive=True,
)

_JS_KEYWORDS = _words(
    "break case catch class const continue debugger default delete do else export extends "
    "finally for function if import in instanceof let new return super switch this throw try "
    "typeof var void while with yield async await of static get set null true false undefined "
    "interface type enum implements private protected public readonly abstract declare "
    "namespace module keyof infer is as any unknown never string number boolean symbol object"
)
_JS_MODIFIERS = (
    rb"(?:(?:public|private|protected|static|async|readonly|override|abstract|get|set)[ \t]+)*"
)
_JS = Language(
    prose=_prose(
        _LINE_COMMENT + rb"|" + _BLOCK_COMMENT + rb"|" + _DQ + rb"|" + _SQ + rb"|" + _BACKTICK,
        re.S,
    ),
    definitions=_rules(
        (
            "function",
            rb"^[ \t]*+(?:export[ \t]+(?:default[ \t]+)?)?(?:async[ \t]+)?function\b[ \t]*\*?[ \t]*"
            rb"(?P<name>" + _ID + rb")",
        ),
        (
            "class",
            rb"^[ \t]*+(?:export[ \t]+(?:default[ \t]+)?)?(?:declare[ \t]+)?(?:abstract[ \t]+)?"
            rb"class[ \t]+(?P<name>" + _ID + rb")",
        ),
        (
            "function",
            rb"^[ \t]*+(?:export[ \t]+)?(?:const|let|var)[ \t]+(?P<name>" + _ID + rb")[ \t]*"
            rb"(?::[^=\n]+)?=[ \t]*(?:async[ \t]*)?(?:function\b|\([^)\n]*\)[ \t]*(?::[^=\n]+)?=>|"
            + _ID
            + rb"[ \t]*=>)",
        ),
        ("variable", rb"^(?:export[ \t]+)?(?:const|let|var)[ \t]+(?P<name>" + _ID + rb")"),
        (
            "interface",
            rb"^[ \t]*+(?:export[ \t]+)?(?:declare[ \t]+)?interface[ \t]+(?P<name>" + _ID + rb")",
        ),
        (
            "type",
            rb"^[ \t]*+(?:export[ \t]+)?(?:declare[ \t]+)?type[ \t]+(?P<name>" + _ID + rb")"
            rb"[ \t]*(?:<[^=\n]*>)?[ \t]*=",
        ),
        (
            "enum",
            rb"^[ \t]*+(?:export[ \t]+)?(?:declare[ \t]+)?(?:const[ \t]+)?enum[ \t]+(?P<name>"
            + _ID
            + rb")",
        ),
        (
            "module",
            rb"^[ \t]*+(?:export[ \t]+)?(?:declare[ \t]+)?namespace[ \t]+(?P<name>" + _ID + rb")",
        ),
        (
            "method",
            rb"^[ \t]++"
            + _JS_MODIFIERS
            + rb"(?!(?:if|for|while|switch|catch|function|return|with)\b)"
            rb"(?P<name>" + _ID + rb")[ \t]*(?:<[^>\n]*>)?\([^)\n]*\)[ \t]*(?::[^{;\n]+)?\{",
        ),
    ),
    imports=(
        _line(
            rb"^[ \t]*+import[ \t]+(?:type[ \t]+)?(?:[^'\";]*?[ \t\n}*]from[ \t]*)?"
            rb"[\"'](?P<spec>[^\"'\n]+)[\"']"
        ),
        # A re-export (``export * from "x"``): apart from the imports, so that a file
        # without "from" is not searched for one at every ``export``.
        _line(
            rb"^[ \t]*+export[ \t]+(?:type[ \t]+)?[^'\";]*?[ \t\n}*]from[ \t]*"
            rb"[\"'](?P<spec>[^\"'\n]+)[\"']"
        ),
        # Each starts with its literals, which a file must hold to be searched and which
        # let the engine skip ahead; a name that merely ends in "require" is told apart
        # after the match (import_specifiers).
        re.compile(rb"require\([ \t]*[\"'](?P<spec>[^\"'\n]+)[\"'][ \t]*\)"),
        re.compile(rb"import\([ \t]*[\"'](?P<spec>[^\"'\n]+)[\"'][ \t]*\)"),
    ),
    keywords=_JS_KEYWORDS,
    names=IDENTIFIER_BYTES,
)

_GO = Language(
    prose=_prose(
        _LINE_COMMENT + rb"|" + _BLOCK_COMMENT + rb"|" + _DQ + rb"|" + _CHAR + rb"|`[^`]*`", re.S
    ),
    definitions=_rules(
        ("function", rb"^func[ \t]+(?P<name>" + _ID + rb")"),
        ("method", rb"^func[ \t]*\([^)\n]*\)[ \t]*(?P<name>" + _ID + rb")"),
        ("struct", rb"^(?:type[ \t]+|[ \t]+)(?P<name>" + _ID + rb")[ \t]+struct\b"),
        ("interface", rb"^(?:type[ \t]+|[ \t]+)(?P<name>" + _ID + rb")[ \t]+interface\b"),
        ("type", rb"^type[ \t]+(?P<name>" + _ID + rb")"),
        ("variable", rb"^var[ \t]+(?P<name>" + _ID + rb")"),
        ("constant", rb"^const[ \t]+(?P<name>" + _ID + rb")"),
    ),
    imports=(
        _line(rb"^import[ \t]+(?:[\w.]+[ \t]+)?\"(?P<spec>[^\"\n]+)\""),
        _line(rb"^import[ \t]*\((?P<block>[^)]*)\)"),
    ),
    keywords=_words(
        "break case chan const continue default defer else fallthrough for func go goto if "
        "import interface map package range return select struct switch type var nil true "
        "false iota"
    ),
)

_RUST_VIS = rb"(?:pub(?:\([^)\n]*\))?[ \t]+)?"
_RUST = Language(
    prose=_prose(
        _LINE_COMMENT
        + rb"|"
        + _BLOCK_COMMENT
        + rb'|r"[^"]*"|r#"(?:[^"]|"(?!#))*"#|r##"(?:[^"]|"(?!##))*"##|'
        + rb'"[^"\\]*(?:\\.[^"\\]*)*"|'
        + _CHAR,
        re.S,
    ),
    definitions=_rules(
        (
            "function",
            rb"^(?P<indent>[ \t]*+)" + _RUST_VIS + rb"(?:(?:const|async|unsafe|default)[ \t]+)*"
            rb"(?:extern[ \t]+(?:\"[^\"\n]*\"[ \t]+)?)?fn[ \t]+(?P<name>" + _ID + rb")",
        ),
        ("struct", rb"^[ \t]*+" + _RUST_VIS + rb"(?:struct|union)[ \t]+(?P<name>" + _ID + rb")"),
        ("enum", rb"^[ \t]*+" + _RUST_VIS + rb"enum[ \t]+(?P<name>" + _ID + rb")"),
        (
            "interface",
            rb"^[ \t]*+" + _RUST_VIS + rb"(?:unsafe[ \t]+)?trait[ \t]+(?P<name>" + _ID + rb")",
        ),
        ("type", rb"^[ \t]*+" + _RUST_VIS + rb"type[ \t]+(?P<name>" + _ID + rb")"),
        ("module", rb"^[ \t]*+" + _RUST_VIS + rb"mod[ \t]+(?P<name>" + _ID + rb")"),
        ("macro", rb"^[ \t]*+macro_rules![ \t]*(?P<name>" + _ID + rb")"),
        (
            "constant",
            rb"^[ \t]*+"
            + _RUST_VIS
            + rb"(?:const|static)[ \t]+(?:mut[ \t]+)?(?P<name>"
            + _ID
            + rb")",
        ),
    ),
    imports=(_line(rb"^[ \t]*+" + _RUST_VIS + rb"mod[ \t]+(?P<mod>" + _ID + rb")[ \t]*;"),),
    keywords=_words(
        "as async await break const continue crate dyn else enum extern false fn for if impl "
        "in let loop match mod move mut pub ref return self Self static struct super trait true "
        "type unsafe use where while union macro_rules"
    ),
)

_JAVA_MODIFIERS = (
    rb"(?:(?:public|private|protected|static|final|abstract|synchronized|native|default|"
    rb"strictfp|sealed|non-sealed)[ \t]+)*"
)
_JAVA = Language(
    prose=_prose(
        _LINE_COMMENT
        + rb"|"
        + _BLOCK_COMMENT
        + rb'|"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*(?:"""|\Z)|'
        + _DQ
        + rb"|"
        + _CHAR,
        re.S,
    ),
    definitions=_rules(
        (
            "class",
            rb"^[ \t]*+" + _JAVA_MODIFIERS + rb"(?:class|record)[ \t]+(?P<name>" + _ID + rb")",
        ),
        (
            "interface",
            rb"^[ \t]*+" + _JAVA_MODIFIERS + rb"@?interface[ \t]+(?P<name>" + _ID + rb")",
        ),
        ("enum", rb"^[ \t]*+" + _JAVA_MODIFIERS + rb"enum[ \t]+(?P<name>" + _ID + rb")"),
        (
            "method",
            rb"^[ \t]++" + _JAVA_MODIFIERS + rb"(?:<[^>\n]+>[ \t]+)?"
            rb"(?:(?!(?:return|new|throw|else|case|yield|await)\b)[\w$.]+(?:[ \t]*<[^;(\n]*>)?"
            rb"(?:\[\])*[ \t]+)?(?P<name>" + _ID + rb")[ \t]*\((?![^)\n]*\)[ \t]*;)",
        ),
    ),
    imports=(_line(rb"^import[ \t]+(?:static[ \t]+)?(?P<spec>[\w.]+)[ \t]*;"),),
    keywords=_words(
        "abstract assert boolean break byte case catch char class const continue default do "
        "double else enum extends final finally float for goto if implements import instanceof "
        "int interface long native new package private protected public return short static "
        "strictfp super switch synchronized this throw throws transient try void volatile while "
        "true false null var record yield sealed permits"
    ),
    names=IDENTIFIER_BYTES,
)

_C_KEYWORDS = (
    "auto break case char const continue default do double else enum extern float for goto if "
    "inline int long register restrict return short signed sizeof static struct switch typedef "
    "union unsigned void volatile while include define ifdef ifndef endif elif undef pragma NULL"
)
_CPP_KEYWORDS = (
    _C_KEYWORDS + " bool catch class constexpr delete explicit false friend mutable namespace "
    "new noexcept nullptr operator override private protected public template this throw true "
    "try typename using virtual"
)
_C_FAMILY_DEFINITIONS = (
    (
        "function",
        rb"^(?!(?:if|for|while|switch|return|else|do|case|typedef|using|namespace|struct|class|"
        rb"enum|union|template)\b)(?:[A-Za-z_][\w:<>,*&\t ]*?[\t *&]+)?\**"
        rb"(?P<name>~?" + _ID + rb"(?:::~?" + _ID + rb")*)[ \t]*\([^;{}\n]*"
        # The parameters close on this line or a later one; a body may follow.
        rb"(?:\)[\w \t]*(?:\{[^\n]*)?)?$",
    ),
    (
        "struct",
        rb"^[ \t]*+(?:typedef[ \t]+)?(?:struct|union)[ \t]+(?P<name>"
        + _ID
        + rb")[ \t]*(?:\{[^\n]*)?$",
    ),
    (
        "class",
        rb"^[ \t]*+(?:template[ \t]*<[^>\n]*>[ \t]*)?class[ \t]+(?:[A-Z_]+[ \t]+)*(?P<name>"
        + _ID
        + rb")[ \t]*(?::[^;{\n]*)?(?:\{[^\n]*)?$",
    ),
    (
        "enum",
        rb"^[ \t]*+(?:typedef[ \t]+)?enum[ \t]+(?:class[ \t]+)?(?P<name>"
        + _ID
        + rb")[ \t]*(?::[^;{\n]*)?(?:\{[^\n]*)?$",
    ),
    ("type", rb"^typedef\b[^\n]*[ \t*}](?P<name>" + _ID + rb")[ \t]*(?:\[[^\]\n]*\])?;[ \t]*$"),
    ("type", rb"^\}[ \t]*(?P<name>" + _ID + rb")[ \t]*;"),
    ("macro", rb"^[ \t]*+#[ \t]*define[ \t]+(?P<name>" + _ID + rb")"),
    ("module", rb"^[ \t]*+namespace[ \t]+(?P<name>" + _ID + rb")"),
)
_C_PROSE = _prose(
    _LINE_COMMENT + rb"|" + _BLOCK_COMMENT + rb"|" + _DQ + rb"|" + _CHAR + rb"|<[\w./+-]+\.h>",
    re.S,
)
_C_INCLUDE = _line(rb"^[ \t]*+#[ \t]*include[ \t]*\"(?P<spec>[^\"\n]+)\"")
_C = Language(_C_PROSE, _rules(*_C_FAMILY_DEFINITIONS), (_C_INCLUDE,), _words(_C_KEYWORDS))
_CPP = Language(_C_PROSE, _rules(*_C_FAMILY_DEFINITIONS), (_C_INCLUDE,), _words(_CPP_KEYWORDS))

_BASH = Language(
    prose=_prose(rb"(?<![^\s;|&(])#[^\n]*|'[^']*'", re.S),
    definitions=_rules(
        ("function", rb"^[ \t]*+function[ \t]+(?P<name>" + _ID + rb")"),
        ("function", rb"^[ \t]*+(?P<name>" + _ID + rb")[ \t]*\(\)"),
        (
            "variable",
            rb"^(?:export[ \t]+|readonly[ \t]+|declare[ \t]+(?:-\w+[ \t]+)*)?(?P<name>"
            + _ID
            + rb")=",
        ),
    ),
    imports=(_line(rb"^[ \t]*+(?:source|\.)[ \t]+[\"']?(?P<spec>[\w./-]+)[\"']?[ \t]*(?:$|;|#)"),),
    keywords=_words(
        "if then else elif fi case esac for while until do done in function select time "
        "return local export readonly declare echo printf set unset shift exit true false"
    ),
)

# Names a pattern can mistake for a definition ("try: x = 1" is no variable "try").
_RESERVED = {"python": frozenset(keyword.kwlist)}

LANGUAGES: dict[str, Language] = {
    "python": _PYTHON,
    "javascript": _JS,
    "typescript": _JS,
    "tsx": _JS,
    "go": _GO,
    "rust": _RUST,
    "java": _JAVA,
    "c": _C,
    "cpp": _CPP,
    "bash": _BASH,
}


Definitions = tuple[tuple[str, str, int], ...]


def scan(language: str, data: bytes) -> Extraction:
    """The first tier's whole extraction of ``data``, a file in ``language`` (of
    LANGUAGES): ``scan_definitions`` and ``scan_links`` from one split."""
    rules = LANGUAGES[language]
    pieces = rules.prose.split(data)
    outside = _outside(pieces)
    return Extraction(
        _definitions(language, rules, data, outside),
        _references(rules, pieces),
        import_specifiers(language, rules, data, outside),
    )


def scan_definitions(language: str, data: bytes) -> Definitions:
    """The first tier's definitions of ``data``."""
    rules = LANGUAGES[language]
    return _definitions(language, rules, data, _outside(rules.prose.split(data)))


def scan_links(language: str, data: bytes) -> tuple[frozenset[str], tuple[str, ...]]:
    """The first tier's referenced names and import specifiers of ``data``."""
    rules = LANGUAGES[language]
    pieces = rules.prose.split(data)
    return _references(rules, pieces), import_specifiers(language, rules, data, _outside(pieces))


def _references(rules: Language, pieces: list[bytes]) -> frozenset[str]:
    # [code, prose, code, prose, ..., code]: every step here runs in C.
    return identifiers(b" ".join(pieces[0::2]), rules)


def _outside(pieces: list[bytes]) -> OutsideSpans:
    """Outside the comments and strings that span lines, of a text split into ``pieces``
    by its language's ``prose`` pattern."""
    spans_lines = list(map(operator.contains, pieces[1::2], repeat(b"\n")))
    if not any(spans_lines):
        return OutsideSpans([], [])
    offsets = [0, *accumulate(map(len, pieces))]
    multiline = list(compress(range(1, len(pieces), 2), spans_lines))
    return OutsideSpans([offsets[i] for i in multiline], [offsets[i + 1] for i in multiline])


def _lined(data: bytes) -> bytes:
    """``data`` as the line patterns (``_line``) read it: after a newline."""
    return b"\n" + data


class OutsideSpans:
    """Is a position outside every one of the sorted, disjoint spans?"""

    def __init__(self, starts: Sequence[int], ends: Sequence[int]) -> None:
        self.starts = starts
        self.ends = ends

    def __call__(self, position: int) -> bool:
        index = bisect.bisect_right(self.starts, position) - 1
        return index < 0 or position >= self.ends[index]


def identifiers(code: bytes, rules: Language) -> frozenset[str]:
    """The distinct names in ``code``, keywords and names too short to matter left out.

    Exactly ``rules.names.findall(code)``, found faster: every byte that is no part of
    a name becomes a space, so the runs of name bytes ("words") come out of one split
    in C, already ASCII. A word is a name as it stands unless it starts with a digit or
    is longer than a name may be; only those few go through the pattern.
    """
    words = set(code.translate(_word_table(rules.names)).decode("ascii").split())
    # Below ':' are the words starting with a digit, and those starting with '$', which
    # the pattern gives back whole: one pass, no sort.
    odd = [word for word in words if word < ":" or len(word) > NAME_MAX_CHARS]
    if odd:
        words.difference_update(odd)
        for word in odd:
            found = rules.names.findall(word.encode("ascii"))
            words.update(name.decode("ascii") for name in found)
    words -= rules.keyword_names
    words -= _SHORT_NAMES
    return frozenset(words)


def _definitions(language: str, rules: Language, data: bytes, outside: OutsideSpans) -> Definitions:
    found: dict[int, tuple[str, str]] = {}
    indents: dict[int, int] = {}
    text = _lined(data)
    reserved = _RESERVED.get(language, frozenset())
    # Without a comment or string spanning lines, every match is outside one.
    spans = bool(outside.starts)
    for kinds, matches in _passes(rules, text):
        for match in matches:
            kind, name_group, indent_group = kinds[match.lastindex or 0]
            # In ``text`` the match starts at the newline before its line: at the offset,
            # in ``data``, of the line itself.
            start = match.start(name_group) - 1
            if start in found or (spans and not outside(match.start())):
                continue
            name = match[name_group].decode("ascii")
            if "::" in name:
                name, kind = name.rsplit("::", 1)[-1], "method"
            if name[0] == "~":
                name = name.lstrip("~")
            # ``_ID`` made it of identifier bytes: only its length can fail IDENTIFIER.
            if len(name) > NAME_MAX_CHARS or name in reserved:
                continue
            found[start] = (name, kind)
            if indent_group is not None:
                indents[start] = len(match[indent_group].expandtabs(8))
    ordered = sorted(found)
    if language == "python":
        _python_methods(found, ordered, indents, data, outside)
    elif language == "rust":
        for start in ordered:
            name, kind = found[start]
            if kind == "function" and indents.get(start, 0) > 0:
                found[start] = (name, "method")
    result = []
    line, last = 1, 0
    for start in ordered:
        line += data.count(b"\n", last, start)
        last = start
        name, kind = found[start]
        result.append((name, kind, line))
    return tuple(result)


_Kinds = dict[int, tuple[str, int, int | None]]


def _passes(rules: Language, text: bytes) -> Iterator[tuple[_Kinds, Iterator[re.Match[bytes]]]]:
    """The definition rules' matches over ``text``: one pass for a language whose rules
    are ``exclusive``, else one a rule (skipping a rule whose bytes ``text`` lacks)."""
    if rules.exclusive:
        pattern, kinds = rules.one_pass
        yield kinds, pattern.finditer(text)
        return
    for rule in rules.definitions:
        if not _holds(text, rule.needs):
            continue
        groups = rule.pattern.groupindex
        name_group = groups["name"]
        kinds = {index: (rule.kind, name_group, groups.get("indent")) for index in groups.values()}
        yield kinds, rule.pattern.finditer(text)


def _python_methods(
    found: dict[int, tuple[str, str]],
    ordered: list[int],
    indents: dict[int, int],
    data: bytes,
    outside: OutsideSpans,
) -> None:
    """A ``def`` directly inside a ``class`` is a method, told by indentation.

    A block stays open until a line of code (not a blank, a comment or a line of
    a string) is indented no deeper than its header: an ``if`` after a class closes
    it although it defines nothing.
    """
    stack: list[list[int]] = []  # [indent, is a class, checked up to]
    for start in ordered:
        name, kind = found[start]
        if kind == "variable":
            continue
        indent = indents.get(start, 0)
        while stack and (stack[-1][0] >= indent or _closed(stack[-1], start, data, outside)):
            stack.pop()
        if kind == "function" and stack and stack[-1][1]:
            found[start] = (name, "method")
        stack.append([indent, kind == "class", start])


def _closed(block: list[int], until: int, data: bytes, outside: OutsideSpans) -> bool:
    """Does a line of code between ``block[2]`` and ``until`` end the block?"""
    pattern = _dedent(block[0])
    position = data.find(b"\n", block[2], until)
    while position != -1:
        match = pattern.search(data, position, until)
        if match is None:
            break
        if outside(match.end() - 1):
            return True
        position = match.end()
    block[2] = until
    return False


@cache
def _dedent(indent: int) -> re.Pattern[bytes]:
    """A line whose code starts within ``indent`` columns (spaces; a tab counts as 8)."""
    # A closing bracket at the margin ends a header or a call spread over lines.
    return re.compile(rb"\n(?: {0,%d}|\t{0,%d})[^ \t\r\n#)\]}]" % (indent, indent // 8))


def import_specifiers(
    language: str, rules: Language, data: bytes, outside: OutsideSpans | None = None
) -> tuple[str, ...]:
    """The file's import specifiers, in the form ax_map.resolve reads for ``language``,
    each once, in the order the file holds them (whichever pattern found them)."""
    found: list[tuple[int, list[str]]] = []
    text = _lined(data)
    for pattern, needs in zip(rules.imports, rules.import_needs, strict=True):
        if not _holds(text, needs):
            continue
        anchored = pattern.pattern.startswith(b"\n")
        for match in pattern.finditer(text):
            start = match.start() if anchored else match.start() - 1
            if not anchored and text[match.start() - 1 : match.start()] in _NAME_BYTES:
                continue
            if outside is not None and not outside(start):
                continue
            found.append((start, list(_specs(language, match))))
    found.sort(key=_FIRST)
    seen: dict[str, None] = {}
    for _start, specs in found:
        for spec in specs:
            if SPECIFIER.fullmatch(spec):
                seen.setdefault(spec, None)
    return tuple(seen)


_FIRST = operator.itemgetter(0)


def _specs(language: str, match: re.Match[bytes]) -> Iterable[str]:
    groups = match.groupdict()
    if language == "python":
        names = [
            part.split()[0]
            for part in groups["names"].decode("ascii", "replace").strip("()").split(",")
            if part.split()
        ]
        module = groups.get("module")
        if module is None:
            return names
        base = module.decode("ascii", "replace")
        return [base] if names == ["*"] else [f"{base}:{name}" for name in names]
    if language == "go" and groups.get("block") is not None:
        return [m.decode("ascii", "replace") for m in re.findall(rb'"([^"\n]+)"', groups["block"])]
    if language == "rust":
        return [f"mod:{groups['mod'].decode('ascii')}"]
    return [groups["spec"].decode("ascii", "replace")]
