"""A build: inventory, stat-diff against the index, extract what changed, write atomically.

Within the wall budget, in this order: the inventory; the first tier's structure
(ax_map.scan: definitions) for every file that is new or whose size or mtime changed
since it was extracted, so the structure of the whole workspace is in the index as
early as possible; the first tier's references (the names and modules a file uses:
references and import specifiers) for the files that have only their structure; the
second tier (tree-sitter, ax_map.treesit) for files that have only the first,
uncommitted files first; imports resolved over the whole inventory. A file the first
tier did not reach is ``pending``; one the references step did not reach has no
references or imports yet; one the second tier did not reach keeps its first tier.
Either way the index says so, and the next build carries on from there, so builds
under any budget converge on the complete index.

A file whose mtime lies within ``RACY_WINDOW_NS`` of the previous build's listing is
read again: it may have changed in the same clock tick without changing its size
(git's "racily clean" entries).
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from libcommon.errors import OperationFailed, UsageError
from libcommon.locks import flock_lock
from libcommon.paths import StateLayout

from . import index as store
from .inventory import (
    SKIP_BINARY,
    SKIP_MINIFIED,
    SKIP_NO_GRAMMAR,
    Inventory,
    InventoryError,
    list_files,
    take_inventory,
)
from .model import Coverage, FileEntry, FileStatus
from .pathtext import quote_path

if TYPE_CHECKING:
    # Only a build that reads files loads extraction and import resolution (~25 ms):
    # a warm build with nothing changed answers without them.
    from .extract import Job, Outcome, RunReport, Step

DEFAULT_BUDGET_S = 30.0
MAX_BUDGET_S = 3600.0
MIN_BUDGET_S = 0.1
# The part of the budget kept for resolving imports and writing the index.
WRITE_RESERVE_S = 1.0
WRITE_RESERVE_FRACTION = 0.1
RACY_WINDOW_NS = 2_000_000_000
# How many paths a note names before it counts the rest.
NOTE_PATHS_SHOWN = 5
# Read-time skips that hold as long as the file's size and mtime do.
_STABLE_SKIPS = frozenset({SKIP_BINARY, SKIP_MINIFIED})

Progress = Callable[[str, int, int], None]


@dataclass
class BuildResult:
    workspace: str
    index: str
    git: bool
    coverage: Coverage
    # Files whose extraction is the first tier only (tree-sitter has not reached them).
    first_tier_only: int
    parsed: int
    # Of first_tier_only: the files tree-sitter gave up or crashed on.
    parse_failed: int
    # Of first_tier_only: the files with their definitions but no references or imports
    # yet.
    references_pending: int
    extracted: int
    reused: int
    removed: int
    written: bool
    rebuilt: str | None
    exact: bool
    notes: list[str] = field(default_factory=list)
    timings_ms: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The JSON of ax_map.models.BuildSummary, the contract ``ax-map build`` prints,
        made without pydantic: its import costs more than a warm build's whole run."""
        coverage = self.coverage
        return {
            "workspace": self.workspace,
            "index": self.index,
            "git": self.git,
            "state": "partial" if coverage.partial or not self.exact else "complete",
            "coverage": {
                "total": coverage.total,
                "indexed": coverage.indexed,
                "listed": dict(coverage.listed),
                "pending": coverage.pending,
                "capped": coverage.capped,
                "exact": self.exact,
                "languages": dict(coverage.languages),
            },
            "tiers": {
                "parsed": self.parsed,
                "firstTierOnly": self.first_tier_only,
                "parseFailed": self.parse_failed,
                "referencesPending": self.references_pending,
            },
            "extracted": self.extracted,
            "reused": self.reused,
            "removed": self.removed,
            "written": self.written,
            "rebuilt": self.rebuilt,
            "notes": list(self.notes),
            "durationMs": self.timings_ms.get("total", 0),
            "timingsMs": dict(self.timings_ms),
        }


def check_budget(budget_s: float) -> float:
    if not MIN_BUDGET_S <= budget_s <= MAX_BUDGET_S:
        raise UsageError(
            f"--budget-seconds {budget_s:g} is out of range",
            hint=f"give between {MIN_BUDGET_S:g} and {MAX_BUDGET_S:g} seconds",
        )
    return budget_s


def build_index(
    layout: StateLayout,
    *,
    budget_s: float = DEFAULT_BUDGET_S,
    environ: Mapping[str, str] | None = None,
    progress: Progress | None = None,
    workers: int | None = None,
) -> BuildResult:
    """Build or refresh ``layout``'s map index within ``budget_s`` seconds of wall time."""
    check_budget(budget_s)
    start = time.monotonic()
    deadline = start + budget_s
    map_dir = layout.map_dir
    map_dir.mkdir(parents=True, exist_ok=True)
    with flock_lock(
        map_dir / store.LOCK_NAME,
        timeout=budget_s,
        what="map build lock",
        hint="another ax-map build of this workspace is running; retry when it ends",
    ):
        lock_wait = time.monotonic() - start
        store.remove_leftovers(map_dir)
        build = _Build(layout, deadline, os.environ if environ is None else environ, progress)
        build.timings["lockWait"] = lock_wait
        try:
            return build.run(workers)
        except InventoryError as exc:
            raise OperationFailed(
                f"could not list the workspace: {exc}",
                hint="check that `git status` works in the workspace",
            ) from None


@dataclass
class _Previous:
    files: dict[str, store.StoredFile]
    meta: dict[str, str]


class _Build:
    def __init__(
        self,
        layout: StateLayout,
        deadline: float,
        environ: Mapping[str, str],
        progress: Progress | None,
    ) -> None:
        self.layout = layout
        self.workspace = layout.workspace
        self.index = store.index_path(layout.map_dir)
        self.deadline = deadline
        self.environ = environ
        self.progress = progress
        self.timings: dict[str, float] = {}
        self.notes: list[str] = []
        self.parse_failures: list[str] = []

    def _extract_deadline(self) -> float:
        left = self.deadline - time.monotonic()
        return self.deadline - min(WRITE_RESERVE_S, max(left, 0.0) * WRITE_RESERVE_FRACTION)

    def run(self, workers: int | None) -> BuildResult:
        started = time.monotonic()
        previous, rebuilt = self._previous()
        horizon_ns = time.time_ns()
        phase = time.monotonic()
        stream: Iterator[FileEntry] | None = None
        if previous is None:
            # Nothing to diff against: the first files are extracted while the rest are
            # still being classified (their lstat), instead of after.
            listing = list_files(self.workspace, self.environ, self.deadline)
            inventory = listing.inventory([])
            stream = listing.entries()
        else:
            inventory = take_inventory(self.workspace, self.environ, self.deadline)
        self.timings["inventory"] = time.monotonic() - phase
        self.notes += inventory.notes
        plan = _plan(inventory, previous)
        meta = _meta(inventory)
        if previous is not None and plan.unchanged and _same_meta(previous.meta, meta):
            result = self._result(inventory, plan.entries, plan.tiers, plan, False, rebuilt)
            self.timings["total"] = time.monotonic() - started
            result.timings_ms = _ms(self.timings)
            return result
        from libcommon import clock

        stamps = {"horizon_ns": str(horizon_ns), "written_at": clock.timestamp()}
        try:
            entries, tiers = self._write_index(
                inventory, plan, previous, workers, meta | stamps, stream
            )
        except sqlite3.DatabaseError as exc:
            if previous is None:
                raise _write_failed(self.index, exc) from None
            # The last index read well enough to diff against but broke under the update
            # (a damaged page the read never touched): start over from nothing.
            rebuilt = f"the index {quote_path(str(self.index))} broke when updated ({exc}): "
            rebuilt += "rebuilt from nothing"
            plan = _plan(inventory, None)
            try:
                entries, tiers = self._write_index(inventory, plan, None, workers, meta | stamps)
            except sqlite3.Error as again:
                raise _write_failed(self.index, again) from None
        except sqlite3.Error as exc:
            raise _write_failed(self.index, exc) from None
        if stream is not None:
            inventory.files = list(plan.entries.values())
        result = self._result(inventory, entries, tiers, plan, True, rebuilt)
        self.timings["total"] = time.monotonic() - started
        result.timings_ms = _ms(self.timings)
        return result

    def _write_index(
        self,
        inventory: Inventory,
        plan: _Plan,
        previous: _Previous | None,
        workers: int | None,
        meta: Mapping[str, str],
        stream: Iterator[FileEntry] | None = None,
    ) -> tuple[dict[str, FileEntry], dict[str, int]]:
        """Write a new index from a copy of the last one (or from nothing) and put it in
        place; on any failure the copy is removed and the last index stays as it was."""
        writer = store.Writer(self.layout.map_dir, self.index if previous is not None else None)
        try:
            entries, tiers = self._write(writer, plan, previous, workers, stream)
            phase = time.monotonic()
            writer.set_meta(meta)
            writer.commit(self.index)
            self.timings["write"] = time.monotonic() - phase
        except BaseException:
            writer.abandon()
            raise
        return entries, tiers

    def _previous(self) -> tuple[_Previous | None, str | None]:
        """The last build's rows, or None and why the build starts over."""
        try:
            with closing(store.open_reader(self.index)) as connection:
                return _Previous(store.read_files(connection), store.read_meta(connection)), None
        except store.IndexUnavailable as exc:
            if exc.reason == "missing":
                return None, "no index yet"
            return None, f"{exc.message}: rebuilt from nothing"
        except sqlite3.Error as exc:
            where = quote_path(str(self.index))
            return None, f"the index {where} is unreadable ({exc}): rebuilt from nothing"

    def _write(
        self,
        writer: store.Writer,
        plan: _Plan,
        previous: _Previous | None,
        workers: int | None,
        stream: Iterator[FileEntry] | None,
    ) -> tuple[dict[str, FileEntry], dict[str, int]]:
        """``stream``, on a build from nothing, is the inventory's files still to be
        classified (``plan`` is then empty): they enter the plan as they come."""
        from .extract import Job, RunReport

        entries = dict(plan.entries)
        tiers = dict(plan.tiers)
        had_content = {
            path
            for path, row in (previous.files.items() if previous is not None else ())
            if row.status == "indexed"
        }
        for path in plan.removed:
            writer.remove(path)
        # A file to be read gets its row when it is read (``_store``), or as pending
        # after the first tier if it was not: one row written per file, not two.
        to_scan = set(plan.scan)
        for path in plan.rewrite:
            if path in to_scan:
                continue
            if path in had_content:
                writer.clear_content(path)
            writer.put_file(path, entries[path], tiers[path])
        for path in plan.flags:
            entry = entries[path]
            writer.set_flags(path, entry.tracked, entry.changed)
        content_changed = False

        # First tier: every file that needs reading.
        phase = time.monotonic()
        jobs: list[Job] | _Streamed
        if stream is None:
            jobs = [Job(p, entries[p].language or "", entries[p].size) for p in plan.scan]
        else:
            jobs = _Streamed(stream, plan, entries, tiers, to_scan, writer)
        report = RunReport()
        with closing(self._run("structure", jobs, report, workers)) as outcomes:
            for outcome in outcomes:
                self._store(writer, outcome, entries, tiers, had_content)
                to_scan.discard(outcome.path)
                content_changed = True
        if stream is not None:
            # The budget ran out before every file was classified: the rest are pending.
            for _ in jobs:
                pass
        content_changed = content_changed or bool(plan.removed) or bool(plan.added)
        for path in sorted(to_scan):
            if path in had_content:
                writer.clear_content(path)
            writer.put_file(path, entries[path], tiers[path])
        if report.stopped:
            self.notes.append(f"first tier stopped: {report.stopped}")
        self.timings["scan"] = time.monotonic() - phase

        # The first tier's references, once every file has its structure.
        phase = time.monotonic()
        waiting = _references_waiting(entries, tiers)
        jobs = [Job(path, entries[path].language or "", entries[path].size) for path in waiting]
        report = RunReport()
        if jobs and time.monotonic() < self._extract_deadline():
            with closing(self._run("references", jobs, report, workers)) as outcomes:
                for outcome in outcomes:
                    if _store_references(writer, outcome, entries, tiers):
                        content_changed = True
        if report.stopped:
            self.notes.append(f"first tier's references stopped: {report.stopped}")
        self.timings["references"] = time.monotonic() - phase

        # Second tier: the files that have only the first, uncommitted ones first.
        phase = time.monotonic()
        waiting = _second_tier_waiting(entries, tiers)
        self.notes += _grammar_notes(entries, tiers)
        jobs = [Job(path, entries[path].language or "", entries[path].size) for path in waiting]
        report = RunReport()
        if jobs and time.monotonic() < self._extract_deadline():
            with closing(self._run("parse", jobs, report, workers)) as outcomes:
                for outcome in outcomes:
                    self._store(writer, outcome, entries, tiers, had_content)
                    content_changed = True
        if report.stopped:
            self.notes.append(f"tree-sitter tier stopped: {report.stopped}")
        if self.parse_failures:
            self.notes.append(_failures_note(self.parse_failures))
        self.timings["parse"] = time.monotonic() - phase

        if content_changed:
            phase = time.monotonic()
            writer.replace_imports(self._imports(writer, entries))
            self.timings["imports"] = time.monotonic() - phase
        return entries, tiers

    def _run(
        self, step: Step, jobs: list[Job] | _Streamed, report: RunReport, workers: int | None
    ) -> Generator[Outcome, None, None]:
        # A stream's total is known once it has been drawn to the end: progress is
        # said from then on (never a done == total that is not the end).
        ordered = not isinstance(jobs, list)
        total = jobs.total if isinstance(jobs, _Streamed) else len(jobs)
        done = 0
        said = (-1, -1)
        name = _PHASES[step]

        def say() -> None:
            nonlocal said
            known = jobs.total if isinstance(jobs, _Streamed) else total
            if self.progress is not None and known is not None and (done, known) != said:
                said = (done, known)
                self.progress(name, done, known)

        def advance(count: int) -> None:
            nonlocal done
            done += count
            say()

        if total:
            say()
        from .extract import run_jobs

        yield from run_jobs(
            self.workspace,
            step,
            jobs,
            self._extract_deadline(),
            report,
            advance,
            workers,
            ordered,
        )
        say()

    def _store(
        self,
        writer: store.Writer,
        outcome: Outcome,
        entries: dict[str, FileEntry],
        tiers: dict[str, int],
        had_content: set[str],
    ) -> None:
        path = outcome.path
        entry = entries[path]
        if outcome.failed is not None and outcome.step == "parse":
            # The first tier's extraction stays; this content is not parsed again.
            tiers[path] = store.TIER_PARSE_FAILED
            self.parse_failures.append(path)
            writer.put_file(path, entry, tiers[path])
            return
        if path in had_content:
            writer.clear_content(path)
        content = outcome.content
        if content is None:
            # Imported here, not once a file: most files have content.
            from .extract import SKIP_EXTRACTION_FAILED, SKIP_VANISHED

            skip = outcome.skip or (SKIP_EXTRACTION_FAILED if outcome.failed else SKIP_VANISHED)
            status: FileStatus = "listed"
            tiers[path] = store.TIER_NONE
        else:
            skip, status = None, "indexed"
            tiers[path] = store.TIER_PARSED if outcome.step == "parse" else store.TIER_STRUCTURE
            writer.put_content(path, content.definitions, content.references, content.imports)
        # FileEntry(...) and not dataclasses.replace: this runs once a file.
        entry = FileEntry(
            path,
            outcome.size,
            outcome.mtime_ns,
            entry.language,
            status,
            skip,
            entry.tracked,
            entry.changed,
        )
        had_content.add(path)
        entries[path] = entry
        writer.put_file(path, entry, tiers[path])

    def _imports(
        self, writer: store.Writer, entries: Mapping[str, FileEntry]
    ) -> list[tuple[str, str]]:
        from .extract import Reader
        from .resolve import GO_MOD_MAX_BYTES, resolve_all

        specs = writer.specs()
        languages = {
            path: (entries[path].language or "", found)
            for path, found in specs.items()
            if path in entries and entries[path].status == "indexed"
        }
        reader = Reader(str(self.workspace))

        def read(path: str) -> bytes | None:
            entry = entries.get(path)
            if entry is None or entry.skip != SKIP_NO_GRAMMAR or entry.size > GO_MOD_MAX_BYTES:
                return None
            data, _skip, _size, _mtime = reader.read(path)
            return data

        try:
            return resolve_all(sorted(entries), languages, read)
        finally:
            reader.close()

    def _result(
        self,
        inventory: Inventory,
        entries: Mapping[str, FileEntry],
        tiers: Mapping[str, int],
        plan: _Plan,
        written: bool,
        rebuilt: str | None,
    ) -> BuildResult:
        files = list(entries.values())
        coverage = store.coverage_of(files, {"capped": str(inventory.capped)})
        indexed_tiers = [tiers[e.path] for e in files if e.status == "indexed"]
        return BuildResult(
            workspace=quote_path(str(self.workspace)),
            index=quote_path(str(self.index)),
            git=inventory.git,
            coverage=coverage,
            first_tier_only=sum(1 for tier in indexed_tiers if tier != store.TIER_PARSED),
            parsed=sum(1 for tier in indexed_tiers if tier == store.TIER_PARSED),
            parse_failed=sum(1 for tier in indexed_tiers if tier == store.TIER_PARSE_FAILED),
            references_pending=sum(1 for tier in indexed_tiers if tier == store.TIER_STRUCTURE),
            extracted=len(plan.scan),
            reused=plan.reused,
            removed=len(plan.removed),
            written=written,
            rebuilt=rebuilt,
            exact=inventory.exact,
            notes=self.notes,
        )


@dataclass
class _Plan:
    """What a build must do, from the stat-diff of the inventory against the index."""

    entries: dict[str, FileEntry]
    tiers: dict[str, int]
    # Paths whose row is (re)written as the inventory says, before any extraction.
    rewrite: list[str]
    # Paths whose row stays but whose tracked/changed flags moved.
    flags: list[str]
    scan: list[str]
    removed: list[str]
    added: list[str]
    reused: int

    @property
    def unchanged(self) -> bool:
        """Nothing to write: no row moved and no file waits for its references or the
        second tier."""
        moved = self.rewrite or self.flags or self.scan or self.removed
        return (
            not moved
            and not _references_waiting(self.entries, self.tiers)
            and not _second_tier_waiting(self.entries, self.tiers)
        )


def _references_waiting(entries: Mapping[str, FileEntry], tiers: Mapping[str, int]) -> list[str]:
    """Indexed files with the first tier's definitions but not yet its references."""
    return [
        path
        for path, entry in entries.items()
        if entry.status == "indexed" and tiers[path] == store.TIER_STRUCTURE
    ]


def _store_references(
    writer: store.Writer,
    outcome: Outcome,
    entries: Mapping[str, FileEntry],
    tiers: dict[str, int],
) -> bool:
    """A file's references and imports, taken only if it is what its definitions were
    read from (True then): one that changed since (its size or mtime) keeps its
    definitions alone, and the next build, whose stat-diff sees the change, reads it
    whole."""
    path = outcome.path
    entry = entries[path]
    content = outcome.content
    if content is None or (outcome.size, outcome.mtime_ns) != (entry.size, entry.mtime_ns):
        return False
    writer.put_content(path, None, content.references, content.imports)
    tiers[path] = store.TIER_FIRST
    writer.put_file(path, entry, store.TIER_FIRST)
    return True


def _second_tier_waiting(entries: Mapping[str, FileEntry], tiers: Mapping[str, int]) -> list[str]:
    """Indexed files with only the first tier whose grammar loads, uncommitted ones first."""
    waiting = [
        path
        for path, entry in entries.items()
        if entry.status == "indexed"
        and tiers[path] == store.TIER_FIRST
        and treesit_ready(entry.language)
    ]
    waiting.sort(key=lambda path: (not entries[path].changed, path))
    return waiting


def _grammar_notes(entries: Mapping[str, FileEntry], tiers: Mapping[str, int]) -> list[str]:
    missing = sorted(
        {
            entry.language or ""
            for path, entry in entries.items()
            if entry.status == "indexed"
            and tiers[path] == store.TIER_FIRST
            and not treesit_ready(entry.language)
        }
    )
    return [f"no tree-sitter grammar loads for {language}: first tier only" for language in missing]


def treesit_ready(language: str | None) -> bool:
    from .treesit import available

    return language is not None and available(language)


def _plan(inventory: Inventory, previous: _Previous | None) -> _Plan:
    old = previous.files if previous is not None else {}
    horizon = int(previous.meta.get("horizon_ns", "0")) if previous is not None else 0
    plan = _Plan({}, {}, [], [], [], [], [], 0)
    for entry in inventory.files:
        path = entry.path
        row = old.get(path)
        if row is None:
            plan.added.append(path)
        same_stat = (
            row is not None
            and row.size == entry.size
            and row.mtime_ns == entry.mtime_ns
            and row.mtime_ns < horizon - RACY_WINDOW_NS
        )
        if entry.status == "listed":
            plan.entries[path] = entry
            plan.tiers[path] = 0
            if row is None or (row.status, row.skip, row.size, row.mtime_ns) != (
                "listed",
                entry.skip,
                entry.size,
                entry.mtime_ns,
            ):
                plan.rewrite.append(path)
            elif (row.tracked, row.changed) != (entry.tracked, entry.changed):
                plan.flags.append(path)
            continue
        reusable = (
            row is not None
            and same_stat
            and (row.status == "indexed" or (row.status == "listed" and row.skip in _STABLE_SKIPS))
        )
        if row is not None and reusable:
            plan.entries[path] = FileEntry(
                path,
                entry.size,
                entry.mtime_ns,
                row.language,
                row.status,
                row.skip,
                entry.tracked,
                entry.changed,
            )
            plan.tiers[path] = row.tier
            plan.reused += 1
            if (row.tracked, row.changed) != (entry.tracked, entry.changed):
                plan.flags.append(path)
            continue
        plan.entries[path] = entry
        plan.tiers[path] = 0
        plan.scan.append(path)
        plan.rewrite.append(path)
    plan.removed = sorted(set(old) - set(plan.entries))
    return plan


class _Streamed:
    """The jobs of a build from nothing, made as the inventory's files are classified
    (in path order): each file enters ``plan`` as ``_plan`` would have put it, a listed
    one gets its row at once, a readable one becomes a job. ``total`` is the number of
    jobs once the last file is classified, None before."""

    def __init__(
        self,
        stream: Iterator[FileEntry],
        plan: _Plan,
        entries: dict[str, FileEntry],
        tiers: dict[str, int],
        to_scan: set[str],
        writer: store.Writer,
    ) -> None:
        self.jobs = self._jobs(stream, plan, entries, tiers, to_scan, writer)
        self.total: int | None = None

    def __iter__(self) -> Iterator[Job]:
        return self.jobs

    def __next__(self) -> Job:
        return next(self.jobs)

    def _jobs(
        self,
        stream: Iterator[FileEntry],
        plan: _Plan,
        entries: dict[str, FileEntry],
        tiers: dict[str, int],
        to_scan: set[str],
        writer: store.Writer,
    ) -> Iterator[Job]:
        from .extract import Job

        count = 0
        for entry in stream:
            path = entry.path
            plan.added.append(path)
            plan.entries[path] = entries[path] = entry
            plan.tiers[path] = tiers[path] = 0
            plan.rewrite.append(path)
            if entry.status == "listed":
                writer.put_file(path, entry, 0)
                continue
            plan.scan.append(path)
            to_scan.add(path)
            count += 1
            yield Job(path, entry.language or "", entry.size)
        self.total = count


# The phase each step reports its progress under.
_PHASES: dict[str, str] = {"structure": "scan", "references": "references", "parse": "parse"}


def _failures_note(paths: list[str]) -> str:
    shown = ", ".join(quote_path(path) for path in paths[:NOTE_PATHS_SHOWN])
    more = len(paths) - NOTE_PATHS_SHOWN
    return (
        f"tree-sitter could not parse {len(paths)} file(s), which keep their first tier "
        f"until they change: {shown}" + (f" and {more} more" if more > 0 else "")
    )


def _write_failed(index: Path, exc: sqlite3.Error) -> OperationFailed:
    return OperationFailed(
        f"could not write the map index {quote_path(str(index))}: {exc}",
        hint="check the free space and permissions of the state root; the last index is kept",
    )


def _meta(inventory: Inventory) -> dict[str, str]:
    return {
        "schema_version": str(store.SCHEMA_VERSION),
        "git": "1" if inventory.git else "0",
        "total": str(inventory.total),
        "capped": str(inventory.capped),
        "exact": "1" if inventory.exact else "0",
        "notes": json.dumps(inventory.notes),
    }


def _same_meta(old: Mapping[str, str], new: Mapping[str, str]) -> bool:
    return all(old.get(key) == value for key, value in new.items())


def _ms(timings: Mapping[str, float]) -> dict[str, int]:
    return {key: round(value * 1000) for key, value in timings.items()}
