"""The documents pack: render, validate, print and rasterise a 40-page-ish report.

Measured side by side, each the median of RUNS runs (the machine is shared; the spread
is printed too):

1. ``render_docx`` of a spec with 60 headings, 300 paragraphs, 20 tables and 5 lists,
   and ``validate_docx`` of its bytes (parse back and compare);
2. ``readers.read`` of that DOCX (the summary read_document gives);
3. the PDF twin: launching the contained Chromium, printing, and ``validate_pdf``
   (skipped, saying so, without Chromium or playwright);
4. ``raster.rasterise`` of its first page (and the PNG's bytes and scale).

Run: ``.venv/bin/python tests/bench/documents.py``. Figures only: no budget.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ax_agent.artifacts import docx_render, pdf, raster, readers, validate
from ax_agent.artifacts.docspec import DocSpec

RUNS = 5


def spec() -> DocSpec:
    blocks: list[dict[str, Any]] = []
    for chapter in range(20):
        blocks.append({"kind": "heading", "text": f"Chapter {chapter}", "level": 1})
        for section in range(2):
            blocks.append({"kind": "heading", "text": f"Part {chapter}.{section}", "level": 2})
            blocks += [
                {"kind": "paragraph", "text": f"Paragraph {n} of {chapter}. " * 12}
                for n in range(7)
            ]
        blocks.append({"kind": "table", "header": ["a", "b", "c"], "rows": [["1", "2", "3"]] * 8})
        if chapter % 4 == 0:
            blocks.append({"kind": "list", "ordered": True, "items": ["x", "y", "z"]})
    return DocSpec.model_validate(
        {
            "title": "Bench",
            "footer": {"text": "Page {pageNumber} of {totalPages}"},
            "blocks": blocks,
        }
    )


def timed(work: Callable[[], Any]) -> tuple[Any, float, float]:
    times = []
    result = None
    for _ in range(RUNS):
        start = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - start)
    return result, statistics.median(times), max(times) - min(times)


def row(name: str, median: float, spread: float, note: str = "") -> None:
    print(f"{name:<34} {median * 1000:>9.1f} ms  (spread {spread * 1000:.1f} ms)  {note}")


def main() -> int:
    document = spec()
    data, median, spread = timed(lambda: docx_render.render_docx(document, {}))
    row("render_docx", median, spread, f"{len(data)} bytes")
    checked, median, spread = timed(lambda: validate.validate_docx(document, data))
    row("validate_docx", median, spread, f"failures {len(checked.failures)}")
    summary, median, spread = timed(lambda: readers.read(data))
    row("readers.read (DOCX)", median, spread, f"coverage {summary.coverage}")
    from ax_exec import find_chromium, launched_chromium

    if find_chromium(os.environ) is None:
        print("PDF twin: skipped (no chromium on PATH: Debian's 'chromium' package)")
        return 0
    page = pdf.build_html(document, {})
    with tempfile.TemporaryDirectory() as state:

        def printed() -> bytes:
            with launched_chromium(Path(state), os.environ) as browser:
                return pdf.print_pdf(browser.cdp_url, document, page)

        printed_pdf, median, spread = timed(printed)
    row("launch Chromium + print", median, spread, f"{len(printed_pdf)} bytes")
    (result, pages), median, spread = timed(lambda: validate.validate_pdf(document, printed_pdf))
    row("validate_pdf", median, spread, f"{pages} pages, failures {len(result.failures)}")
    images, median, spread = timed(lambda: raster.rasterise(printed_pdf, [1]))
    png = images[0].png or b""
    row("rasterise page 1", median, spread, f"{len(png)} bytes at scale {images[0].scale}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
