"""Extraction: both tiers find the same definitions, references and imports.

One sample per language; each tier must find every expected (name, kind), keep
comment and string words out of the references, and capture only identifier names.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import resource
import sysconfig
import threading
import time
from pathlib import Path

import pytest

from ax_map import extract, treesit
from ax_map import scan as scan_module
from ax_map.extract import Job, Reader, RunReport, extract_batch, run_jobs, sniff
from ax_map.languages import REFERENCE_MIN_CHARS
from ax_map.scan import (
    KINDS,
    LANGUAGES,
    DefinitionRule,
    Extraction,
    needed,
    scan,
    scan_definitions,
    scan_links,
)
from ax_map.treesit import parse

SAMPLES: dict[str, tuple[str, set[tuple[str, str]], set[str], tuple[str, ...]]] = {
    "python": (
        '''import os.path, json as j
from .sibling import thing, other as o
from pkg import (
    alpha,
    beta,
)

LIMIT = 3


class Widget(Base):
    """A docstring mentioning proseword and
    def not_a_function(): it is prose
    """

    def render(self, size):
        # commentword here
        return helper(size, "stringword")

    if os.name == "nt":
        def windows_only(self):
            pass


def helper(value, label):
    def inner():
        return value
    return inner


class Documented:
    """A docstring with a line
at the margin, which closes no class.
    """

    def after(self):
        pass
''',
        {
            ("LIMIT", "variable"),
            ("Widget", "class"),
            ("render", "method"),
            ("windows_only", "method"),
            ("helper", "function"),
            ("inner", "function"),
            ("Documented", "class"),
            ("after", "method"),
        },
        {"Base", "helper", "size", "os", "name"},
        ("os.path", "json", ".sibling:thing", ".sibling:other", "pkg:alpha", "pkg:beta"),
    ),
    "javascript": (
        """import { a, b } from './lib/util.js';
import def from "../shared";
const lazy = require('./lazy');
// commentword
export function render(props) { return paint(props, 'stringword'); }
export const make = (x) => x + 1;
class Painter extends Base {
  draw(shape) { return shape; }
}
""",
        {("render", "function"), ("make", "function"), ("Painter", "class"), ("draw", "method")},
        {"paint", "props", "Base", "shape"},
        ("./lib/util.js", "../shared", "./lazy"),
    ),
    "typescript": (
        """import type { Shape } from './shape';
export interface Options { size: number }
export type Id = string;
export enum Color { Red, Green }
export class Store<T> {
  get(id: Id): T { return this.items[id]; }
}
namespace Inner { export const x = 1; }
export function build(o: Options): Store<Shape> { return new Store(); }
""",
        {
            ("Options", "interface"),
            ("Id", "type"),
            ("Color", "enum"),
            ("Store", "class"),
            ("get", "method"),
            ("Inner", "module"),
            ("build", "function"),
        },
        {"Shape", "Options", "items"},
        ("./shape",),
    ),
    "tsx": (
        """import React from 'react';
export function App(props: Props) { return <div className="stringword">{props.title}</div>; }
""",
        {("App", "function")},
        {"React", "Props", "props", "title"},
        ("react",),
    ),
    "go": (
        """package shapes

import (
\t"fmt"
\tm "example.com/mod/math"
)

// commentword
type Point struct { X, Y int }

type Shape interface { Area() float64 }

func NewPoint(x int) Point { return Point{X: x} }

func (p Point) Area() float64 { fmt.Println("stringword"); return m.Zero }
""",
        {("Point", "struct"), ("Shape", "interface"), ("NewPoint", "function"), ("Area", "method")},
        {"fmt", "Println", "Zero"},
        ("fmt", "example.com/mod/math"),
    ),
    "rust": (
        """mod geometry;
pub mod util;
use std::fmt;

/// commentword
pub struct Point { x: i32 }

pub enum Kind { A, B }

pub trait Area { fn area(&self) -> f64; }

impl Point {
    pub fn new(x: i32) -> Self { Point { x } }
}

pub fn helper<'a>(s: &'a str) -> &'a str { println!("stringword"); s }

macro_rules! square { ($x:expr) => { $x * $x }; }
""",
        {
            ("Point", "struct"),
            ("Kind", "enum"),
            ("Area", "interface"),
            ("new", "method"),
            ("helper", "function"),
            ("square", "macro"),
            ("geometry", "module"),
        },
        {"fmt", "println"},
        ("mod:geometry", "mod:util"),
    ),
    "java": (
        """package com.example;

import com.example.util.Helper;
import static com.example.util.Math.max;

/* commentword */
public class Service extends Base implements Runner {
    private final Helper helper;

    public Service(Helper helper) { this.helper = helper; }

    public String run(int count) { return helper.go("stringword", count); }
}

interface Runner { void run(); }
""",
        {("Service", "class"), ("run", "method"), ("Runner", "interface")},
        {"Helper", "helper", "go", "count", "Base"},
        ("com.example.util.Helper", "com.example.util.Math.max"),
    ),
    "c": (
        """#include <stdio.h>
#include "util/buffer.h"

#define MAX_SIZE 10

/* commentword */
struct buffer { int size; };

typedef struct node { int v; } node_t;

static int
count_items(struct buffer *b)
{
    printf("stringword");
    return b->size;
}

int main(int argc, char **argv) { return count_items(0); }
""",
        {
            ("MAX_SIZE", "macro"),
            ("buffer", "struct"),
            ("count_items", "function"),
            ("main", "function"),
            ("node_t", "type"),
        },
        {"printf", "size", "argc"},
        ("util/buffer.h",),
    ),
    "cpp": (
        """#include "widget.hpp"

namespace ui {

class Widget : public Base {
public:
    void draw() const;
};

void Widget::draw() const { paint("stringword"); }

}  // namespace ui
""",
        {("ui", "module"), ("Widget", "class"), ("draw", "method")},
        {"Base", "paint"},
        ("widget.hpp",),
    ),
    "bash": (
        """#!/bin/bash
source ./lib/common.sh
. "helpers.sh"
# commentword
GREETING='stringword'
greet() {
  echo "$GREETING $NAME"
}
function farewell {
  greet
}
""",
        {("greet", "function"), ("farewell", "function"), ("GREETING", "variable")},
        {"NAME", "greet"},
        ("./lib/common.sh", "helpers.sh"),
    ),
}
PROSE_WORDS = {"commentword", "stringword", "proseword"}


def _kinds(found: Extraction) -> set[tuple[str, str]]:
    return {(name, kind) for name, kind, _ in found.definitions}


@pytest.mark.parametrize("tier", ["scan", "parse"])
@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_each_tier_extracts_each_language(language: str, tier: str) -> None:
    source, definitions, references, imports = SAMPLES[language]
    found = (scan if tier == "scan" else parse)(language, source.encode())
    assert definitions <= _kinds(found), sorted(definitions - _kinds(found))
    assert references <= found.references, sorted(references - found.references)
    assert not PROSE_WORDS & found.references
    assert not any(name == "not_a_function" for name, _, _ in found.definitions)
    assert set(imports) <= set(found.imports), found.imports
    assert {kind for _, kind, _ in found.definitions} <= KINDS


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_the_first_tiers_two_steps_give_what_one_scan_gives(language: str) -> None:
    data = SAMPLES[language][0].encode()
    whole = scan(language, data)
    assert whole.definitions and scan_definitions(language, data) == whole.definitions
    assert whole.references and scan_links(language, data) == (whole.references, whole.imports)


def test_import_specifiers_come_in_the_order_the_file_holds_them() -> None:
    source = (
        "export * from './a';\n"
        "const c = require('./c');\n"
        "import b from './b';\n"
        "export { e } from './e';\n"
        "const d = await import('./d');\n"
        "import './a';\n"
    )
    assert scan("javascript", source.encode()).imports == ("./a", "./c", "./b", "./e", "./d")
    python = "from p import q\nimport os\nfrom . import r\n"
    assert scan("python", python.encode()).imports == ("p:q", "os", ".:r")


def test_lines_are_those_of_the_definitions() -> None:
    source = "x = 1\n\n\nclass A:\n    def b(self):\n        pass\n"
    for extract_with in (scan, parse):
        lines = {
            name: line for name, _, line in extract_with("python", source.encode()).definitions
        }
        assert lines == {"x": 1, "A": 4, "b": 5}


@pytest.mark.parametrize("extract_with", [scan, parse])
def test_names_that_are_not_identifiers_are_dropped(extract_with) -> None:  # type: ignore[no-untyped-def]
    source = "def café(): pass\ndef ok(): pass\nignore_previous_instructions = 1\n"
    names = {name for name, _, _ in extract_with("python", source.encode()).definitions}
    assert names == {"ok", "ignore_previous_instructions"}
    bash = "my-func() { :; }\nfine() { :; }\n"
    names = {name for name, _, _ in extract_with("bash", bash.encode()).definitions}
    assert names == {"fine"}


def test_a_long_name_is_dropped() -> None:
    long_name = "a" * 200
    found = scan("python", f"def {long_name}(): pass\n{long_name}()\n".encode())
    assert found.definitions == ()
    assert long_name not in found.references


def _names_the_pattern_finds(language: str, data: bytes) -> frozenset[str]:
    """References as the pattern defines them: ``findall`` over the code, then the
    keywords and short names left out (what ``identifiers`` computes faster)."""
    rules = LANGUAGES[language]
    code = b" ".join(rules.prose.split(data)[0::2])
    found = set(rules.names.findall(code)) - rules.keywords
    return frozenset(n.decode() for n in found if len(n) >= REFERENCE_MIN_CHARS)


# Words a tokenizer splits in odd places: digits first, too long, '$', non-ASCII.
TRICKY = "\n".join(
    [
        "x = 0x1F + 1e9 + 3j + 1_000 + 0o17 + 7days + 9" + "b" * 140,
        "a" * 130 + " = caf\u00e9 + na\u00efve_name + $dollar + a$b + _9 + __x1",
        "let $el = q$; f(x2, y_3) // note",
        "q = 'str' # say",
        "",
    ]
)


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_references_are_exactly_the_names_the_pattern_finds(language: str) -> None:
    for source in (SAMPLES[language][0], TRICKY, SAMPLES[language][0] + TRICKY):
        data = source.encode()
        assert scan(language, data).references == _names_the_pattern_finds(language, data)


def test_references_on_real_files_are_the_names_the_pattern_finds() -> None:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(stdlib.glob("*.py"))[:80]
    assert files, f"no Python files in {stdlib}"
    for path in files:
        data = path.read_bytes()
        assert scan("python", data).references == _names_the_pattern_finds("python", data), path


def test_the_bytes_a_pattern_needs_are_read_from_its_parse() -> None:
    assert needed(re.compile(rb"\nfunc[ \t]+(?P<name>x)")) == (b"\nfunc",)
    assert needed(re.compile(rb"(?:export )?interface[ \t]+x")) == (b"interface",)
    assert needed(re.compile(rb"export[ \t]+.*from[ \t]*x")) == (b"export", b"from")
    # Inside an option or a group a literal is not needed; one byte is too short to help.
    assert needed(re.compile(rb"(?:class)?x(?:struct|union)y")) == ()
    assert needed(re.compile(rb"class", re.IGNORECASE)) == ()
    for language, (source, *_) in SAMPLES.items():
        rules = LANGUAGES[language]
        for rule in rules.definitions:
            for match in rule.pattern.finditer(b"\n" + source.encode()):
                assert all(run in match[0] for run in rule.needs), (language, rule.kind)
        for pattern, runs in zip(rules.imports, rules.import_needs, strict=True):
            for match in pattern.finditer(b"\n" + source.encode()):
                assert all(run in match[0] for run in runs), (language, pattern.pattern)


class _Counted:
    """A pattern that counts the searches made with it."""

    def __init__(self, pattern: re.Pattern[bytes]) -> None:
        self.real = pattern
        self.pattern = pattern.pattern
        self.flags = pattern.flags
        self.groupindex = pattern.groupindex
        self.searches = 0

    def finditer(self, text: bytes) -> object:
        self.searches += 1
        return self.real.finditer(text)


def test_a_file_without_the_bytes_a_pattern_needs_is_not_searched_with_it() -> None:
    go = LANGUAGES["go"]
    spied = [
        DefinitionRule(rule.kind, _Counted(rule.pattern))  # type: ignore[arg-type]
        for rule in go.definitions
    ]
    rules = dataclasses.replace(go, definitions=tuple(spied))
    data = b"package p\n\nfunc Run() {}\n\ntype T struct {\n}\n"
    found = scan_module._definitions("go", rules, data, scan_module.OutsideSpans([], []))
    assert found == scan("go", data).definitions
    searched = {rule.kind: rule.pattern.searches for rule in spied}  # type: ignore[attr-defined]
    assert searched["interface"] == 0 and searched["variable"] == 0
    assert searched["function"] == 1 and searched["struct"] == 1


def test_a_read_takes_what_the_file_holds_whatever_its_stat_said(tmp_path: Path) -> None:
    path = tmp_path / "grown.py"
    data = bytes(range(256)) * 1000
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        for expected in (0, 10, len(data), 10 * len(data)):
            os.lseek(fd, 0, os.SEEK_SET)
            assert extract._read_at_most(fd, len(data) + 1, expected) == data
            os.lseek(fd, 0, os.SEEK_SET)
            assert extract._read_at_most(fd, 1000, expected) == data[:1000]
    finally:
        os.close(fd)


@pytest.mark.parametrize(
    ("data", "skip"),
    [
        (b"plain text\n" * 10, None),
        (b"\x00binary" + b"x" * 10, "binary"),
        ((b"x" * 99 + b"\n") * (extract.BINARY_SNIFF_BYTES // 100 + 1) + b"\x00", None),
        (b"var a=1;" * 400, "minified"),
        (b"short=1;" * 10, None),
    ],
)
def test_sniff(data: bytes, skip: str | None) -> None:
    assert sniff(data) == skip


def test_the_reader_refuses_links_and_counts_what_vanished(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.py").write_text("def outside(): pass\n")
    ws = tmp_path / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "pkg" / "ok.py").write_text("def inside(): pass\n")
    (ws / "swapped").symlink_to(outside)
    (ws / "file_link.py").symlink_to(outside / "a.py")
    os.mkfifo(ws / "fifo.py")
    reader = Reader(str(ws))
    try:
        assert reader.read("pkg/ok.py")[1] is None
        assert reader.read("swapped/a.py")[:2] == (None, "symlink")
        assert reader.read("file_link.py")[:2] == (None, "symlink")
        assert reader.read("fifo.py")[:2] == (None, "not a regular file")
        assert reader.read("pkg/gone.py")[:2] == (None, "vanished")
        assert reader.read("nowhere/gone.py")[:2] == (None, "vanished")
    finally:
        reader.close()


def _workspace(root: Path, count: int) -> list[Job]:
    jobs = []
    for i in range(count):
        path = f"pkg{i % 7}/mod{i}.py"
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        data = f"def f{i}():\n    return g{i}()\n".encode()
        (root / path).write_bytes(data)
        jobs.append(Job(path, "python", len(data)))
    return jobs


@pytest.mark.parametrize("step", ["structure", "references", "parse"])
def test_the_pool_gives_what_one_process_gives(tmp_path: Path, step: extract.Step) -> None:
    jobs = _workspace(tmp_path, extract.POOL_MIN_FILES + 20)
    deadline = time.monotonic() + 60
    alone = {o.path: o for o in run_jobs(tmp_path, step, jobs, deadline, RunReport(), None, 1)}
    report = RunReport()
    pooled = {o.path: o for o in run_jobs(tmp_path, step, jobs, deadline, report, None, 2)}
    assert report.stopped is None
    assert pooled == alone
    assert len(alone) == len(jobs)
    content = alone["pkg0/mod0.py"].content
    assert content is not None
    if step == "references":
        assert content == extract.Content(None, "f0 g0", "")
    else:
        assert content.definitions is not None
        assert ["f0", "function", 1] in json.loads(content.definitions)
        assert content.references == (None if step == "structure" else "f0 g0")
        assert content.imports == (None if step == "structure" else "")


def test_the_pool_stops_at_the_deadline_and_kills_its_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobs = _workspace(tmp_path, extract.POOL_MIN_FILES + 20)
    monkeypatch.setattr(extract, "BATCH_MAX_FILES", 1)

    def slow(
        workspace: str,
        step: extract.Step,
        batch: list[Job],
        deadline: float,
        position: object = None,
    ) -> list[extract.Outcome]:
        time.sleep(0.2)
        return extract_batch(workspace, step, batch, deadline, position)  # type: ignore[arg-type]

    monkeypatch.setattr(extract, "extract_batch", slow)
    before = set(_children())
    report = RunReport()
    started = time.monotonic()
    outcomes = list(run_jobs(tmp_path, "structure", jobs, started + 0.5, report, None, 2))
    assert time.monotonic() - started < 2.0
    assert report.stopped == "the wall budget ran out"
    assert 0 < len(outcomes) < len(jobs)
    assert set(_children()) - before == set()


def test_workers_are_fed_before_what_they_hand_back_is_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobs = _workspace(tmp_path, extract.POOL_MIN_FILES + 20)
    monkeypatch.setattr(extract, "BATCH_MAX_FILES", 10)
    sent: list[list[Job]] = []
    real = extract._Pool.send

    def send(self: extract._Pool, worker: object, batch: list[Job]) -> None:
        sent.append(batch)
        real(self, worker, batch)  # type: ignore[arg-type]

    monkeypatch.setattr(extract._Pool, "send", send)
    outcomes = run_jobs(tmp_path, "structure", jobs, time.monotonic() + 60, RunReport(), None, 2)  # type: ignore[arg-type]
    next(outcomes)
    # Two workers, each holding a batch in hand and one in its pipe; the one that handed
    # back a batch got the next before anything it handed back was stored.
    assert len(sent) == 5
    assert len(list(outcomes)) == len(jobs) - 1


def test_a_file_that_kills_its_worker_fails_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobs = _workspace(tmp_path, extract.POOL_MIN_FILES + 20)
    deadly = "pkg3/mod10.py"
    real = extract._extract

    def crash_on_one(step: extract.Step, language: str, data: bytes) -> object:
        if data.startswith(b"def f10("):
            os._exit(11)
        return real(step, language, data)

    monkeypatch.setattr(extract, "_extract", crash_on_one)
    report = RunReport()
    started = time.monotonic()
    outcomes = {o.path: o for o in run_jobs(tmp_path, "parse", jobs, started + 30, report, None, 2)}
    assert time.monotonic() - started < 10
    assert report.stopped is None
    assert len(outcomes) == len(jobs)
    assert outcomes[deadly].failed == extract.PARSER_CRASHED
    assert outcomes[deadly].content is None
    assert all(o.content is not None for path, o in outcomes.items() if path != deadly)


def test_workers_that_keep_dying_stop_the_pool_without_hanging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobs = _workspace(tmp_path, 20)

    def crash(*args: object) -> list[extract.Outcome]:
        os._exit(9)

    monkeypatch.setattr(extract, "extract_batch", crash)
    report = RunReport()
    started = time.monotonic()
    outcomes = list(run_jobs(tmp_path, "parse", jobs, started + 30, report, None, 2))
    assert time.monotonic() - started < 10
    assert outcomes == []
    assert report.stopped == "extraction workers kept dying"


def test_a_runaway_parse_is_stopped_by_the_worker_limits(tmp_path: Path) -> None:
    # tree-sitter-python's error recovery on 30 KB of "/*" takes gigabytes, then crashes
    # (6 GB and a segfault here, run alone): in a worker it hits the memory limit (or the
    # parse time limit) and fails alone, and the files beside it are parsed.
    (tmp_path / "ok.py").write_text("def fine(): pass\n")
    runaway = (b"/*" * 90 + b"\n") * 170  # lines short enough not to count as minified
    (tmp_path / "zz_runaway.py").write_bytes(runaway)
    jobs = [Job("ok.py", "python", 17), Job("zz_runaway.py", "python", len(runaway))]
    report = RunReport()
    started = time.monotonic()
    outcomes = {o.path: o for o in run_jobs(tmp_path, "parse", jobs, started + 60, report, None, 1)}
    assert time.monotonic() - started < 15
    # The largest child this test process ever waited for stayed near the limit.
    largest = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    assert largest < extract.WORKER_MEMORY_HEADROOM_BYTES + 512 * 1024 * 1024
    assert outcomes["ok.py"].content is not None
    assert outcomes["zz_runaway.py"].content is None
    assert outcomes["zz_runaway.py"].failed in (
        extract.PARSER_CRASHED,
        f"tree-sitter took longer than {treesit.PARSE_TIMEOUT_S:g}s",
    )


def _children() -> list[int]:
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == me and fields[0] != "Z":
                found.append(int(entry))
    return found


def test_a_host_with_threads_gets_workers_that_do_not_inherit_them(tmp_path: Path) -> None:
    # fork copies one thread of a threaded host and any lock another held: the pool
    # starts its workers from a fork server then, and gives the same outcomes.
    jobs = _workspace(tmp_path, extract.POOL_MIN_FILES + 20)
    deadline = time.monotonic() + 60
    alone = {
        o.path: o for o in run_jobs(tmp_path, "structure", jobs, deadline, RunReport(), None, 1)
    }
    stop = threading.Event()
    busy = threading.Thread(target=stop.wait)
    busy.start()
    try:
        assert extract._context().get_start_method() == "forkserver"
        report = RunReport()
        pooled = {
            o.path: o for o in run_jobs(tmp_path, "structure", jobs, deadline, report, None, 2)
        }
    finally:
        stop.set()
        busy.join()
    assert report.stopped is None
    assert pooled == alone
    assert extract._context().get_start_method() == "fork"


# Lines where one Python rule's first word is another's ("class", "def", "async").
PYTHON_RULE_EDGES = "\n".join(
    [
        "class = 1",
        "class: int = 2",
        "def: str = 'x'",
        "async = 3",
        "async def run(): pass",
        "classy = 4",
        "define = 5",
        "class\tTab: pass",
        "  def indented(self): pass",
        "\tclass Inner:",
        "x: dict[str, int] = {}",
        "y == 1",
        "def f(a=1): pass",
        "class C(x=1): pass",
        "$odd = 1",
        "name" + "x" * 130 + " = 1",
    ]
)


def test_python_rules_in_one_pass_find_what_they_find_one_by_one() -> None:
    python = LANGUAGES["python"]
    assert python.exclusive
    one_by_one = dataclasses.replace(python, exclusive=False)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    sources = [PYTHON_RULE_EDGES.encode(), SAMPLES["python"][0].encode(), TRICKY.encode()]
    sources += [path.read_bytes() for path in sorted(stdlib.glob("*.py"))[:80]]
    for data in sources:
        outside = scan_module.OutsideSpans([], [])
        one = scan_module._definitions("python", python, data, outside)
        assert one == scan_module._definitions("python", one_by_one, data, outside)
    edges = scan("python", PYTHON_RULE_EDGES.encode()).definitions
    assert {(name, kind) for name, kind, _ in edges} == {
        ("run", "function"),
        ("classy", "variable"),
        ("define", "variable"),
        ("Tab", "class"),
        ("indented", "method"),
        ("$odd", "variable"),
        ("Inner", "class"),
        ("x", "variable"),
        ("f", "function"),
        ("C", "class"),
    }
