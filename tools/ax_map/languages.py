"""Which language a file is in, which of them ax-map extracts, and what a name may be.

A language is told by the file name alone (extension, or a few exact names), so the
inventory decides it without reading a byte. Only the languages of ``GRAMMARS`` are
read; every other file is listed with the skip ``no grammar`` and counted under its
language (``other`` when the name says nothing).
"""

from __future__ import annotations

import re

# The languages with a tree-sitter grammar wheel among ax's dependencies (and a
# first-tier scanner in ax_map.scan).
GRAMMARS = frozenset(
    {"python", "javascript", "typescript", "tsx", "go", "rust", "java", "c", "cpp", "bash"}
)

# The one rule for a captured name: ASCII identifier characters only, at most
# NAME_MAX_CHARS. Anything else (prose, markup, non-ASCII look-alikes) is dropped, so
# a repository cannot put words into a prompt through the map's symbols.
NAME_MAX_CHARS = 128
IDENTIFIER = re.compile(rf"[A-Za-z_$][A-Za-z0-9_$]{{0,{NAME_MAX_CHARS - 1}}}")
IDENTIFIER_BYTES = re.compile(IDENTIFIER.pattern.encode())
# The same without '$', for languages where '$' is no part of a name ($HOME in bash).
PLAIN_IDENTIFIER_BYTES = re.compile(IDENTIFIER.pattern.replace("$", "").encode())
# References shorter than this are loop counters and the like: never worth an edge.
REFERENCE_MIN_CHARS = 2

_BY_SUFFIX: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".hxx": "cpp",
    ".h++": "cpp",
    ".ipp": "cpp",
    ".sh": "bash",
    ".bash": "bash",
    # Languages without a grammar here: listed, counted by name, never read.
    ".md": "markdown",
    ".markdown": "markdown",
    ".rst": "restructuredtext",
    ".txt": "text",
    ".json": "json",
    ".jsonc": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".ini": "ini",
    ".cfg": "ini",
    ".xml": "xml",
    ".html": "html",
    ".htm": "html",
    ".css": "css",
    ".scss": "scss",
    ".less": "less",
    ".vue": "vue",
    ".svelte": "svelte",
    ".rb": "ruby",
    ".php": "php",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".swift": "swift",
    ".scala": "scala",
    ".cs": "csharp",
    ".fs": "fsharp",
    ".m": "objective-c",
    ".mm": "objective-cpp",
    ".lua": "lua",
    ".pl": "perl",
    ".pm": "perl",
    ".r": "r",
    ".jl": "julia",
    ".ex": "elixir",
    ".exs": "elixir",
    ".erl": "erlang",
    ".hs": "haskell",
    ".ml": "ocaml",
    ".clj": "clojure",
    ".dart": "dart",
    ".zig": "zig",
    ".nim": "nim",
    ".sql": "sql",
    ".proto": "protobuf",
    ".graphql": "graphql",
    ".tf": "terraform",
    ".zsh": "zsh",
    ".fish": "fish",
    ".ps1": "powershell",
    ".bat": "batch",
    ".cmake": "cmake",
    ".gradle": "gradle",
    ".tex": "latex",
    ".csv": "csv",
    ".ipynb": "jupyter",
}
_BY_NAME: dict[str, str] = {
    "makefile": "make",
    "gnumakefile": "make",
    "dockerfile": "dockerfile",
    "cmakelists.txt": "cmake",
    "justfile": "just",
    ".bashrc": "bash",
    ".bash_profile": "bash",
    ".profile": "bash",
}
# Files whose name says they are not text: listed with the skip ``binary``, never read.
BINARY_SUFFIXES = frozenset(
    {
        ".png", ".jpg", ".jpeg", ".gif", ".bmp", ".ico", ".webp", ".tif", ".tiff", ".psd",
        ".pdf", ".zip", ".gz", ".tgz", ".bz2", ".xz", ".zst", ".7z", ".rar", ".tar", ".jar",
        ".war", ".whl", ".egg", ".so", ".dylib", ".dll", ".exe", ".o", ".a", ".lib", ".obj",
        ".class", ".pyc", ".pyo", ".wasm", ".bin", ".dat", ".db", ".sqlite", ".sqlite3",
        ".woff", ".woff2", ".ttf", ".otf", ".eot", ".mp3", ".mp4", ".wav", ".ogg", ".flac",
        ".avi", ".mov", ".mkv", ".webm", ".npy", ".npz", ".pkl", ".pickle", ".parquet",
    }
)  # fmt: skip


def language_of(name: str) -> str | None:
    """The language of a file named ``name`` (its last path component), or None."""
    folded = name.casefold()
    known = _BY_NAME.get(folded)
    if known is not None:
        return known
    dot = folded.rfind(".")
    if dot <= 0:
        return None
    return _BY_SUFFIX.get(folded[dot:])


def binary_by_name(name: str) -> bool:
    dot = name.rfind(".")
    return dot > 0 and name[dot:].casefold() in BINARY_SUFFIXES


def minified_by_name(name: str) -> bool:
    """``app.min.js``, ``style-min.css``: bundlers' names for minified output."""
    stem = name.casefold().rsplit(".", 1)[0]
    return stem.endswith((".min", "-min"))
