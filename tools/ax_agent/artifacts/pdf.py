"""The PDF twin: one self-contained HTML page, printed by a browser over CDP.

The page is built here, by construction free of anything that loads: no
script, no link, no ``src`` but a data URI (images are embedded), no ``url(``
in its style. The browser it is printed by is the caller's (ax_exec's
launcher, started by the tool); this module only connects to its CDP endpoint
with playwright, in a context that is offline, has JavaScript disabled and
aborts every request. PDF bytes are not deterministic: Chromium embeds the
print date and document ids. Only the DOCX is.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping

from .docspec import (
    Band,
    DocSpec,
    HeadingBlock,
    ImageBlock,
    ListBlock,
    ParagraphBlock,
    TableBlock,
)
from .docx_render import check_image
from .errors import RenderFailed

# How long printing one page may take, in milliseconds (playwright's unit).
PRINT_TIMEOUT_MS = 30_000
PAGE_FORMAT = "A4"
# Chromium's print templates fill these classes; {date} is the print date.
TEMPLATE_CLASSES = {"pageNumber": "pageNumber", "totalPages": "totalPages", "date": "date"}
STYLE = """
body { font-family: "DejaVu Serif", "Liberation Serif", serif; font-size: 11pt; }
h1.title { font-size: 24pt; }
table { border-collapse: collapse; margin: 6pt 0; }
th, td { border: 1px solid #444; padding: 2pt 6pt; text-align: left; }
figure { margin: 6pt 0; }
figcaption { font-size: 9pt; font-style: italic; }
.page-break { break-after: page; }
"""


def build_html(spec: DocSpec, images: Mapping[str, bytes]) -> str:
    """The spec as one page that loads nothing: every image a data URI."""
    esc = html.escape
    body: list[str] = [f'<h1 class="title">{esc(spec.title)}</h1>']
    for block in spec.blocks:
        if isinstance(block, HeadingBlock):
            level = min(block.level + 1, 6)
            body.append(f"<h{level}>{esc(block.text)}</h{level}>")
        elif isinstance(block, ParagraphBlock):
            body.append(f"<p>{esc(block.text)}</p>")
        elif isinstance(block, ListBlock):
            tag = "ol" if block.ordered else "ul"
            items = "".join(f"<li>{esc(item)}</li>" for item in block.items)
            body.append(f"<{tag}>{items}</{tag}>")
        elif isinstance(block, TableBlock):
            head = "".join(f"<th>{esc(cell)}</th>" for cell in block.header)
            rows = "".join(
                "<tr>" + "".join(f"<td>{esc(cell)}</td>" for cell in row) + "</tr>"
                for row in block.rows
            )
            thead = f"<thead><tr>{head}</tr></thead>" if block.header else ""
            body.append(f"<table>{thead}<tbody>{rows}</tbody></table>")
        elif isinstance(block, ImageBlock):
            data = images[block.path]
            kind = check_image(block.path, data)
            uri = f"data:image/{kind};base64,{base64.b64encode(data).decode('ascii')}"
            width = f"{block.width_cm or 15.0}cm"
            caption = f"<figcaption>{esc(block.caption)}</figcaption>" if block.caption else ""
            body.append(
                f'<figure><img src="{uri}" alt="{esc(block.caption)}" '
                f'style="width: {width}">{caption}</figure>'
            )
        else:
            body.append('<div class="page-break"></div>')
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8">'
        f"<title>{esc(spec.title)}</title><style>{STYLE}</style></head>"
        f"<body>{''.join(body)}</body></html>"
    )


def band_template(band: Band | None) -> str:
    """A header or footer as Chromium's print template (its fields as its classes)."""
    if band is None:
        return "<span></span>"
    pieces = "".join(
        html.escape(value) if kind == "text" else f'<span class="{TEMPLATE_CLASSES[value]}"></span>'
        for kind, value in band.pieces()
    )
    return f'<div style="font-size: 9pt; width: 100%; text-align: center;">{pieces}</div>'


def print_pdf(cdp_url: str, spec: DocSpec, page_html: str) -> bytes:
    """``page_html`` printed to PDF by the browser at ``cdp_url``, offline, with no script."""
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError:
        raise RenderFailed(
            "toolchain-unavailable",
            "printing PDF needs playwright: pip install 'ax-tools[browser]'",
        ) from None
    try:
        with sync_playwright() as driver:
            browser = driver.chromium.connect_over_cdp(cdp_url, timeout=PRINT_TIMEOUT_MS)
            try:
                context = browser.new_context(java_script_enabled=False, offline=True)
                page = context.new_page()
                page.route("**/*", lambda route: route.abort())
                page.set_content(page_html, wait_until="load", timeout=PRINT_TIMEOUT_MS)
                banded = spec.header is not None or spec.footer is not None
                return page.pdf(
                    format=PAGE_FORMAT,
                    print_background=True,
                    display_header_footer=banded,
                    header_template=band_template(spec.header),
                    footer_template=band_template(spec.footer),
                    margin={"top": "2cm", "bottom": "2cm", "left": "2cm", "right": "2cm"},
                )
            finally:
                browser.close()
    except Error as exc:
        # playwright's message names the protocol step, not the page's content.
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise RenderFailed("print-failed", f"the browser could not print: {first}") from None
