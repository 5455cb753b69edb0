"""The vision choke: whether a request's model gets a tool result's images, and what instead.

One decision, read from the catalog rather than from a provider's name: a
model the catalog says takes images gets the bytes; any other model gets an
explicit pointer in their place, saying where the image is kept and why it is
not shown. The image itself is untouched either way.
"""

from __future__ import annotations

import base64

from ..window.catalog import model_limits
from .base import ImagePart


def takes_images(model: str) -> bool:
    return model_limits(model).vision


def pointer(image: ImagePart, model: str) -> str:
    """The text that stands in for ``image`` in a request to ``model``."""
    why = (
        f"the catalog says {model} takes no images"
        if model_limits(model).known
        else f"{model} is not in ax's catalog, so it is not assumed to take images"
    )
    return (
        f"[ax: image {image.source} ({image.media_type}, {len(image.data)} bytes, sha256 "
        f"{image.sha256}) is kept as evidence but not shown: {why}.]"
    )


def base64_data(image: ImagePart) -> str:
    return base64.b64encode(image.data).decode("ascii")
