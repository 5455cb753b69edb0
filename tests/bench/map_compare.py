"""ax-map's first tier, this tree against another revision, over real files: identical?

    .venv/bin/python tests/bench/map_compare.py [--rev main] [ROOT ...]

For every file under the ROOTs (default: this Python's standard library, without
site-packages) that ax-map would read (a language with a grammar, at most
``MAX_FILE_BYTES``, neither binary nor minified by its content), it runs the first
tier (``ax_map.scan.scan``) of this tree and of ``--rev``'s tools/ax_map (taken with
``git archive`` into a scratch folder and imported under another name) and compares
the definitions (name, kind, line, in order), the references and the import
specifiers (in order). With ``--fuzz N`` it also compares N made-up files per
language: lines drawn from the files read, in any language, with what trips a
tokenizer put in at random (quotes, comment markers, digits, ``$``, long names,
non-ASCII). It prints the counts per language and every file that differs, and exits
1 when one does. A speed-up of the first tier must leave this at zero differences.
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import random
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SKIPPED_FOLDERS = frozenset({"site-packages", "__pycache__", ".git", ".venv"})


def files_under(root: Path) -> Iterator[Path]:
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_FOLDERS)
        for name in sorted(names):
            yield Path(folder) / name


def import_revision(rev: str, scratch: Path) -> Any:
    """``rev``'s ax_map.scan, imported as ``ax_map_<rev>.scan``."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", rev, "tools/ax_map"],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(scratch, filter="data")
    name = "ax_map_base"
    (scratch / "tools" / "ax_map").rename(scratch / name)
    sys.path.insert(0, str(scratch))
    return importlib.import_module(f"{name}.scan")


Scan = Callable[[str, bytes], Any]
# Put in at random into made-up files: what a tokenizer trips on.
TROUBLE = [
    *(b'"', b"'", b"`", b"#", b"//", b"/*", b"*/", b'"' * 3, b"'" * 3, b"\\", b"\n", b"\n\n"),
    *(b"$", b"0", b"7x", b"0x1F", b"1e9", b"_9", b"a" * 130, b"9" + b"b" * 140, "café".encode()),
    *(b"(", b")", b"{", b"}", b"::", b"~", b" ", b"\t", b"=", b";", b"<", b">", b"@", b'r#"'),
]


def compare(where: str, language: str, data: bytes, new: Scan, old: Scan) -> list[str]:
    mine, theirs = new(language, data), old(language, data)
    return [
        f"{where}: {what} differ"
        for what in ("definitions", "references", "imports")
        if getattr(mine, what) != getattr(theirs, what)
    ]


def made_up(rng: random.Random, lines: list[bytes]) -> bytes:
    picked = [bytearray(rng.choice(lines)) for _ in range(rng.randint(1, 120))]
    for line in rng.sample(picked, k=len(picked) // 3):
        at = rng.randrange(len(line) + 1)
        line[at:at] = rng.choice(TROUBLE)
    return b"".join(picked)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default="main", help="the revision to compare with")
    parser.add_argument("--fuzz", type=int, default=0, metavar="N", help="N made-up files each")
    parser.add_argument("roots", nargs="*", type=Path)
    args = parser.parse_args()
    roots = args.roots or [Path(sysconfig.get_paths()["stdlib"])]

    from ax_map.extract import sniff
    from ax_map.inventory import MAX_FILE_BYTES
    from ax_map.languages import GRAMMARS, language_of
    from ax_map.scan import scan

    with tempfile.TemporaryDirectory(prefix="ax-map-compare-") as scratch:
        base = import_revision(args.rev, Path(scratch))
        counts: Counter[str] = Counter()
        facts: Counter[str] = Counter()
        differ: list[str] = []
        lines: list[bytes] = []
        for root in roots:
            for path in files_under(root):
                language = language_of(path.name)
                if language not in GRAMMARS or path.is_symlink() or not path.is_file():
                    continue
                try:
                    data = path.read_bytes()
                except OSError:
                    continue
                if len(data) > MAX_FILE_BYTES or sniff(data) is not None:
                    continue
                assert language is not None
                found = scan(language, data)
                counts[language] += 1
                facts["definitions"] += len(found.definitions)
                facts["references"] += len(found.references)
                facts["imports"] += len(found.imports)
                differ += compare(str(path), language, data, scan, base.scan)
                if args.fuzz:
                    lines += data.splitlines(keepends=True)[:200]
        rng = random.Random(18)
        for number in range(args.fuzz if lines else 0):
            for language in sorted(GRAMMARS):
                where = f"made-up file {number} in {language}"
                counts[f"{language} (made up)"] += 1
                differ += compare(where, language, made_up(rng, lines), scan, base.scan)
    print(f"files compared: {sum(counts.values()):,} ({dict(sorted(counts.items()))})")
    print(f"facts found in the real files: {dict(facts)}")
    print(f"files that differ from {args.rev}: {len(differ)}")
    for line in differ[:50]:
        print(f"  {line}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
