"""Imports resolve to files of the inventory where the language says which file."""

from __future__ import annotations

import pytest

from ax_map.resolve import Resolver

FILES = {
    # Python: a src layout, a flat package, a namespace folder.
    "src/app/__init__.py": b"",
    "src/app/core.py": b"",
    "src/app/util/__init__.py": b"",
    "src/app/util/text.py": b"",
    "tools/script.py": b"",
    "json_helpers.py": b"",
    # JavaScript / TypeScript.
    "web/src/index.ts": b"",
    "web/src/lib/math.ts": b"",
    "web/src/lib/index.js": b"",
    "web/src/view.tsx": b"",
    # Go.
    "go.mod": b"module example.com/shop\n\ngo 1.22\n",
    "cart/cart.go": b"",
    "cart/cart_test.go": b"",
    "cart/price.go": b"",
    "main.go": b"",
    # Rust.
    "crate/src/lib.rs": b"",
    "crate/src/net.rs": b"",
    "crate/src/net/tcp.rs": b"",
    "crate/src/store/mod.rs": b"",
    # Java.
    "java/src/main/java/com/acme/Service.java": b"",
    "java/src/main/java/com/acme/util/Helper.java": b"",
    # C.
    "c/src/main.c": b"",
    "c/src/local.h": b"",
    "c/include/lib/buffer.h": b"",
    # Bash.
    "scripts/run.sh": b"",
    "scripts/lib/common.sh": b"",
}


@pytest.fixture
def resolver() -> Resolver:
    return Resolver(FILES, FILES.get)


@pytest.mark.parametrize(
    ("source", "language", "specifier", "expected"),
    [
        ("src/app/core.py", "python", "app.util.text", {"src/app/util/text.py"}),
        ("src/app/core.py", "python", "app.util:text", {"src/app/util/text.py"}),
        ("src/app/core.py", "python", "app.util:join", {"src/app/util/__init__.py"}),
        ("src/app/core.py", "python", "app.util.missing", {"src/app/util/__init__.py"}),
        ("src/app/core.py", "python", ".util:text", {"src/app/util/text.py"}),
        ("src/app/util/text.py", "python", "..:core", {"src/app/core.py"}),
        ("src/app/util/text.py", "python", "..", {"src/app/__init__.py"}),
        ("tools/script.py", "python", "json_helpers", {"json_helpers.py"}),
        ("tools/script.py", "python", "requests", set()),
        ("src/app/core.py", "python", "...:x", set()),
        ("web/src/index.ts", "typescript", "./lib/math", {"web/src/lib/math.ts"}),
        ("web/src/index.ts", "typescript", "./lib/math.js", {"web/src/lib/math.ts"}),
        ("web/src/index.ts", "typescript", "./lib", {"web/src/lib/index.js"}),
        ("web/src/lib/math.ts", "typescript", "../view", {"web/src/view.tsx"}),
        ("web/src/index.ts", "typescript", "react", set()),
        ("web/src/index.ts", "typescript", "../../../../outside", set()),
        ("main.go", "go", "example.com/shop/cart", {"cart/cart.go", "cart/price.go"}),
        ("main.go", "go", "fmt", set()),
        ("crate/src/lib.rs", "rust", "mod:net", {"crate/src/net.rs"}),
        ("crate/src/lib.rs", "rust", "mod:store", {"crate/src/store/mod.rs"}),
        ("crate/src/net.rs", "rust", "mod:tcp", {"crate/src/net/tcp.rs"}),
        (
            "java/src/main/java/com/acme/Service.java",
            "java",
            "com.acme.util.Helper",
            {"java/src/main/java/com/acme/util/Helper.java"},
        ),
        (
            "java/src/main/java/com/acme/Service.java",
            "java",
            "com.acme.util.Helper.assist",
            {"java/src/main/java/com/acme/util/Helper.java"},
        ),
        ("java/src/main/java/com/acme/Service.java", "java", "java.util.List", set()),
        ("c/src/main.c", "c", "local.h", {"c/src/local.h"}),
        ("c/src/main.c", "c", "lib/buffer.h", {"c/include/lib/buffer.h"}),
        ("c/src/main.c", "c", "../include/lib/buffer.h", {"c/include/lib/buffer.h"}),
        ("c/src/main.c", "c", "stdio.h", set()),
        ("scripts/run.sh", "bash", "./lib/common.sh", {"scripts/lib/common.sh"}),
        ("scripts/run.sh", "bash", "scripts/lib/common.sh", {"scripts/lib/common.sh"}),
        ("scripts/run.sh", "markdown", "whatever", set()),
    ],
)
def test_resolution(
    resolver: Resolver, source: str, language: str, specifier: str, expected: set[str]
) -> None:
    assert resolver.resolve(source, language, [specifier]) == expected


def test_an_import_of_itself_is_no_edge(resolver: Resolver) -> None:
    assert resolver.resolve("src/app/core.py", "python", ["app.core"]) == set()
