"""PDF pages as PNG images, each within a byte ceiling, rasterised by pypdfium2.

A page is rendered at ``RASTER_START_SCALE`` (capped so its longer side is at
most ``RASTER_MAX_SIDE_PX``), and again at ``RASTER_SCALE_STEP`` times the
scale while its PNG is over ``PAGE_IMAGE_MAX_BYTES``, down to
``RASTER_MIN_SCALE``; a page still too big is reported, not sent. The PNG is
encoded here (zlib, no Pillow), so the same page at the same scale gives the
same bytes.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Any

from .errors import DOCS_EXTRA_CURE, ToolchainUnavailable, Unsupported

PAGE_IMAGE_MAX_BYTES = 1024 * 1024
RASTER_START_SCALE = 1.5  # 108 dpi: body text stays legible
RASTER_MIN_SCALE = 0.25
RASTER_SCALE_STEP = 0.7
RASTER_MAX_SIDE_PX = 2_000
PNG_LEVEL = 6


@dataclass(frozen=True)
class RasterPage:
    page: int  # 1-based
    png: bytes | None  # None: over the ceiling even at RASTER_MIN_SCALE
    width: int
    height: int
    scale: float


def page_count(data: bytes) -> int:
    with _opened(data) as document:
        return len(document)


def rasterise(data: bytes, pages: list[int]) -> list[RasterPage]:
    """Pages ``pages`` (1-based, each within the document) of the PDF ``data``."""
    with _opened(data) as document:
        found: list[RasterPage] = []
        for number in pages:
            page = document[number - 1]
            try:
                found.append(_fit(page, number))
            finally:
                page.close()
        return found


class _opened:
    def __init__(self, data: bytes) -> None:
        try:
            import pypdfium2  # type: ignore[import-untyped]
        except ImportError:
            raise ToolchainUnavailable(
                f"rasterising PDF pages needs pypdfium2: {DOCS_EXTRA_CURE}"
            ) from None
        try:
            self.document: Any = pypdfium2.PdfDocument(data)
        except pypdfium2.PdfiumError:
            # pdfium's message names an error class, but keep only the fact.
            raise Unsupported("malformed", "pdfium cannot open the PDF") from None

    def __enter__(self) -> Any:
        return self.document

    def __exit__(self, *_exc: object) -> None:
        self.document.close()


def _fit(page: Any, number: int) -> RasterPage:
    width_pt, height_pt = page.get_size()
    scale = min(RASTER_START_SCALE, RASTER_MAX_SIDE_PX / max(width_pt, height_pt, 1.0))
    while True:
        bitmap = page.render(scale=scale, rev_byteorder=True)
        try:
            png = encode_png(bitmap.buffer, bitmap.width, bitmap.height, bitmap.stride)
            width, height = bitmap.width, bitmap.height
        finally:
            bitmap.close()
        if len(png) <= PAGE_IMAGE_MAX_BYTES:
            return RasterPage(number, png, width, height, round(scale, 4))
        if scale * RASTER_SCALE_STEP < RASTER_MIN_SCALE:
            return RasterPage(number, None, width, height, round(scale, 4))
        scale *= RASTER_SCALE_STEP


def encode_png(buffer: Any, width: int, height: int, stride: int) -> bytes:
    """An 8-bit RGB PNG of a pdfium bitmap (rows ``stride`` bytes apart)."""
    raw = memoryview(buffer).cast("B")
    row = width * 3
    lines = b"".join(b"\x00" + bytes(raw[y * stride : y * stride + row]) for y in range(height))

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(lines, PNG_LEVEL))
        + chunk(b"IEND", b"")
    )
