"""Reading workspace files and extracting them, in this process or across the cores.

A file is read through the folders the inventory listed, each opened with
O_NOFOLLOW relative to the one above it from the workspace root, and the file
itself with O_NOFOLLOW|O_NONBLOCK: a link swapped in since the listing (to a file
or folder outside, or a FIFO) is refused and counted, never followed or waited on.
What the read tells is decided before anything is extracted: a NUL in the first
``BINARY_SNIFF_BYTES`` is ``binary``; an average line longer than
``MINIFIED_AVG_LINE_BYTES`` in a file of at least ``MINIFIED_MIN_BYTES`` is
``minified`` (bundled or generated code: one long line says nothing about structure);
a file that vanished, became a link or cannot be opened is counted with that reason.

Work is cut into batches of about ``BATCH_BYTES`` and spread over at most
``MAX_WORKERS`` processes (one per available core) when there is enough of it
(``POOL_MIN_FILES``); otherwise it runs here. Either way it stops at the deadline:
batches not done are left for the next build, the workers are killed, and nothing
waits on them. A worker that dies (a grammar crashing on a file) fails its batches,
which keep what they had (``Outcome`` never arrives for them), and stops the pool.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple

from .inventory import (
    MAX_FILE_BYTES,
    SKIP_BINARY,
    SKIP_MINIFIED,
    SKIP_NOT_REGULAR,
    SKIP_SYMLINK,
    SKIP_TOO_LARGE,
    SKIP_UNREADABLE,
)
from .scan import Definitions, Extraction, scan_definitions, scan_links

if TYPE_CHECKING:
    # multiprocessing costs ~30 ms to import: only a build with enough work loads it.
    from multiprocessing.connection import Connection
    from multiprocessing.context import ForkContext, ForkServerContext
    from multiprocessing.process import BaseProcess
    from multiprocessing.sharedctypes import Synchronized

BINARY_SNIFF_BYTES = 8192
MINIFIED_AVG_LINE_BYTES = 200
MINIFIED_MIN_BYTES = 2048
MAX_WORKERS = 4
POOL_MIN_FILES = 200
BATCH_BYTES = 256 * 1024
BATCH_MAX_FILES = 64
# How long past the deadline the pool waits for the partial batches its workers return.
DEADLINE_GRACE_S = 0.2
# What a worker may allocate beyond the address space it starts with: a parse of an
# ordinary 1 MiB file takes ~35 MiB, one whose error recovery runs away takes gigabytes.
WORKER_MEMORY_HEADROOM_BYTES = 512 * 1024 * 1024
# Workers that die (a grammar crashing on a file) are replaced this many times a run.
MAX_WORKER_RESTARTS = 8
PARSER_CRASHED = "tree-sitter crashed or ran out of memory on it"
# The reasons only a read can tell (the inventory's are decided from the name and lstat).
SKIP_VANISHED = "vanished"
# The first tier's worker died on the file (it runs no native code: the machine's
# memory, most likely).
SKIP_EXTRACTION_FAILED = "extraction failed"

# What a run extracts: the first tier's structure (definitions), the first tier's links
# (referenced names and import specifiers), or the second tier's parse (all three, from
# tree-sitter). "references" names the links, as the build's phase and its counts do.
Step = Literal["structure", "references", "parse"]


class Job(NamedTuple):
    path: str
    language: str
    size: int


class Content(NamedTuple):
    """An extraction in the form the index stores it (``index.Writer.put_content``):
    made where the file was extracted, so the build's own process, which every worker
    waits on, only writes rows. Tuples, not dataclasses: a worker's batch crosses a
    pipe as plain tuples, which pickle at a third of the cost."""

    # The (name, kind, line) definitions as a JSON array of arrays, stored as it is:
    # one row a file, not one a symbol (the snapshot's reader makes the symbols).
    # None for what the step did not extract.
    definitions: str | None
    # The referenced names sorted and joined by spaces; the import specifiers in order,
    # joined by newlines.
    references: str | None
    imports: str | None

    @classmethod
    def of(cls, extraction: Extraction) -> Content:
        return cls(
            _json_rows(extraction.definitions),
            " ".join(sorted(extraction.references)),
            "\n".join(extraction.imports),
        )

    @classmethod
    def of_definitions(cls, definitions: Definitions) -> Content:
        return cls(_json_rows(definitions), None, None)

    @classmethod
    def of_links(cls, references: frozenset[str], imports: tuple[str, ...]) -> Content:
        return cls(None, " ".join(sorted(references)), "\n".join(imports))


def _json_rows(rows: Definitions) -> str:
    # Names are identifiers and kinds plain words (ax_map.scan), but json.dumps escapes
    # what it must rather than this code assuming it; its default form, whose encoder
    # is made once (other separators make one a call, twice the cost).
    return json.dumps(rows)


class Outcome(NamedTuple):
    """What reading and extracting one file gave: its content, or the skip that
    kept it from one. ``size`` and ``mtime_ns`` are those of what was read."""

    path: str
    size: int
    mtime_ns: int
    skip: str | None
    content: Content | None
    step: Step
    # The second tier could not extract the file (tree-sitter gave up on it or crashed
    # on it): it keeps its first tier, and why is said here.
    failed: str | None = None


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# What a read asks for at the least (a small allocation, from the heap).
_READ_AT_LEAST = 64 * 1024
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class Reader:
    """Reads workspace files without following a link; keeps the last folders open."""

    def __init__(self, workspace: str) -> None:
        self.workspace = workspace
        self._folders: dict[str, int] = {}

    def close(self) -> None:
        for fd in self._folders.values():
            os.close(fd)
        self._folders.clear()

    def _folder(self, relative: str) -> int:
        fd = self._folders.get(relative)
        if fd is not None:
            return fd
        if not relative:
            fd = os.open(self.workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        else:
            parent, _, name = relative.rpartition("/")
            above = self._folder(parent)
            try:
                fd = os.open(name, _DIR_FLAGS, dir_fd=above)
            except OSError as exc:
                if exc.errno in (errno.ENOTDIR, errno.ELOOP) and _is_link(above, name):
                    raise OSError(errno.ELOOP, "a folder became a link", relative) from None
                raise
        # Only the folders on the current path stay open: files arrive sorted by path.
        for other in [key for key in self._folders if not _on_path(key, relative)]:
            os.close(self._folders.pop(other))
        self._folders[relative] = fd
        return fd

    def read(self, path: str) -> tuple[bytes | None, str | None, int, int]:
        """(data, skip, size, mtime_ns): the data, or why there is none."""
        folder, _, name = path.rpartition("/")
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=self._folder(folder))
        except OSError as exc:
            return None, _read_error(exc), 0, 0
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return None, SKIP_NOT_REGULAR, info.st_size, info.st_mtime_ns
            if info.st_size > MAX_FILE_BYTES:
                return None, SKIP_TOO_LARGE, info.st_size, info.st_mtime_ns
            data = _read_at_most(fd, MAX_FILE_BYTES + 1, info.st_size)
        except OSError as exc:
            return None, _read_error(exc), 0, 0
        finally:
            os.close(fd)
        size, mtime_ns = info.st_size, info.st_mtime_ns
        if len(data) > MAX_FILE_BYTES:
            return None, SKIP_TOO_LARGE, len(data), mtime_ns
        return data, sniff(data), size, mtime_ns


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _on_path(folder: str, relative: str) -> bool:
    return not folder or relative == folder or relative.startswith(folder + "/")


def _read_at_most(fd: int, limit: int, expected: int) -> bytes:
    """Up to ``limit`` bytes of a file ``expected`` to hold that many (its fstat; it may
    have changed since). Each read asks for about that much, not ``limit``: a read
    allocates what it asks for, and a megabyte asked of a 2 KiB file costs more than
    reading it."""
    chunks: list[bytes] = []
    total = 0
    ask = max(expected + 1, _READ_AT_LEAST)
    while total < limit:
        chunk = os.read(fd, min(limit - total, ask))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _read_error(exc: OSError) -> str:
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return SKIP_VANISHED
    if exc.errno == errno.ELOOP:
        return SKIP_SYMLINK
    return SKIP_UNREADABLE


def sniff(data: bytes) -> str | None:
    """``binary`` or ``minified`` when the content says so (see the module docstring)."""
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        return SKIP_BINARY
    if len(data) >= MINIFIED_MIN_BYTES:
        lines = data.count(b"\n") + 1
        if len(data) / lines > MINIFIED_AVG_LINE_BYTES:
            return SKIP_MINIFIED
    return None


def extract_batch(
    workspace: str,
    step: Step,
    jobs: Sequence[Job],
    deadline: float,
    position: Synchronized[int] | None = None,
) -> list[Outcome]:
    """Read and extract ``jobs`` (sorted by path) by ``step``, stopping at ``deadline``
    (``time.monotonic``, one clock for every process of the machine). ``position``,
    shared with the parent, holds the index of the job in hand, -1 once all are done:
    if this process dies, the parent knows which file killed it."""
    reader = Reader(workspace)
    outcomes = []
    try:
        for index, job in enumerate(jobs):
            if time.monotonic() >= deadline:
                break
            if position is not None:
                position.value = index
            data, skip, size, mtime_ns = reader.read(job.path)
            content: Content | None = None
            failed = None
            if data is not None and skip is None:
                extracted = _extract(step, job.language, data)
                if isinstance(extracted, str):
                    failed = extracted
                else:
                    content = extracted
            outcomes.append(Outcome(job.path, size, mtime_ns, skip, content, step, failed))
    finally:
        reader.close()
    if position is not None:
        position.value = -1
    return outcomes


def _extract(step: Step, language: str, data: bytes) -> Content | str:
    """The extraction, or (the parse only) why tree-sitter could not give one."""
    if step == "structure":
        return Content.of_definitions(scan_definitions(language, data))
    if step == "references":
        return Content.of_links(*scan_links(language, data))
    from .treesit import ParseFailed, parse

    try:
        extraction: Extraction = parse(language, data)
    except ParseFailed as exc:
        return str(exc)
    return Content.of(extraction)


def batches(jobs: Iterable[Job], batch_bytes: int = BATCH_BYTES) -> Iterator[list[Job]]:
    """``jobs`` (sorted by path) cut into runs of about ``batch_bytes``, as they come."""
    current: list[Job] = []
    weight = 0
    for job in jobs:
        current.append(job)
        weight += job.size
        if weight >= batch_bytes or len(current) >= BATCH_MAX_FILES:
            yield current
            current, weight = [], 0
    if current:
        yield current


class _Queue:
    """The batches still to do: those handed back (a dead worker's) first, then the
    next ones from ``batches``, which a cold build makes while workers already run."""

    def __init__(self, work: Iterator[list[Job]]) -> None:
        self.work = work
        self.back: list[list[Job]] = []
        self.ahead: deque[list[Job]] = deque()

    def __bool__(self) -> bool:
        return bool(self.back or self.ahead) or self._pull()

    def _pull(self) -> bool:
        batch = next(self.work, None)
        if batch is None:
            return False
        self.ahead.append(batch)
        return True

    def at_least(self, files: int, count: int) -> bool:
        """Are there ``files`` jobs in ``count`` batches or more (pulled to find out)?"""
        while len(self.ahead) < count or sum(map(len, self.ahead)) < files:
            if not self._pull():
                return False
        return True

    def pop(self) -> list[Job]:
        if self.back:
            return self.back.pop()
        if self.ahead or self._pull():
            return self.ahead.popleft()
        raise IndexError("no batch left")

    def append(self, batch: list[Job]) -> None:
        self.back.append(batch)

    def extend(self, handed_back: Iterable[list[Job]]) -> None:
        self.back.extend(handed_back)


def worker_count() -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_WORKERS))


@dataclass
class RunReport:
    """How a run went: batches done, and whether it stopped early and why."""

    done: int = 0
    stopped: str | None = None


def run_jobs(
    workspace: Path,
    step: Step,
    jobs: Iterable[Job],
    deadline: float,
    report: RunReport,
    progress: Callable[[int], None] | None = None,
    workers: int | None = None,
    ordered: bool = False,
) -> Iterator[Outcome]:
    """Outcomes of ``jobs`` as they complete, until all are done or the deadline passes.

    ``jobs`` are sorted by path here, or, when ``ordered``, come sorted already and are
    drawn only as batches are needed (a cold build classifies files while the first
    batches are extracted)."""
    queue = _Queue(batches(jobs if ordered else sorted(jobs, key=lambda job: job.path)))
    count = worker_count() if workers is None else workers
    # tree-sitter is native code that can crash or run away on a file: it only ever runs
    # in a worker, so neither can take the build (or the agent embedding it) down.
    if step == "parse" or (count > 1 and queue.at_least(POOL_MIN_FILES, 2)):
        yield from _pooled(str(workspace), step, queue, deadline, report, progress, count)
        return
    while queue:
        batch = queue.pop()
        if time.monotonic() >= deadline:
            report.stopped = "the wall budget ran out"
            return
        outcomes = extract_batch(str(workspace), step, batch, deadline)
        if len(outcomes) < len(batch):
            report.stopped = "the wall budget ran out"
        report.done += 1
        if progress is not None:
            progress(len(outcomes))
        yield from outcomes


def _worker(connection: Connection, workspace: str, position: Synchronized[int]) -> None:
    import faulthandler
    import resource
    import signal

    # Ctrl-C reaches the whole process group: the build handles it and kills its workers,
    # which must not each print a traceback of their own; nor a dump on a crash.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    faulthandler.disable()
    # A runaway parse hits this limit and dies in a moment instead of taking the machine's
    # memory first (tree-sitter does not survive a failed allocation; the parent copes).
    limit = _address_space() + WORKER_MEMORY_HEADROOM_BYTES
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    while True:
        try:
            message = connection.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        step, batch, deadline = message
        connection.send(extract_batch(workspace, step, batch, deadline, position))


def _address_space() -> int:
    """This process's virtual size in bytes (a forked worker starts with its parent's)."""
    with open("/proc/self/statm", "rb") as handle:
        pages = int(handle.read().split()[0])
    return pages * os.sysconf("SC_PAGE_SIZE")


def _context() -> ForkContext | ForkServerContext:
    import multiprocessing

    # fork is the cheap start (~5 ms a worker), and safe only where no other thread
    # could hold a lock the child inherits; an embedding host with threads gets forkserver.
    if threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("forkserver")


def _pooled(
    workspace: str,
    step: Step,
    queue: _Queue,
    deadline: float,
    report: RunReport,
    progress: Callable[[int], None] | None,
    count: int,
) -> Iterator[Outcome]:
    pool = _Pool(_context(), workspace, step, deadline)
    try:
        started = [pool.start(queue.pop()) for _ in range(count) if queue]
        for worker in started:
            pool.prefetch(worker, queue)
        while pool.busy:
            # Workers stop at the deadline themselves; the grace lets their last,
            # partial batches arrive rather than be thrown away.
            remaining = deadline + DEADLINE_GRACE_S - time.monotonic()
            if remaining <= 0:
                report.stopped = "the wall budget ran out"
                return
            for worker in pool.ready(remaining):
                received = pool.receive(worker)
                if received is None:
                    yield from pool.bury(worker, queue)
                    if pool.restarts > MAX_WORKER_RESTARTS:
                        report.stopped = "extraction workers kept dying"
                        return
                    if queue and time.monotonic() < deadline:
                        pool.prefetch(pool.start(queue.pop()), queue)
                    continue
                batch, outcomes = received
                if len(outcomes) < len(batch) or (queue and time.monotonic() >= deadline):
                    report.stopped = "the wall budget ran out"
                # The worker is fed before its outcomes are stored, not after.
                pool.next(worker, queue.pop() if queue and time.monotonic() < deadline else None)
                report.done += 1
                if progress is not None:
                    progress(len(outcomes))
                yield from outcomes
    finally:
        pool.close()


class _Pool:
    """Worker processes, each with a pipe, the batches it holds (the first in hand, the
    next waiting in its pipe) and the index of the file in hand (shared memory): a
    worker that dies names the file that killed it."""

    def __init__(
        self,
        context: ForkContext | ForkServerContext,
        workspace: str,
        step: Step,
        deadline: float,
    ) -> None:
        self.context = context
        self.workspace = workspace
        self.step = step
        self.deadline = deadline
        self.busy: dict[Connection, list[list[Job]]] = {}
        self.processes: dict[Connection, BaseProcess] = {}
        self.positions: dict[Connection, Synchronized[int]] = {}
        self.restarts = 0

    def start(self, batch: list[Job]) -> Connection:
        mine, theirs = self.context.Pipe()
        position = self.context.Value("q", -1, lock=False)
        process = self.context.Process(
            target=_worker, args=(theirs, self.workspace, position), daemon=True
        )
        process.start()
        theirs.close()
        self.processes[mine] = process
        self.positions[mine] = position
        self.busy[mine] = []
        self.send(mine, batch)
        return mine

    def prefetch(self, worker: Connection, queue: _Queue) -> None:
        """A second batch for ``worker`` to hold in its pipe: it goes on to it the moment
        it hands back the first, not when this process (loaded, or storing what came
        back) gets to it."""
        if queue:
            self.send(worker, queue.pop())

    def send(self, worker: Connection, batch: list[Job]) -> None:
        self.busy[worker].append(batch)
        # A worker dead already is found out when its pipe is read, like any other.
        with suppress(OSError):
            worker.send((self.step, batch, self.deadline))

    def ready(self, timeout: float) -> list[Connection]:
        from multiprocessing.connection import Connection, wait

        return [c for c in wait(list(self.busy), timeout=timeout) if isinstance(c, Connection)]

    def receive(self, worker: Connection) -> tuple[list[Job], list[Outcome]] | None:
        """The batch the worker finished and its outcomes, or None when it died."""
        try:
            outcomes: list[Outcome] = worker.recv()
        except (EOFError, OSError):
            return None
        return self.busy[worker].pop(0), outcomes

    def next(self, worker: Connection, batch: list[Job] | None) -> None:
        """Give the worker ``batch``; with none, let it go once it holds no other."""
        if batch is not None:
            self.send(worker, batch)
        elif not self.busy[worker]:
            with suppress(OSError):
                worker.send(None)
            self._retire(worker)

    def bury(self, worker: Connection, queue: _Queue) -> Iterator[Outcome]:
        """After a worker died: its file in hand failed; the rest of its batches go back."""
        held = self.busy[worker]
        index = self.positions[worker].value
        self._retire(worker)
        self.restarts += 1
        if not held:
            return
        batch, waiting = held[0], held[1:]
        queue.extend(reversed(waiting))
        if 0 <= index < len(batch):
            culprit = batch[index]
            yield Outcome(culprit.path, culprit.size, 0, None, None, self.step, PARSER_CRASHED)
            rest = batch[:index] + batch[index + 1 :]
        else:
            rest = batch
        if rest:
            queue.append(rest)

    def _retire(self, worker: Connection) -> None:
        del self.busy[worker]
        process = self.processes.pop(worker)
        self.positions.pop(worker)
        worker.close()
        process.join(timeout=1.0)
        if process.is_alive():
            process.kill()
            process.join()

    def close(self) -> None:
        for worker, process in list(self.processes.items()):
            if process.is_alive():
                process.kill()
            process.join()
            worker.close()
        self.processes.clear()
        self.busy.clear()
