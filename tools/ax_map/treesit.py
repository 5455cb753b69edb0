"""The second tier: definitions, references and imports from a tree-sitter parse.

One grammar wheel per language (tree-sitter-python, ...), loaded from the installed
package: nothing is downloaded, ever. Definitions come from a query per language
whose capture names are the kinds (the most specific capture of a node wins: a
``def`` in a class body is a method, not a function). References are the
identifiers outside the comment and string nodes the parse found; imports are the
first tier's patterns, minus matches that start inside such a node. So both tiers
answer the same question, and the second answers it exactly.

tree_sitter is imported here only, and this module only inside the functions that
extract (``ax-map --help`` never loads a grammar).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from .languages import IDENTIFIER
from .scan import LANGUAGES, Extraction, OutsideSpans, identifiers, import_specifiers

if TYPE_CHECKING:
    import tree_sitter

# A parse still running after this is stopped; ordinary files of 1 MiB take ~0.2 s.
PARSE_TIMEOUT_S = 2.0
# The slices the parser reads the file in. They are bytes, not memoryview slices: the
# binding keeps reading a slice after the call returns, and a view freed by then crashes it.
_READ_CHUNK = 64 * 1024

# Which grammar wheel and which of its language functions each language uses.
_GRAMMAR = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "bash": ("tree_sitter_bash", "language"),
}

_JS_DEFINITIONS = """
(function_declaration name: (identifier) @function)
(generator_function_declaration name: (identifier) @function)
(class_declaration name: (_) @class)
(method_definition name: (property_identifier) @method)
(variable_declarator name: (identifier) @function value: [(arrow_function) (function_expression)])
(program (lexical_declaration (variable_declarator name: (identifier) @variable)))
(program (export_statement
  (lexical_declaration (variable_declarator name: (identifier) @variable))))
"""
_TS_DEFINITIONS = (
    _JS_DEFINITIONS
    + """
(abstract_class_declaration name: (type_identifier) @class)
(interface_declaration name: (type_identifier) @interface)
(type_alias_declaration name: (type_identifier) @type)
(enum_declaration name: (identifier) @enum)
(internal_module name: (identifier) @module)
(function_signature name: (identifier) @function)
(method_signature name: (property_identifier) @method)
(abstract_method_signature name: (property_identifier) @method)
"""
)
_C_DEFINITIONS = """
(function_declarator declarator: (identifier) @function)
(struct_specifier name: (type_identifier) @struct body: (_))
(union_specifier name: (type_identifier) @struct body: (_))
(enum_specifier name: (type_identifier) @enum body: (_))
(type_definition declarator: (type_identifier) @type)
(preproc_def name: (identifier) @macro)
(preproc_function_def name: (identifier) @macro)
"""
_JS_PROSE = "(comment) (string_fragment) (regex_pattern)"
_C_PROSE = "(comment) (string_content) (char_literal) (system_lib_string)"

# (definitions query, prose node types) per language.
_QUERIES: dict[str, tuple[str, str]] = {
    "python": (
        """
(class_definition name: (identifier) @class)
(function_definition name: (identifier) @function)
(module (expression_statement (assignment left: (identifier) @variable)))
""",
        "(comment) (string_content) (string_start)",
    ),
    "javascript": (_JS_DEFINITIONS, _JS_PROSE),
    "typescript": (_TS_DEFINITIONS, _JS_PROSE),
    "tsx": (_TS_DEFINITIONS, _JS_PROSE),
    "go": (
        """
(function_declaration name: (identifier) @function)
(method_declaration name: (field_identifier) @method)
(type_spec name: (type_identifier) @type)
(type_spec name: (type_identifier) @struct type: (struct_type))
(type_spec name: (type_identifier) @interface type: (interface_type))
(source_file (var_declaration (var_spec name: (identifier) @variable)))
(source_file (const_declaration (const_spec name: (identifier) @constant)))
""",
        "(comment) (interpreted_string_literal_content) (raw_string_literal_content)"
        " (rune_literal)",
    ),
    "rust": (
        """
(function_item name: (identifier) @function)
(impl_item body: (declaration_list (function_item name: (identifier) @method)))
(trait_item body: (declaration_list (function_item name: (identifier) @method)))
(function_signature_item name: (identifier) @method)
(struct_item name: (type_identifier) @struct)
(union_item name: (type_identifier) @struct)
(enum_item name: (type_identifier) @enum)
(trait_item name: (type_identifier) @interface)
(type_item name: (type_identifier) @type)
(mod_item name: (identifier) @module)
(macro_definition name: (identifier) @macro)
(const_item name: (identifier) @constant)
(static_item name: (identifier) @constant)
""",
        "(line_comment) (block_comment) (string_content) (char_literal)",
    ),
    "java": (
        """
(class_declaration name: (identifier) @class)
(record_declaration name: (identifier) @class)
(interface_declaration name: (identifier) @interface)
(annotation_type_declaration name: (identifier) @interface)
(enum_declaration name: (identifier) @enum)
(method_declaration name: (identifier) @method)
(constructor_declaration name: (identifier) @method)
""",
        "(line_comment) (block_comment) (string_fragment) (multiline_string_fragment)"
        " (character_literal)",
    ),
    "c": (_C_DEFINITIONS, _C_PROSE),
    "cpp": (
        _C_DEFINITIONS
        + """
(function_declarator declarator: (field_identifier) @method)
(function_declarator declarator: (qualified_identifier name: (identifier) @method))
(class_specifier name: (type_identifier) @class body: (_))
(namespace_definition name: (namespace_identifier) @module)
""",
        _C_PROSE + " (raw_string_content)",
    ),
    "bash": (
        """
(function_definition name: (word) @function)
(program (variable_assignment name: (variable_name) @variable))
""",
        "(comment) (raw_string) (string_content) (heredoc_content)",
    ),
}
# Where a function is a method when it is defined in a class body: (function, class).
_SCOPES = {"python": ("function_definition", "class_definition")}
# When one name node is captured under two kinds, the more specific one wins.
_SPECIFIC = ("method", "struct", "interface", "function", "class", "type")


@dataclass(frozen=True)
class _Grammar:
    parser: tree_sitter.Parser
    # Definitions (captured by kind) and prose (captured as "prose") in one query: one
    # walk of the tree instead of two (about a third less query time).
    query: tree_sitter.Query


@cache
def _grammar(language: str) -> _Grammar:
    import tree_sitter

    module_name, function = _GRAMMAR[language]
    module = importlib.import_module(module_name)
    grammar = tree_sitter.Language(getattr(module, function)())
    definitions, prose = _QUERIES[language]
    parser = tree_sitter.Parser(grammar)
    return _Grammar(parser, tree_sitter.Query(grammar, f"{definitions}\n[{prose}] @prose"))


class ParseFailed(Exception):
    """tree-sitter gave up on a file, or was stopped; ``str()`` says which."""


def parse(language: str, data: bytes) -> Extraction:
    """The second tier's extraction of ``data``, a file in ``language``.

    A parse usually takes time linear in the file's size, which the inventory capped;
    but error recovery on some inputs grows without bound (30 KB of ``/*/*/*`` costs
    tree-sitter-python gigabytes), so a parse is stopped after ``PARSE_TIMEOUT_S``
    (ParseFailed). Memory is the worker's to bound (ax_map.extract).
    """
    import time

    import tree_sitter

    grammar = _grammar(language)
    deadline = time.monotonic() + PARSE_TIMEOUT_S

    def read(offset: int, _point: tree_sitter.Point) -> bytes:
        return data[offset : offset + _READ_CHUNK]

    # Called as the parse goes on; True stops it (tree-sitter then raises ValueError).
    def too_long(_offset: int, _has_error: bool) -> bool:
        return time.monotonic() > deadline

    try:
        root = grammar.parser.parse(read, progress_callback=too_long).root_node
    except ValueError:
        raise ParseFailed(f"tree-sitter took longer than {PARSE_TIMEOUT_S:g}s") from None
    captures = tree_sitter.QueryCursor(grammar.query).captures(root)
    spans = sorted((node.start_byte, node.end_byte) for node in captures.pop("prose", []))
    code: list[bytes] = []
    starts: list[int] = []
    ends: list[int] = []
    position = 0
    for start, end in spans:
        if start < position:
            continue
        code.append(data[position:start])
        starts.append(start)
        ends.append(end)
        position = end
    code.append(data[position:])
    rules = LANGUAGES[language]
    references = identifiers(b" ".join(code), rules)
    imports = import_specifiers(language, rules, data, OutsideSpans(starts, ends))
    return Extraction(_definitions(language, captures), references, imports)


def _definitions(
    language: str, captures: dict[str, list[tree_sitter.Node]]
) -> tuple[tuple[str, str, int], ...]:
    found: dict[int, tuple[str, str, int]] = {}
    for kind in sorted(captures, key=lambda k: _SPECIFIC.index(k) if k in _SPECIFIC else 99):
        for node in captures[kind]:
            if node.start_byte in found:
                continue
            text = node.text
            name = text.decode("ascii", "replace") if text is not None else ""
            if not IDENTIFIER.fullmatch(name):
                continue
            scopes = _SCOPES.get(language)
            method = kind == "function" and scopes is not None and _in_class(node, scopes)
            found[node.start_byte] = (name, "method" if method else kind, node.start_point[0] + 1)
    return tuple(found[start] for start in sorted(found))


def _in_class(name: tree_sitter.Node, scopes: tuple[str, str]) -> bool:
    """Is the function whose name is ``name`` nearer a class than any other function?

    A ``def`` under an ``if`` or a ``try`` of a class body is a method all the same.
    """
    function, cls = scopes
    node = name.parent
    node = node.parent if node is not None else None
    while node is not None:
        if node.type == cls:
            return True
        if node.type == function:
            return False
        node = node.parent
    return False


@cache
def available(language: str) -> bool:
    """Is ``language``'s grammar wheel installed and loadable?"""
    try:
        _grammar(language)
    except (ImportError, OSError, ValueError):
        return False
    return True
