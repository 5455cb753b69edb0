"""Token estimates without a tokenizer.

ax carries no tokenizer dependency. For budgeting a frame and capping the
notes shelf it uses the common rule of thumb for English text and code: about
four characters per token, rounded up. It overestimates dense prose a little
and underestimates some symbol-heavy text; the caps leave room for both.
"""

from __future__ import annotations

import math

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)
