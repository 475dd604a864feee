"""A loaded model's tokenizer, and the tokenizer and chat template of a GGUF file without
loading its weights.

For a server that cannot count tokens itself (Ollama, LM Studio), the user can name the GGUF
file the server runs: its vocabulary (``vocab_only``: a few MB, loaded in about a second)
tokenizes prompts exactly as the server's llama.cpp does, and its chat template renders them.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assistant.llm.base import ModelLoadError
from assistant.llm.gguf import MAGIC
from assistant.llm.template import ChatTemplate


class LlamaTokenizer:
    """Tokenizes as a ``Llama`` object's model (special tokens parsed); a text gets the BOS
    the vocabulary asks for unless it starts with it (as llama.cpp's server does)."""

    def __init__(self, llama: Any) -> None:
        self._llm = llama
        self._lock = threading.Lock()
        model = llama._model
        self._add_bos = bool(model.add_bos_token()) if hasattr(model, "add_bos_token") else False
        self._bos_text = self._special_text(llama.token_bos())
        self._eos_text = self._special_text(llama.token_eos())

    def _special_text(self, token: int) -> str:
        if token < 0:  # the model has none
            return ""
        data: bytes = self._llm.detokenize([token], special=True)
        return data.decode("utf-8", errors="replace")

    def _adds_bos(self, text: str) -> bool:
        return self._add_bos and not (self._bos_text and text.startswith(self._bos_text))

    def tokenize(self, text: str) -> list[int]:
        with self._lock:
            tokens: list[int] = self._llm.tokenize(
                text.encode("utf-8"), add_bos=self._adds_bos(text), special=True
            )
        return tokens

    def count(self, text: str) -> int:
        if not text:
            return 0
        with self._lock:
            return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))


class GGUFVocab(LlamaTokenizer):
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
            with quiet_stderr():
                llm = Llama(model_path=str(self.path), vocab_only=True, n_ctx=64, verbose=False)
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelLoadError(str(self.path), f"llama.cpp could not read it ({exc})") from exc
        super().__init__(llm)
        meta: dict[str, str] = dict(llm.metadata or {})
        self.template = ChatTemplate(
            meta.get("tokenizer.chat_template"),
            bos_token=self._bos_text,
            eos_token=self._eos_text,
            origin=f"gguf:{self.path.name}",
        )
        self.name = f"{self.path.name} tokenizer"

    def close(self) -> None:
        # Closing twice, or after a failed load, is harmless.
        with self._lock, contextlib.suppress(Exception):
            self._llm.close()


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """llama.cpp prints load logs and errors on fd 2; keep them out of the user's terminal."""
    try:
        fd = os.dup(2)
    except OSError:
        yield
        return
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
            try:
                yield
            finally:
                os.dup2(fd, 2)
    finally:
        os.close(fd)
