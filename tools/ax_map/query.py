"""A query matched against a snapshot's names and paths: which files, how strongly, and why.

A query is split into words (``query_terms``); compound words are also split
into their camelCase / snake_case parts. Each word is looked up in the tables the
structure built: symbol names (exact, then case-blind, then as a part of a name,
then as a name's start, then as a substring) and paths (the file's stem, a folder,
a part of either, a word's start, a substring). A file's score for one word is its
best name match plus its best path match, weighted by how rare the word is (BM25's
idf); the words add up, a file matching only some of them keeps a share, and a name
holding several of the words (TemporaryFile for "temporary file") earns a bonus.

The per-query work is dictionary lookups over the matching files only, in
dictionaries of plain numbers and strings, which the garbage collector does not
track: a re-rank allocates little that can trigger a full collection of a large
snapshot's objects. Reasons in words are built only for the files shown.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from dataclasses import dataclass, field

from .structure import PATH_FOLDER, PATH_PART, PATH_STEM, Structure, parts

# How a term matches a file, strongest first.
MATCH_PATH_EXACT = 10.0
MATCH_EXACT = 8.0
MATCH_ICASE = 6.0
MATCH_SUBWORD = 3.0
# A name that starts with the term, as a compound written without a separator does
# (heappush, getattr, urlopen): likelier its first word than a match inside a word.
MATCH_PREFIX = 2.0
MATCH_SUBSTRING = 1.0
PATH_STRENGTH = {PATH_STEM: 6.0, PATH_FOLDER: 4.0, PATH_PART: 3.0}
MATCH_PATH_SUBSTRING = 1.0
# A term matched only after stripping a suffix (options -> option) counts for less.
VARIANT_FACTOR = 0.8
# Parts of a compound query word (parse_args -> parse, args) count for less than it.
PART_TERM_WEIGHT = 0.5
# Each query word found inside one name together with another adds this strength.
PHRASE_BONUS = 2.0
# A file matching only some of the words keeps this share, plus the rest pro rata.
COVERAGE_FLOOR = 0.4
# Substring matches are skipped for a term found inside more names than this.
SUBSTRING_NAMES_MAX = 2_000
SUBSTRING_MIN_CHARS = 3
# A known word at least this long that a query word starts with is taken as its stem.
PREFIX_MIN_CHARS = 5
QUERY_MAX_CHARS = 1_000
QUERY_TERMS_MAX = 16
QUERY_SIGNALS_MAX = 3
# The best-matching file scores this; the others in proportion.
QUERY_WEIGHT = 10.0
STOP_WORDS = frozenset(
    {"a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "how"}
    | {"in", "into", "is", "it", "of", "on", "or", "that", "the", "this", "to", "what"}
    | {"when", "where", "which", "with"}
)

_TOKEN = re.compile(r"[A-Za-z0-9_]+")
_SUFFIXES = ("ing", "es", "ed", "s")


@dataclass(frozen=True)
class Term:
    """One word of a query: ``raw`` as typed, ``text`` lowercased, and its weight.

    ``group`` numbers the word of the query it came from (parse_args and its parts
    parse and args share one); ``simple`` says it is not itself a compound.
    """

    raw: str
    text: str
    weight: float
    group: int
    simple: bool


def query_terms(query: str) -> list[Term]:
    """The words of ``query`` worth matching, each compound word also split into its parts."""
    terms: dict[str, Term] = {}
    for group, raw in enumerate(_TOKEN.findall(query[:QUERY_MAX_CHARS])):
        text = raw.lower()
        if text in STOP_WORDS or len(text) < 2:
            continue
        pieces = [p for p in parts(raw) if len(p) >= 2 and p not in STOP_WORDS]
        if text not in terms or terms[text].weight < 1.0:
            terms[text] = Term(raw, text, 1.0, group, len(pieces) < 2)
        if len(pieces) > 1:
            for piece in pieces:
                terms.setdefault(piece, Term(piece, piece, PART_TERM_WEIGHT, group, True))
    return list(terms.values())[:QUERY_TERMS_MAX]


def _variant(text: str) -> str | None:
    for suffix in _SUFFIXES:
        if text.endswith(suffix) and len(text) - len(suffix) >= SUBSTRING_MIN_CHARS:
            return text[: -len(suffix)]
    return None


def _containing(vocab: str, starts: list[int], words: list[str], part: str) -> list[str] | None:
    """The words of a vocabulary containing ``part``; None when there are too many."""
    found: list[str] = []
    at = vocab.find(part)
    while at >= 0:
        word = words[bisect_right(starts, at) - 1]
        if not found or found[-1] != word:
            found.append(word)
            if len(found) > SUBSTRING_NAMES_MAX:
                return None
        at = vocab.find(part, at + 1)
    return found


@dataclass
class TermMatch:
    """How one term matched: per file its best name and that match's strength, its path
    match's strength (the two add up, as fields do in BM25F: glob.py, named "glob" and
    defining "glob", answers "glob" better than a file that only defines it), and every
    name it matched."""

    term: Term
    name: dict[int, str] = field(default_factory=dict)
    name_strength: dict[int, float] = field(default_factory=dict)
    path_strength: dict[int, float] = field(default_factory=dict)
    names: set[str] = field(default_factory=set)
    idf: float = 0.0

    def files(self) -> set[int]:
        return self.name_strength.keys() | self.path_strength.keys()


def match_term(st: Structure, term: Term) -> TermMatch:
    """Every file and name ``term`` matches in ``st``, and how strongly."""
    found = TermMatch(term)
    name_of, strength_of, path_of = found.name, found.name_strength, found.path_strength
    look = st.lookup

    def names(matched: tuple[str, ...] | list[str], strength: float) -> None:
        found.names.update(matched)
        for name in matched:
            value = MATCH_EXACT if strength == MATCH_ICASE and name == term.raw else strength
            for node in st.definers[name]:
                if strength_of.get(node, 0.0) < value:
                    strength_of[node] = value
                    name_of[node] = name

    def paths(token: str, factor: float, fixed: float | None = None) -> None:
        for node, kind in look.path_tokens.get(token, ()):
            value = fixed if fixed is not None else PATH_STRENGTH[kind] * factor
            if path_of.get(node, 0.0) < value:
                path_of[node] = value

    variant = _variant(term.text)
    for text, factor in ((term.text, 1.0), (variant, VARIANT_FACTOR)):
        if text is not None:
            names(look.lower_names.get(text, ()), MATCH_ICASE * factor)
            names(look.subword_names.get(text, ()), MATCH_SUBWORD * factor)
            paths(text, factor)
    shortest = variant or term.text
    if len(shortest) >= SUBSTRING_MIN_CHARS:
        # The vocabulary holds the lowercased names in name_list's order.
        inside = _containing(look.name_vocab, look.name_starts, look.name_list, shortest) or []
        names(inside, MATCH_SUBSTRING)
        names([n for n in inside if n.lstrip("_").lower().startswith(shortest)], MATCH_PREFIX)
        tokens = _containing(look.path_vocab, look.path_starts, look.path_list, shortest)
        for token in tokens or ():
            paths(token, 1.0, MATCH_PREFIX if token.startswith(shortest) else MATCH_PATH_SUBSTRING)
    # A known word a simple term starts with is its stem (configuration -> config).
    for end in range(PREFIX_MIN_CHARS, len(term.text) if term.simple else 0):
        prefix = term.text[:end]
        names(look.lower_names.get(prefix, ()), MATCH_SUBSTRING)
        names(look.subword_names.get(prefix, ()), MATCH_SUBSTRING)
        paths(prefix, 1.0, MATCH_PATH_SUBSTRING)
    return found


@dataclass
class QueryMatch:
    """Which files a query matched and how: ``scores`` (0..QUERY_WEIGHT) and the evidence."""

    terms: list[TermMatch]
    scores: dict[int, float]
    # node -> its name holding the most of the query's words (see _phrases).
    phrase: dict[int, str]
    # The file the query names by its path, if any.
    named: int | None

    def reasons(self, node: int) -> list[str]:
        """Why ``node`` matched, strongest evidence first, in words."""
        # (strength, the name or path it is about, the words): one reason per name.
        found: list[tuple[float, str, str]] = []
        if node == self.named:
            found.append((MATCH_PATH_EXACT * 10, "", "its path is the query"))
        phrase = self.phrase.get(node)
        if phrase is not None:
            words = self.phrase_words(phrase)
            said = f"defines '{phrase}' (matches '{' '.join(words)}')"
            found.append((MATCH_EXACT + len(words), phrase, said))
        for match in self.terms:
            strength = match.name_strength.get(node)
            if strength is not None:
                name = match.name[node]
                how = "(query)" if strength >= MATCH_ICASE else f"(matches '{match.term.text}')"
                found.append((strength, name, f"defines '{name}' {how}"))
            path = match.path_strength.get(node)
            if path is not None:
                found.append((path, "", f"path matches '{match.term.text}'"))
        found.sort(key=lambda item: -item[0])
        reasons: dict[str, None] = {}
        told: set[str] = set()
        for _, about, reason in found:
            if about and about in told:
                continue
            told.add(about)
            reasons.setdefault(reason)
        return list(reasons)[:QUERY_SIGNALS_MAX]

    def names(self, node: int) -> dict[str, float]:
        """The names ``node`` defines that matched, with the strength of each match."""
        held: dict[str, float] = {}
        name = self.phrase.get(node)
        if name is not None:
            held[name] = MATCH_EXACT + len(self.phrase_words(name))
        for match in self.terms:
            strength = match.name_strength.get(node)
            if strength is not None:
                matched = match.name[node]
                held[matched] = max(held.get(matched, 0.0), strength)
        return held

    def phrase_words(self, name: str) -> list[str]:
        """The query words ``name`` holds, one term per word, in query order."""
        words: dict[int, str] = {}
        for match in self.terms:
            if name in match.names:
                words.setdefault(match.term.group, match.term.text)
        return [words[group] for group in sorted(words)]


def match_query(st: Structure, query: str) -> QueryMatch:
    """The files of ``st`` that ``query`` matches, scored and with their evidence."""
    count = len(st.paths)
    scores: dict[int, float] = {}
    covered: dict[int, float] = {}
    kept: list[TermMatch] = []
    total_weight = 0.0
    for term in query_terms(query):
        match = match_term(st, term)
        files = match.files()
        if not files:
            continue
        kept.append(match)
        total_weight += term.weight
        df = len(files)
        match.idf = math.log(1.0 + (count - df + 0.5) / (df + 0.5))
        value = term.weight * match.idf
        names, paths = match.name_strength, match.path_strength
        for node in files:
            strength = names.get(node, 0.0) + paths.get(node, 0.0)
            scores[node] = scores.get(node, 0.0) + value * strength
            covered[node] = covered.get(node, 0.0) + term.weight
    phrase = _phrases(st, kept, scores)
    named = _path_query(st, query)
    if named is not None:
        scores[named] = scores.get(named, 0.0) + MATCH_PATH_EXACT * max(total_weight, 1.0)
        covered[named] = total_weight
    if not scores:
        return QueryMatch(kept, {}, phrase, named)
    for node, score in scores.items():
        share = covered.get(node, 0.0) / total_weight if total_weight else 1.0
        scores[node] = score * (COVERAGE_FLOOR + (1.0 - COVERAGE_FLOOR) * share)
    top = max(scores.values())
    return QueryMatch(
        kept, {node: QUERY_WEIGHT * score / top for node, score in scores.items()}, phrase, named
    )


def _phrases(st: Structure, kept: list[TermMatch], scores: dict[int, float]) -> dict[int, str]:
    """Add, per file, the bonus of its best name holding several of the query's words.

    TemporaryFile for "create a temporary file" is better evidence than a file
    defining "create" and another name holding "file": the words were meant together.
    A word counts once however many of its parts matched (its first term that did).
    """
    groups: dict[str, int] = {}
    value: dict[str, float] = {}
    for match in kept:
        bit = 1 << match.term.group
        worth = match.term.weight * match.idf
        for name in match.names:
            mask = groups.get(name, 0)
            if not mask & bit:
                groups[name] = mask | bit
                value[name] = value.get(name, 0.0) + worth
    bonus: dict[int, float] = {}
    best: dict[int, str] = {}
    for name in sorted(groups):
        if groups[name].bit_count() < 2:
            continue
        amount = PHRASE_BONUS * value[name]
        for node in st.definers[name]:
            if bonus.get(node, 0.0) < amount:
                bonus[node] = amount
                best[node] = name
    for node, amount in bonus.items():
        scores[node] = scores.get(node, 0.0) + amount
    return best


def _path_query(st: Structure, query: str) -> int | None:
    """The file a query names by its path (``urllib/parse.py``, ``./src/x.go``), if any."""
    wanted = query.strip().removeprefix("./")
    if "/" not in wanted and "." not in wanted:
        return None
    node = st.index.get(wanted)
    if node is not None:
        return node
    ends = [n for n, path in enumerate(st.paths) if path.endswith("/" + wanted)]
    return ends[0] if len(ends) == 1 else None
