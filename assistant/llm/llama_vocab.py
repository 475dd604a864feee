"""The tokenizer and chat template of a GGUF file, without loading its weights.

For a server that cannot count tokens itself (Ollama, LM Studio), the user can name the GGUF
file the server runs: its vocabulary (``vocab_only``: a few MB, loaded in about a second)
tokenizes prompts exactly as the server's llama.cpp does, and its chat template renders them.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Any

from assistant.llm.base import ModelLoadError
from assistant.llm.gguf import MAGIC
from assistant.llm.llama_backend import _quiet_stderr, special_tokens
from assistant.llm.template import ChatTemplate


class GGUFVocab:
    """Tokenizes like the model in ``path`` (llama.cpp's tokenizer, special tokens parsed)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        if not self.path.is_file():
            raise ModelLoadError(str(self.path), "the tokenizer file does not exist.")
        with self.path.open("rb") as fh:
            if fh.read(4) != MAGIC:
                raise ModelLoadError(str(self.path), "it is not a GGUF file.")
        try:
            from llama_cpp import Llama
        except ImportError as exc:  # pragma: no cover - broken install
            raise ModelLoadError(str(self.path), f"llama-cpp-python is missing ({exc})") from exc
        try:
            with _quiet_stderr():
                self._llm: Any = Llama(
                    model_path=str(self.path), vocab_only=True, n_ctx=64, verbose=False
                )
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelLoadError(str(self.path), f"llama.cpp could not read it ({exc})") from exc
        self._lock = threading.Lock()
        meta: dict[str, str] = dict(self._llm.metadata or {})
        self.bos_text, self.eos_text, self._add_bos = special_tokens(self._llm)
        self.template = ChatTemplate(
            meta.get("tokenizer.chat_template"),
            bos_token=self.bos_text,
            eos_token=self.eos_text,
            origin=f"gguf:{self.path.name}",
        )
        self.name = f"{self.path.name} tokenizer"

    def tokenize_prompt(self, text: str) -> list[int]:
        """A rendered prompt's tokens: BOS added when the vocabulary asks for it and the
        text does not start with it (as llama.cpp's server does)."""
        add_bos = self._add_bos and not (self.bos_text and text.startswith(self.bos_text))
        with self._lock:
            tokens: list[int] = self._llm.tokenize(
                text.encode("utf-8"), add_bos=add_bos, special=True
            )
        return tokens

    def count(self, text: str) -> int:
        if not text:
            return 0
        with self._lock:
            return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def close(self) -> None:
        # Closing twice, or after a failed load, is harmless.
        with self._lock, contextlib.suppress(Exception):
            self._llm.close()
