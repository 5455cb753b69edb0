"""ax-map's figures beside Aider's method, measured in the same run.

    .venv/bin/python tests/bench/map.py [--quick] [--pairs N]

On (a) a git repository made from a copy of this Python's standard library
(tests/map/stdlib_repo.py) and (b) a generated git repository of 20,000 files
(Python, JavaScript, Go and Markdown; 5,000 with ``--quick``), it prints:

- a cold build (``ax_map.build_index``, run in a child process): when the structure
  of every file is there (the inventory plus the first tier's definitions), when the
  first tier is done (its references and imports too) and when the build is
  complete (both tiers, imports resolved, the index written), each as files indexed
  per second of wall time; the child's peak RSS and its workers';
- each cold build ``--pairs`` times (3 by default), each followed by Aider's method on the
  same files: the ratios are taken pair by pair, and their median is held to the goal;
- Aider's method on the same files, in another child process: one process parsing
  every file with tree-sitter and running the grammar's ``tags.scm`` query (the one
  the installed grammar wheel ships; Aider's own python-tags.scm is the same
  patterns under other capture names), turning each match into a tag as Aider's
  ``get_tags_raw`` does; files per second, peak RSS, and the ratios;
- a warm build with nothing changed, through the library and through the installed
  ``ax-map build`` CLI, on a generated 2,000-file repository and on (b);
- a re-rank for new queries on the built index (``ax_map.views.map_view``);
- recall@5 of ``ax_map.retrieve.retrieve`` over the labelled stdlib queries
  (tests/map/stdlib_queries*.txt) on the real index of (a).

Each goal of issue 18 is printed beside its figure, met or NOT MET; the script
exits 1 when one is not met. The machine's load average is printed first and last:
the figures are wall time, and other work on the machine slows them.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from bisect import bisect_left
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# This file is named map.py, and tests/map is a namespace package (no __init__.py), which
# any module named map on the path shadows: so tests/, not this folder, is on the path.
sys.path[:] = [str(HERE.parent), *(p for p in sys.path if Path(p or ".").resolve() != HERE)]

from map.stdlib_repo import GIT_IDENTITY, copy_stdlib_repo, read_queries  # noqa: E402
from map.words import WORDS  # noqa: E402

GENERATED_FILES = 20_000
GENERATED_FILES_QUICK = 5_000
WARM_SMALL_FILES = 2_000
# Long enough that every cold build here completes both tiers.
COLD_BUDGET_S = 600.0
COLD_PAIRS = 3
WARM_RUNS = 5
GOAL_FILES_PER_S = 1_000.0
GOAL_AIDER_RATIO = 5.0
GOAL_WARM_SMALL_S = 0.2
GOAL_WARM_LARGE_S = 1.0
GOAL_RERANK_S = 0.1
GOAL_RECALL = 0.9
RECALL_AT = 5
# The grammar wheels whose tags.scm Aider's method runs, by ax-map's language name.
TAGS_WHEELS = {
    "python": "tree_sitter_python",
    "javascript": "tree_sitter_javascript",
    "go": "tree_sitter_go",
}
NEW_QUERIES = [
    "parse a url into its parts",
    "TemporaryDirectory",
    "read a zip archive",
    "json decoder",
    "thread pool executor",
    "http cookie jar",
    "format a traceback",
    "gzip compress",
    "sqlite3 connection",
    "walk a directory tree",
]
GENERATED_QUERIES = [
    "parse record stream",
    "PaymentGateway",
    "session token",
    "retry failed job",
    "config loader",
    "validate schema",
    "QueueWorker",
    "socket connection",
    "export ledger report",
    "vault key rotation",
]
VERBS = ["build", "check", "close", "fetch", "find", "load", "make", "merge", "open", "parse"]

missed: list[str] = []


def goal(met: bool, text: str) -> str:
    if not met:
        missed.append(text)
    return f"[goal {text}: {'met' if met else 'NOT MET'}]"


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} CPUs"


def millis(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *GIT_IDENTITY, "-C", str(repo), *args], check=True, capture_output=True)


# ---------------------------------------------------------------- the generated repository


def _names(rng: random.Random) -> list[str]:
    """A class name, then four to eight function names, made of the vocabulary."""
    a, b = rng.choice(WORDS), rng.choice(WORDS)
    functions = [
        f"{rng.choice(VERBS)}_{rng.choice(WORDS)}_{rng.choice(WORDS)}"
        for _ in range(rng.randint(4, 8))
    ]
    return [f"{a.title()}{b.title()}", *functions]


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _python(rng: random.Random, names: list[str], imports: list[tuple[str, str]]) -> str:
    lines = ['"""A generated module."""', ""]
    lines += [f"from {module} import {name}" for module, name in imports]
    used = [name for _, name in imports] or [names[0]]
    lines += ["", f"LIMIT = {rng.randint(1, 999)}", "", f"class {names[0]}:"]
    lines += [f'    """Holds a {names[0]}."""', ""]
    for method in rng.sample(VERBS, 4):
        lines += [
            f"    def {method}(self, value):",
            "        # call a neighbour, then keep the result",
            f"        result = {rng.choice(used)}(value)",
            f"        self.last_{method} = result",
            "        return result",
            "",
        ]
    for index, name in enumerate(names[1:]):
        lines += [
            f"def {name}(items, limit=LIMIT):",
            f'    """{name.replace("_", " ")}: what it says."""',
            "    total = 0",
            "    for item in items[:limit]:",
            f"        total += len(str(item)) + {index}",
            f"    return {names[0]}().{rng.choice(VERBS)}(total)",
            "",
        ]
    return "\n".join(lines)


def _javascript(rng: random.Random, names: list[str], imports: list[tuple[str, str]]) -> str:
    lines = [f"import {{ {name} }} from '{path}';" for path, name in imports]
    used = [name for _, name in imports] or [names[0]]
    lines += ["", f"export class {names[0]} {{", "  constructor(options) {"]
    lines += ["    this.options = options;", "  }", ""]
    for method in rng.sample(VERBS, 3):
        lines += [f"  {method}(value) {{", f"    return new {rng.choice(used)}(value);", "  }"]
    lines += ["}", ""]
    for name in names[1:]:
        lines += [
            f"export function {_camel(name)}(items, limit = 10) {{",
            "  // count what the items hold",
            "  let total = 0;",
            "  for (const item of items.slice(0, limit)) total += String(item).length;",
            f"  return new {names[0]}({{ total }});",
            "}",
            "",
        ]
    return "\n".join(lines)


def _go(package: str, names: list[str], imports: list[str]) -> str:
    lines = [f"package {package}", "", "import ("]
    lines += [f'\t"example.com/gen/{path}"' for path in imports]
    lines += ['\t"fmt"', ")", ""]
    lines += [f"type {names[0]} struct {{", "\tName  string", "\tCount int", "}", ""]
    for name in names[1:]:
        lines += [
            f"func {_camel(name)[0].upper()}{_camel(name)[1:]}(items []string) int {{",
            "\t// count what the items hold",
            "\ttotal := 0",
            "\tfor _, item := range items {",
            "\t\ttotal += len(item)",
            "\t}",
            f'\tfmt.Println("{name}", total)',
            "\treturn total",
            "}",
            "",
        ]
    lines += [f"var _ = {path}.Ready" for path in imports]
    return "\n".join(lines) + "\n"


def generate(root: Path, files: int, seed: int = 18) -> None:
    """``root``: a committed git repository of ``files`` files in folders of 50.

    Per folder of 50: 30 Python modules, 10 JavaScript, 8 Go, 2 Markdown. Each code
    file defines a class and four to eight functions and imports three earlier files,
    most of them in a few core folders (a power law, as real repositories have).
    """
    rng = random.Random(seed)
    root.mkdir(parents=True)
    (root / "go.mod").write_text("module example.com/gen\n\ngo 1.22\n")
    defined: list[list[str]] = []
    cumulative = list(itertools.accumulate(1.0 / (1 + i) ** 1.1 for i in range(files - 1)))
    # go.mod is one of the files: ``files`` in all, none past the inventory's cap.
    for index in range(files - 1):
        folder, slot = divmod(index, 50)
        package = f"pkg{folder:03}"
        names = _names(rng)
        defined.append(names)
        reach = cumulative[max(index - 1, 0)]
        earlier = sorted({bisect_left(cumulative, rng.random() * reach) for _ in range(3)})
        earlier = [i for i in earlier if i < index]
        target = root / package
        target.mkdir(exist_ok=True)
        if slot < 30:
            imports = [(f"pkg{i // 50:03}.mod{i % 50:03}", defined[i][0]) for i in earlier]
            text = _python(
                rng,
                names,
                [(m, n) for (m, n), i in zip(imports, earlier, strict=True) if i % 50 < 30],
            )
            (target / f"mod{slot:03}.py").write_text(text)
        elif slot < 40:
            imports = [
                (f"../pkg{i // 50:03}/web{i % 50:03}.js", defined[i][0])
                for i in earlier
                if 30 <= i % 50 < 40
            ]
            (target / f"web{slot:03}.js").write_text(_javascript(rng, names, imports))
        elif slot < 48:
            others = sorted({f"pkg{i // 50:03}" for i in earlier if i // 50 != folder})
            (target / f"svc{slot:03}.go").write_text(_go(package, names, others))
        else:
            (target / f"NOTES{slot:03}.md").write_text(f"# {package}\n\nNotes on {package}.\n")
    # Dated a minute back: past the window in which a build reads a file again in case a
    # same-tick edit hid in its mtime, as the files of a checkout are.
    past = time.time() - 60
    for path in root.rglob("*"):
        if path.is_file():
            os.utime(path, (past, past))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    # 20,000 loose objects start `git gc --auto` after the commit, detached: it would
    # repack them on both cores during the cold build measured next (not during
    # Aider's, which runs later). Run in the foreground, it ends before the commit does;
    # the repository is the same.
    git(root, "-c", "gc.autoDetach=false", "commit", "-q", "-m", "generated")


# ------------------------------------------------------------------------------ children


def child(argv: list[str]) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), *argv]


def run_child(argv: list[str]) -> dict[str, Any]:
    done = subprocess.run(child(argv), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv[:1])} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def peak_mib() -> tuple[float, float]:
    """This process's peak RSS, and its largest waited-for child's, in MiB.

    Our own is VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec, so a child
    would report the bench's own peak when that was higher.
    """
    own = 0.0
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            own = int(line.split()[1]) / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return own, children


def cold_build_child(state: str, workspace: str) -> None:
    from ax_map import build_index, load_snapshot
    from libcommon.paths import StateLayout

    layout = StateLayout(root=Path(state), workspace=Path(workspace))
    start = time.monotonic()
    # When each phase's last file was done: "scan" (the first tier's structure) and
    # "references" (the first tier's references).
    ended: dict[str, float] = {}

    def progress(phase: str, done: int, total: int) -> None:
        if done == total and phase not in ended:
            ended[phase] = time.monotonic() - start

    result = build_index(layout, budget_s=COLD_BUDGET_S, progress=progress)
    total = time.monotonic() - start
    snap = load_snapshot(layout)
    tagged = sorted(
        f"{f.language}\t{f.path}"
        for f in snap.files
        if f.status == "indexed" and f.language in TAGS_WHEELS
    )
    own, workers = peak_mib()
    print(
        json.dumps(
            {
                "files": result.coverage.total,
                "indexed": result.coverage.indexed,
                "partial": result.coverage.partial,
                "parsed": result.parsed,
                "firstTierOnly": result.first_tier_only,
                "structureS": ended.get("scan", total),
                "referencesS": ended.get("references"),
                "totalS": total,
                "timingsMs": result.timings_ms,
                "rssMiB": own,
                "workerRssMiB": workers,
                "tagged": tagged,
                "mib": sum(f.size for f in snap.files if f.status == "indexed") / 2**20,
            }
        )
    )


def aider_child(workspace: str, listing: str) -> None:
    """Aider's method (aider/repomap.py, get_tags_raw): one process, every file parsed with
    tree-sitter, the grammar's tags query run over the tree, each match a tag."""
    import importlib

    import tree_sitter

    jobs = [line.split("\t", 1) for line in Path(listing).read_text().splitlines()]
    grammars = {}
    for language, wheel in TAGS_WHEELS.items():
        module = importlib.import_module(wheel)
        lang = tree_sitter.Language(module.language())
        grammars[language] = (tree_sitter.Parser(lang), tree_sitter.Query(lang, module.TAGS_QUERY))
    start = time.monotonic()
    tags = 0
    for language, path in jobs:
        parser, query = grammars[language]
        code = (Path(workspace) / path).read_text(encoding="utf-8", errors="replace")
        tree = parser.parse(code.encode("utf-8"))
        for _pattern, captures in tree_sitter.QueryCursor(query).matches(tree.root_node):
            kinds = [k for k in captures if k.startswith(("definition.", "reference."))]
            for node in captures.get("name", []):
                text = node.text.decode("utf-8") if node.text is not None else ""
                tags += bool((path, text, kinds[0] if kinds else "", node.start_point[0]))
    elapsed = time.monotonic() - start
    own, _ = peak_mib()
    print(json.dumps({"files": len(jobs), "seconds": elapsed, "tags": tags, "rssMiB": own}))


# ------------------------------------------------------------------------------ the parent


def ax_map_script() -> str:
    beside = Path(sys.executable).parent / "ax-map"
    if not beside.exists():
        sys.exit(f"ax-map is not installed next to {sys.executable}")
    return str(beside)


def cold(label: str, state: Path, workspace: Path, pairs: int) -> None:
    """``pairs`` cold builds, each followed by Aider's method over the same files: each
    pair's ratio is measured side by side, and the median is held to the goal (one pair
    on a shared machine can be lucky or unlucky either way)."""
    runs: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for _ in range(pairs):
        shutil.rmtree(state, ignore_errors=True)
        built = run_child(["--child-build", str(state), str(workspace)])
        listing = state / "aider-files.txt"
        listing.write_text("\n".join(built["tagged"]) + "\n")
        runs.append((built, run_child(["--child-aider", str(workspace), str(listing)])))
    built, aider = runs[-1]
    indexed = int(built["indexed"])

    def median(values: list[float]) -> float:
        return statistics.median(values)

    def rates(key: str) -> list[float] | None:
        if any(b[key] is None for b, _ in runs):
            return None
        return [indexed / float(b[key]) for b, _ in runs]

    aider_rates = [int(a["files"]) / float(a["seconds"]) for _, a in runs]
    structure, references, total = rates("structureS"), rates("referencesS"), rates("totalS")
    assert structure is not None and total is not None
    print(
        f"{label}: {built['files']:,} files, {indexed:,} indexed, {float(built['mib']):.1f} MiB "
        f"({built['parsed']:,} parsed by tree-sitter, {built['firstTierOnly']:,} first tier only"
        f"{', PARTIAL' if built['partial'] else ''}); {pairs} cold builds, each beside "
        "Aider's method, medians:"
    )

    def seconds(key: str) -> str:
        return ", ".join(f"{float(b[key]):.2f}" for b, _ in runs) + " s"

    print(
        f"  cold build, structure complete (inventory + first tier's definitions): "
        f"{indexed / median(structure):.2f} s = {median(structure):,.0f} files/s "
        f"({seconds('structureS')})  "
        f"{goal(median(structure) >= GOAL_FILES_PER_S, '>= 1,000 files/s')}"
    )
    if references is not None:
        print(
            f"  cold build, first tier complete (its references and imports too): "
            f"{median(references):,.0f} files/s ({seconds('referencesS')})"
        )
    print(
        f"  cold build, complete (both tiers, imports, written): {median(total):,.0f} files/s "
        f"({seconds('totalS')}; phases of the last, ms: {built['timingsMs']})"
    )
    print(
        f"  Aider's method, same runs: {aider['files']:,} files (the indexed Python, JavaScript "
        f"and Go), {median(aider_rates):,.0f} files/s ("
        + ", ".join(f"{float(a['seconds']):.2f}" for _, a in runs)
        + f" s), {aider['tags']:,} tags, peak RSS {float(aider['rssMiB']):.0f} MiB"
    )

    def ratios(ours: list[float]) -> list[float]:
        return [mine / theirs for mine, theirs in zip(ours, aider_rates, strict=True)]

    each = ratios(structure)
    first_tier = "" if references is None else f"; first tier {median(ratios(references)):.1f}x"
    print(
        "  ratio to Aider's method, pair by pair: structure "
        + ", ".join(f"{r:.1f}x" for r in each)
        + f", median {median(each):.1f}x {goal(median(each) >= GOAL_AIDER_RATIO, '>= 5x Aider')}"
        f"{first_tier}; complete {median(ratios(total)):.1f}x"
    )
    print(
        f"  peak RSS of the cold builds: {max(float(b['rssMiB']) for b, _ in runs):.0f} MiB in "
        f"the build's process, {max(float(b['workerRssMiB']) for b, _ in runs):.0f} MiB in its "
        "largest worker"
    )


def warm(label: str, state: Path, workspace: Path, limit: float) -> None:
    from ax_map import build_index
    from libcommon.paths import StateLayout

    layout = StateLayout(root=state, workspace=workspace)
    library = []
    for _ in range(WARM_RUNS):
        start = time.perf_counter()
        result = build_index(layout)
        library.append(time.perf_counter() - start)
        if result.written:
            sys.exit(f"{label}: a warm build with nothing changed wrote the index")
    cli = []
    env = {**os.environ, "AX_STATE_DIR": str(state)}
    for _ in range(WARM_RUNS):
        start = time.perf_counter()
        done = subprocess.run(
            [ax_map_script(), "build", "-C", str(workspace)], env=env, capture_output=True
        )
        cli.append(time.perf_counter() - start)
        if done.returncode != 0 or json.loads(done.stdout)["written"]:
            sys.exit(f"{label}: ax-map build failed or wrote: {done.stderr.decode()}")
    started = []
    for _ in range(WARM_RUNS):
        start = time.perf_counter()
        subprocess.run([ax_map_script(), "--help"], capture_output=True, check=True)
        started.append(time.perf_counter() - start)
    lib_s, cli_s = statistics.median(library), statistics.median(cli)
    text = f"< {millis(limit)}" if limit < 1 else f"< {limit:g} s"
    print(
        f"  warm build, nothing changed, median of {WARM_RUNS}: library {millis(lib_s)} "
        f"{goal(lib_s < limit, f'{label} library {text}')}; ax-map build (CLI) {millis(cli_s)} "
        f"{goal(cli_s < limit, f'{label} CLI {text}')} (ax-map --help alone: "
        f"{millis(statistics.median(started))})"
    )


def rerank(label: str, state: Path, workspace: Path, queries: list[str]) -> None:
    from ax_map import load_snapshot
    from ax_map.views import map_view
    from libcommon.paths import StateLayout

    snap = load_snapshot(StateLayout(root=state, workspace=workspace))
    start = time.perf_counter()
    map_view(snap)
    first = time.perf_counter() - start
    times = []
    for query in queries:
        start = time.perf_counter()
        map_view(snap, query=query)
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    print(
        f"  map with no query, the first on this snapshot (structure, PageRank): "
        f"{millis(first)}; then the first query (it also builds the query tables): "
        f"{millis(times[0])}"
    )
    print(
        f"  re-rank and render for a new query, {len(times)} queries: median {millis(median)}, "
        f"max {millis(max(times))} {goal(median < GOAL_RERANK_S, f'{label} re-rank < 100 ms')}"
    )


def quality(state: Path, workspace: Path) -> None:
    from ax_map import load_snapshot
    from ax_map.retrieve import retrieve
    from libcommon.paths import StateLayout

    snap = load_snapshot(StateLayout(root=state, workspace=workspace))
    for name in ("stdlib_queries.txt", "stdlib_queries_heldout.txt"):
        queries = read_queries(HERE.parent / "map" / name)
        found = sum(
            any(p in {h.path for h in retrieve(snap, workspace, q, limit=RECALL_AT)} for p in want)
            for q, want in queries
        )
        score = found / len(queries)
        print(
            f"  recall@{RECALL_AT} on {name} (real index): {found}/{len(queries)} = {score:.3f} "
            f"{goal(score >= GOAL_RECALL, f'recall@5 on {name} >= 0.9')}"
        )


def main(quick: bool, pairs: int) -> int:
    print(load())
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ax-map-bench-") as scratch:
        base = Path(scratch)
        stdlib = copy_stdlib_repo(base / "stdlib")
        cold("stdlib copy", base / "state-stdlib", stdlib, pairs)
        rerank("stdlib", base / "state-stdlib", stdlib, NEW_QUERIES)
        quality(base / "state-stdlib", stdlib)

        small = base / f"gen-{WARM_SMALL_FILES}"
        generate(small, WARM_SMALL_FILES)
        run_child(["--child-build", str(base / "state-small"), str(small)])
        print(f"generated {WARM_SMALL_FILES:,} files:")
        warm(f"{WARM_SMALL_FILES:,} files", base / "state-small", small, GOAL_WARM_SMALL_S)

        files = GENERATED_FILES_QUICK if quick else GENERATED_FILES
        large = base / f"gen-{files}"
        start = time.monotonic()
        generate(large, files)
        print(
            f"generated {files:,} files (written and committed in {time.monotonic() - start:.0f} s)"
        )
        cold(f"generated {files:,}", base / "state-large", large, pairs)
        warm(f"{files:,} files", base / "state-large", large, GOAL_WARM_LARGE_S)
        rerank(f"{files:,} files", base / "state-large", large, GENERATED_QUERIES)
    print(load())
    print(f"bench wall time {time.monotonic() - started:.0f} s")
    print(f"goals not met: {'; '.join(missed) or 'none'}")
    return 1 if missed else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5,000 generated files, not 20,000")
    parser.add_argument(
        "--pairs",
        type=int,
        default=COLD_PAIRS,
        help=f"cold builds, each beside Aider's method (default {COLD_PAIRS})",
    )
    parser.add_argument(
        "--child-build", nargs=2, metavar=("STATE", "WORKSPACE"), help=argparse.SUPPRESS
    )
    parser.add_argument(
        "--child-aider", nargs=2, metavar=("WORKSPACE", "LIST"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.child_build:
        cold_build_child(*args.child_build)
    elif args.child_aider:
        aider_child(*args.child_aider)
    else:
        if args.pairs < 1:
            parser.error("--pairs takes 1 or more")
        sys.exit(main(args.quick, args.pairs))
