"""ax-map's first tier, this tree against another revision, over real files: identical?

    .venv/bin/python tests/bench/map_compare.py [--rev main] [ROOT ...]

For every file under the ROOTs (default: this Python's standard library, without
site-packages) that ax-map would read (a language with a grammar, at most
``MAX_FILE_BYTES``, neither binary nor minified by its content), it runs the first
tier (``ax_map.scan.scan``) of this tree and of ``--rev``'s tools/ax_map (taken with
``git archive`` into a scratch folder and imported under another name) and compares
the definitions (name, kind, line, in order), the references and the import
specifiers (in order). It prints the counts per language and every file that
differs, and exits 1 when one does. A speed-up of the first tier must leave this at
zero differences.
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SKIPPED_FOLDERS = frozenset({"site-packages", "__pycache__", ".git", ".venv"})


def files_under(root: Path) -> Iterator[Path]:
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_FOLDERS)
        for name in sorted(names):
            yield Path(folder) / name


def import_revision(rev: str, scratch: Path) -> object:
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default="main", help="the revision to compare with")
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
                new = scan(language, data)
                old = base.scan(language, data)  # type: ignore[attr-defined]
                counts[language] += 1
                facts["definitions"] += len(new.definitions)
                facts["references"] += len(new.references)
                facts["imports"] += len(new.imports)
                for what in ("definitions", "references", "imports"):
                    if getattr(new, what) != getattr(old, what):
                        differ.append(f"{path}: {what} differ")
    print(f"files compared: {sum(counts.values()):,} ({dict(sorted(counts.items()))})")
    print(f"facts found: {dict(facts)}")
    print(f"files that differ from {args.rev}: {len(differ)}")
    for line in differ[:50]:
        print(f"  {line}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
