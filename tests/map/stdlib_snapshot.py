"""A Snapshot of the CPython standard library, made by a throwaway regex extractor.

Tests and benchmarks of ranking and retrieval need a real repository's symbols and
edges before the real index exists in this branch. This extractor is deliberately
simple (line-anchored ``def``/``class``/assignment patterns, every identifier in
the text counted as a reference, ``import`` lines resolved to files); the real
index replaces it.
"""

from __future__ import annotations

import os
import re
import sysconfig
from bisect import bisect_right
from pathlib import Path

from ax_map.model import Coverage, FileEntry, Snapshot, Symbol

_DEFINITION = re.compile(r"^([ \t]*)(?:async[ \t]+)?(def|class)[ \t]+([A-Za-z_]\w*)", re.M)
_ASSIGNMENT = re.compile(r"^([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=)", re.M)
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w.]+(?:[ \t]*,[ \t]*[\w.]+)*)", re.M)
_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+\(?([\w \t,]+)", re.M)
SKIPPED_FOLDERS = frozenset({"site-packages", "__pycache__"})


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def python_files(root: Path) -> list[str]:
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_FOLDERS)
        for name in files:
            if name.endswith(".py"):
                found.append(os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/"))
    return sorted(found)


def _module_files(module: str, known: set[str]) -> list[str]:
    base = module.replace(".", "/")
    return [c for c in (f"{base}.py", f"{base}/__init__.py") if c in known]


def _imports(path: str, text: str, known: set[str]) -> set[str]:
    found: set[str] = set()
    for match in _IMPORT.finditer(text):
        for module in match.group(1).split(","):
            found.update(_module_files(module.strip(), known))
    package = path.split("/")[:-1]
    for match in _FROM.finditer(text):
        dots, module, names = match.groups()
        if dots:
            up = package[: len(package) - (len(dots) - 1)] if len(dots) > 1 else package
            base = ".".join([*up, module] if module else up)
        else:
            base = module
        if not base:
            continue
        found.update(_module_files(base, known))
        for name in names.replace("\t", " ").split(","):
            word = name.strip().split(" ")[0]
            if word:
                found.update(_module_files(f"{base}.{word}", known))
    found.discard(path)
    return found


def extract(
    root: Path, path: str, known: set[str]
) -> tuple[list[Symbol], frozenset[str], set[str]]:
    text = (root / path).read_bytes().decode("utf-8", "replace")
    starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line(offset: int) -> int:
        return bisect_right(starts, offset)

    symbols = []
    for match in _DEFINITION.finditer(text):
        indent, keyword, name = match.groups()
        kind = "class" if keyword == "class" else ("method" if indent else "function")
        symbols.append(Symbol(path, name, kind, line(match.start(3))))
    for match in _ASSIGNMENT.finditer(text):
        name = match.group(1)
        kind = "constant" if name.isupper() else "variable"
        symbols.append(Symbol(path, name, kind, line(match.start(1))))
    return symbols, frozenset(_IDENTIFIER.findall(text)), _imports(path, text, known)


def build_snapshot(root: Path, paths: list[str] | None = None) -> Snapshot:
    paths = python_files(root) if paths is None else paths
    known = set(paths)
    files, symbols, references, imports = [], [], {}, []
    for path in paths:
        info = (root / path).stat()
        files.append(FileEntry(path, info.st_size, info.st_mtime_ns, "python", "indexed"))
        found, used, imported = extract(root, path, known)
        symbols.extend(found)
        references[path] = used
        imports.extend((path, target) for target in sorted(imported))
    coverage = Coverage(total=len(files), indexed=len(files), languages={"python": len(files)})
    return Snapshot(str(root), files, symbols, references, imports, coverage, git=False)
