"""Import specifiers resolved to files of the inventory, where the language allows.

- Python: ``import a.b`` and ``from a import b`` against the modules the inventory
  holds, each module named from its package root (the first folder up without an
  ``__init__.py``), from the workspace root and from ``src/``; relative imports from
  the importing file's folder. A module that is not there resolves to its nearest
  package that is (``import a.b.c`` without ``c`` is an import of ``a.b``).
- JavaScript and TypeScript: relative specifiers (``./x``, ``../y``) with the
  extensions and ``index`` files Node and TypeScript try; ``./x.js`` also finds ``x.ts``.
- Go: an import path under a module some ``go.mod`` of the inventory declares, to
  the package folder's non-test files.
- Rust: ``mod name;`` to ``name.rs`` or ``name/mod.rs`` beside (or under) the file.
- Java: ``import a.b.C;`` to a file ending in ``a/b/C.java``.
- C and C++: ``#include "x.h"`` beside the including file, else the one file of
  the inventory ending in ``/x.h`` nearest to it.
- Bash: ``source x.sh`` beside the file or from the workspace root.

Anything else (packages from a registry, system headers, computed paths) stays
unresolved: the map draws no edge it cannot stand behind.
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping

_PY_SUFFIXES = (".py", ".pyi")
_JS_EXTENSIONS = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
_JS_RUNTIME = {".js": (".ts", ".tsx"), ".jsx": (".tsx",), ".mjs": (".mts",), ".cjs": (".cts",)}
_GO_MODULE = re.compile(rb"^module[ \t]+\"?([^\s\"]+)\"?", re.M)
GO_MOD_MAX_BYTES = 64 * 1024


def _common(a: str, b: str) -> int:
    return len(posixpath.commonprefix([a, b]))


def _nearest(source: str, candidates: Iterable[str]) -> str:
    """The candidate sharing the longest leading path with ``source`` (then the shortest)."""
    return min(candidates, key=lambda path: (-_common(source, path), len(path), path))


class Resolver:
    def __init__(self, paths: Iterable[str], read: Callable[[str], bytes | None]) -> None:
        self.paths = set(paths)
        self._modules: dict[str, list[str]] = defaultdict(list)
        self._by_name: dict[str, list[str]] = defaultdict(list)
        self._folders: dict[str, list[str]] = defaultdict(list)
        self._go_modules: list[tuple[str, str]] = []
        packages = {posixpath.dirname(p) for p in self.paths if p.endswith("/__init__.py")}
        for path in sorted(self.paths):
            folder, name = posixpath.split(path)
            self._by_name[name].append(path)
            self._folders[folder].append(path)
            if path.endswith(_PY_SUFFIXES):
                for module in _module_names(path, packages):
                    self._modules[module].append(path)
            elif name == "go.mod":
                data = read(path)
                found = _GO_MODULE.search(data or b"")
                if found:
                    self._go_modules.append((found.group(1).decode("utf-8", "replace"), folder))
        self._go_modules.sort(key=lambda item: -len(item[0]))

    def resolve(self, source: str, language: str, specifiers: Iterable[str]) -> set[str]:
        method = getattr(self, f"_{language}", None)
        if method is None:
            return set()
        targets: set[str] = set()
        for specifier in specifiers:
            targets.update(method(source, specifier))
        targets.discard(source)
        return targets

    def _first(self, candidates: Iterable[str]) -> list[str]:
        for candidate in candidates:
            if candidate in self.paths:
                return [candidate]
        return []

    # Python

    def _python(self, source: str, specifier: str) -> list[str]:
        module, _, name = specifier.partition(":")
        if module.startswith("."):
            return self._python_relative(source, module, name)
        if name:
            found = self._python_module(source, f"{module}.{name}", exact=True)
            if found:
                return found
        return self._python_module(source, module, exact=False)

    def _python_module(self, source: str, module: str, *, exact: bool) -> list[str]:
        parts = module.split(".")
        for end in range(len(parts), 0 if not exact else len(parts) - 1, -1):
            candidates = self._modules.get(".".join(parts[:end]))
            if candidates:
                return [_nearest(source, candidates)]
        return []

    def _python_relative(self, source: str, module: str, name: str) -> list[str]:
        dots = len(module) - len(module.lstrip("."))
        base = posixpath.dirname(source)
        for _ in range(dots - 1):
            if not base:
                return []
            base = posixpath.dirname(base)
        rest = [part for part in module[dots:].split(".") if part]
        if name:
            found = self._python_file(posixpath.join(base, *rest, name))
            if found:
                return found
        return (
            self._python_file(posixpath.join(base, *rest))
            if rest
            else self._first([posixpath.join(base, "__init__.py")])
        )

    def _python_file(self, stem: str) -> list[str]:
        return self._first(
            [stem + suffix for suffix in _PY_SUFFIXES]
            + [posixpath.join(stem, "__init__" + suffix) for suffix in _PY_SUFFIXES]
        )

    # JavaScript, TypeScript

    def _javascript(self, source: str, specifier: str) -> list[str]:
        if not specifier.startswith(("./", "../")) and specifier not in (".", ".."):
            return []
        target = posixpath.normpath(posixpath.join(posixpath.dirname(source), specifier))
        if target == ".." or target.startswith("../"):
            return []
        candidates = [target]
        stem, extension = posixpath.splitext(target)
        candidates += [stem + other for other in _JS_RUNTIME.get(extension, ())]
        candidates += [target + extension for extension in _JS_EXTENSIONS]
        candidates += [posixpath.join(target, "index" + extension) for extension in _JS_EXTENSIONS]
        return self._first(candidate.removeprefix("./") for candidate in candidates)

    _typescript = _javascript
    _tsx = _javascript

    # Go

    def _go(self, source: str, specifier: str) -> list[str]:
        for module, folder in self._go_modules:
            if specifier == module or specifier.startswith(module + "/"):
                rest = specifier[len(module) :].lstrip("/")
                package = posixpath.join(folder, rest) if rest else folder
                return [
                    path
                    for path in self._folders.get(package.strip("/"), [])
                    if path.endswith(".go") and not path.endswith("_test.go")
                ]
        return []

    # Rust

    def _rust(self, source: str, specifier: str) -> list[str]:
        name = specifier.removeprefix("mod:")
        folder, file = posixpath.split(source)
        if file not in ("mod.rs", "lib.rs", "main.rs"):
            folder = posixpath.join(folder, file.removesuffix(".rs"))
        return self._first(
            [posixpath.join(folder, f"{name}.rs"), posixpath.join(folder, name, "mod.rs")]
        )

    # Java

    def _java(self, source: str, specifier: str) -> list[str]:
        parts = specifier.split(".")
        # import static a.b.C.member: the class is one step up.
        for end in (len(parts), len(parts) - 1):
            if end < 1:
                break
            tail = "/".join(parts[:end]) + ".java"
            candidates = [
                path
                for path in self._by_name.get(parts[end - 1] + ".java", [])
                if path == tail or path.endswith("/" + tail)
            ]
            if candidates:
                return [_nearest(source, candidates)]
        return []

    # C, C++

    def _c(self, source: str, specifier: str) -> list[str]:
        beside = posixpath.normpath(posixpath.join(posixpath.dirname(source), specifier))
        if beside in self.paths:
            return [beside]
        clean = posixpath.normpath(specifier)
        while clean.startswith("../"):
            clean = clean[3:]
        candidates = [
            path
            for path in self._by_name.get(posixpath.basename(clean), [])
            if path == clean or path.endswith("/" + clean)
        ]
        return [_nearest(source, candidates)] if candidates else []

    _cpp = _c

    # Bash

    def _bash(self, source: str, specifier: str) -> list[str]:
        beside = posixpath.normpath(posixpath.join(posixpath.dirname(source), specifier))
        return self._first([beside, posixpath.normpath(specifier)])


def _module_names(path: str, packages: set[str]) -> set[str]:
    """The dotted names ``path`` is importable as (see the module docstring)."""
    stem = path.rsplit(".", 1)[0]
    if stem.endswith("/__init__") or stem == "__init__":
        stem = stem[: -len("__init__")].rstrip("/")
    root = posixpath.dirname(path)
    while root in packages and root:
        root = posixpath.dirname(root)
    names = set()
    for base in {root, "", "src"}:
        if base and not (stem == base or stem.startswith(base + "/")):
            continue
        relative = stem[len(base) :].lstrip("/") if base else stem
        if relative:
            names.add(relative.replace("/", "."))
    return names


def resolve_all(
    paths: Iterable[str],
    specifiers: Mapping[str, tuple[str, tuple[str, ...]]],
    read: Callable[[str], bytes | None],
) -> list[tuple[str, str]]:
    """Every (importing file, imported file) edge, sorted."""
    resolver = Resolver(paths, read)
    edges = set()
    for source, (language, specs) in specifiers.items():
        for target in resolver.resolve(source, language, specs):
            edges.add((source, target))
    return sorted(edges)
