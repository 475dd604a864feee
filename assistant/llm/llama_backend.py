"""The real backend: a GGUF model through llama-cpp-python.

One :class:`LlamaBackend` owns one ``Llama`` object and must be used from one thread at a
time (``assistant.llm.worker.ModelWorker`` guarantees that in the app).

Generation is driven at the token level rather than through ``create_completion`` so that:

* the prompt the model evaluates is exactly ``tokenize(render_prompt(messages))`` — the same
  tokens every count uses;
* the KV-cache reuse is known per call: the longest common prefix with the tokens already
  in the cache is kept, the rest is evaluated in ``n_batch`` chunks, and a cancel between
  chunks interrupts prompt evaluation;
* a cancel takes effect within one generated token.
"""

from __future__ import annotations

import codecs
import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from assistant.llm.base import (
    CancelToken,
    ChatMessages,
    ContextOverflowError,
    GenerationResult,
    ModelInfo,
    ModelLoadError,
    StreamEvent,
)
from assistant.llm.provision import is_verified
from assistant.llm.registry import ModelEntry, resolve_model
from assistant.llm.template import ChatTemplate

log = logging.getLogger(__name__)

GGUF_MAGIC = b"GGUF"


def check_model_file(path: Path, entry: ModelEntry | None = None) -> None:
    """Raise :class:`ModelLoadError` with a clear reason for a file that cannot work."""
    if not path.exists():
        hint = (
            " Run `make run` (or `python -m assistant provision`) to provide it." if entry else ""
        )
        raise ModelLoadError(str(path), "the file does not exist." + hint)
    if not path.is_file():
        raise ModelLoadError(str(path), "it is not a regular file.")
    size = path.stat().st_size
    with path.open("rb") as fh:
        magic = fh.read(4)
    if magic != GGUF_MAGIC:
        raise ModelLoadError(
            str(path), "it is not a GGUF model file (the first bytes are not 'GGUF')."
        )
    if entry is not None and entry.size and size != entry.size:
        raise ModelLoadError(
            str(path),
            f"the file is damaged or truncated: {size:,} bytes, expected {entry.size:,}.",
        )
    if entry is not None and not is_verified(entry, path):
        raise ModelLoadError(
            str(path), "the file is damaged: its sha256 does not match the registry."
        )


class LlamaBackend:
    """A loaded GGUF model. Create with :meth:`load`."""

    def __init__(self, llama: Any, path: Path, entry: ModelEntry | None, n_ctx: int) -> None:
        import llama_cpp

        self._llama_cpp = llama_cpp
        self._llm = llama
        self._path = path
        self._entry = entry
        meta: dict[str, str] = dict(llama.metadata or {})
        self._meta = meta
        model = llama._model
        self._vocab = getattr(model, "vocab", None)
        bos_id, eos_id = llama.token_bos(), llama.token_eos()
        self._bos_text = self._piece(bos_id) if bos_id >= 0 else ""
        self._eos_text = self._piece(eos_id) if eos_id >= 0 else ""
        self._add_bos = bool(model.add_bos_token()) if hasattr(model, "add_bos_token") else False
        source = meta.get("tokenizer.chat_template")
        self._template = ChatTemplate(
            source, bos_token=self._bos_text, eos_token=self._eos_text, origin="gguf"
        )
        self._stop_texts = tuple(
            t for t in ("<|im_end|>", "<end_of_turn>", "<|eot_id|>", "<|endoftext|>") if t
        )
        arch = meta.get("general.architecture", "unknown")
        self._info = ModelInfo(
            name=entry.name if entry else path.stem,
            path=str(path),
            trained_context=int(model.n_ctx_train()),
            context_window=int(llama.n_ctx()),
            architecture=arch,
            chat_template_source=self._template.origin,
            supports_native_tools=self._template.native_tools,
            size_bytes=path.stat().st_size,
            extra={"general.name": meta.get("general.name", "")},
        )
        self.name = f"{self._info.name} tokenizer"

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def load(
        cls,
        model: str | Path,
        *,
        n_ctx: int = 10_000,
        threads: int = 0,
        n_batch: int = 512,
        seed: int = 0,
    ) -> LlamaBackend:
        """Load a registry name or a GGUF path. ``n_ctx`` is capped by the trained length.

        Raises :class:`ModelLoadError` for a missing, truncated, non-GGUF or unloadable file.
        """
        path, entry = resolve_model(str(model))
        check_model_file(path, entry)
        try:
            from llama_cpp import Llama
        except ImportError as exc:  # pragma: no cover - broken install
            raise ModelLoadError(str(path), f"llama-cpp-python is not installed ({exc})") from exc
        n_threads = threads or max(1, (os.cpu_count() or 2))
        trained = entry.context_length if entry else None
        ctx = min(n_ctx, trained) if trained else n_ctx

        def open_llama(n_ctx: int) -> Any:
            with _quiet_stderr():
                return Llama(
                    model_path=str(path),
                    n_ctx=n_ctx,
                    n_threads=n_threads,
                    n_threads_batch=n_threads,
                    n_batch=n_batch,
                    seed=seed,
                    verbose=False,
                )

        try:
            llama = open_llama(ctx)
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelLoadError(
                str(path), f"llama.cpp could not load it ({exc}); the file may be damaged."
            ) from exc
        train_ctx = int(llama._model.n_ctx_train())
        if entry is None and train_ctx and n_ctx > train_ctx:
            # An unregistered file: now that the trained length is known, cap the window.
            llama.close()
            llama = open_llama(train_ctx)
        return cls(llama, path, entry, int(llama.n_ctx()))

    # -- tokenizer ------------------------------------------------------------------------
    def _piece(self, token: int) -> str:
        data: bytes = self._llm.detokenize([token], special=True)
        return data.decode("utf-8", errors="replace")

    def tokenize(self, text: str) -> list[int]:
        add_bos = self._add_bos and not (self._bos_text and text.startswith(self._bos_text))
        tokens: list[int] = self._llm.tokenize(text.encode("utf-8"), add_bos=add_bos, special=True)
        return tokens

    def count(self, text: str) -> int:
        if not text:
            return 0
        tokens: list[int] = self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        return len(tokens)

    # -- prompts --------------------------------------------------------------------------
    @property
    def info(self) -> ModelInfo:
        return self._info

    @property
    def template(self) -> ChatTemplate:
        return self._template

    def render_prompt(
        self, messages: ChatMessages, tools: Sequence[dict[str, Any]] | None = None
    ) -> str:
        return self._template.render(messages, tools)

    def count_prompt(
        self, messages: ChatMessages, tools: Sequence[dict[str, Any]] | None = None
    ) -> int:
        return len(self.tokenize(self.render_prompt(messages, tools)))

    # -- generation -----------------------------------------------------------------------
    def _is_eog(self, token: int) -> bool:
        if self._vocab is not None:
            return bool(self._llama_cpp.llama_vocab_is_eog(self._vocab, token))
        return bool(token == self._llm.token_eos())

    def cached_prefix(self, tokens: Sequence[int]) -> int:
        """How many leading ``tokens`` are already in the KV cache."""
        llm = self._llm
        n = 0
        for a, b in zip(llm.input_ids[: llm.n_tokens], tokens, strict=False):
            if a != b:
                break
            n += 1
        return n

    def generate(
        self,
        messages: ChatMessages,
        *,
        max_tokens: int,
        temperature: float = 0.2,
        top_p: float = 0.95,
        tools: Sequence[dict[str, Any]] | None = None,
        stop: Sequence[str] = (),
        cancel: CancelToken | None = None,
        on_prefill: Callable[[int, int], None] | None = None,
    ) -> Iterator[StreamEvent]:
        tokens = self.tokenize(self.render_prompt(messages, tools))
        return self.generate_tokens(
            tokens,
            max_tokens=max_tokens,
            temperature=temperature,
            top_p=top_p,
            stop=stop,
            cancel=cancel,
            on_prefill=on_prefill,
        )

    def generate_tokens(
        self,
        tokens: list[int],
        *,
        max_tokens: int,
        temperature: float = 0.2,
        top_p: float = 0.95,
        stop: Sequence[str] = (),
        cancel: CancelToken | None = None,
        on_prefill: Callable[[int, int], None] | None = None,
    ) -> Iterator[StreamEvent]:
        """Generate from exact prompt tokens (validation happens before the first event)."""
        n_ctx = int(self._llm.n_ctx())
        if len(tokens) >= n_ctx:
            raise ContextOverflowError(len(tokens), n_ctx)
        if not tokens:
            raise ValueError("empty prompt")
        return self._stream(tokens, max_tokens, temperature, top_p, stop, cancel, on_prefill)

    def _prefill(
        self,
        tokens: list[int],
        cancel: CancelToken | None,
        on_prefill: Callable[[int, int], None] | None,
    ) -> tuple[int, bool]:
        """Evaluate all but the last prompt token, reusing the cached prefix.

        Returns (tokens reused, finished). ``generate`` then finds every token but the last
        cached and evaluates only that one, which yields fresh logits.
        """
        llm = self._llm
        target = len(tokens) - 1
        reuse = min(self.cached_prefix(tokens), target)
        if reuse > 0 and llm._ctx.kv_cache_seq_rm(-1, reuse, -1):
            llm.n_tokens = reuse
        else:
            llm.reset()
            reuse = 0
        step = max(1, int(llm.n_batch))
        done = reuse
        while done < target:
            if cancel is not None and cancel.cancelled:
                return reuse, False
            chunk = tokens[done : min(target, done + step)]
            llm.eval(chunk)
            done += len(chunk)
            if on_prefill is not None:
                on_prefill(done, len(tokens))
        return reuse, True

    def _stream(
        self,
        tokens: list[int],
        max_tokens: int,
        temperature: float,
        top_p: float,
        stop: Sequence[str],
        cancel: CancelToken | None,
        on_prefill: Callable[[int, int], None] | None,
    ) -> Iterator[StreamEvent]:
        llm = self._llm
        n_ctx = int(llm.n_ctx())
        start = time.perf_counter()
        reuse, finished = self._prefill(tokens, cancel, on_prefill)
        prefill_s = time.perf_counter() - start
        evaluated = len(tokens) - reuse
        if not finished:
            yield StreamEvent(
                result=GenerationResult(
                    text="",
                    prompt_tokens=len(tokens),
                    prompt_evaluated=llm.n_tokens - reuse,
                    prompt_reused=reuse,
                    completion_tokens=0,
                    finish_reason="cancelled",
                    prefill_s=prefill_s,
                )
            )
            return
        budget = max(0, min(max_tokens, n_ctx - len(tokens)))
        stops = tuple(stop) + self._stop_texts
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        text = ""
        emitted = 0
        count = 0
        finish = "length"
        first: float | None = None
        gen_start = time.perf_counter()
        if budget == 0:
            finish = "length"
        else:
            for token in llm.generate(
                tokens,
                temp=temperature,
                top_p=top_p,
                top_k=40,
                min_p=0.05,
                repeat_penalty=1.1,
                reset=True,
            ):
                if first is None:
                    first = time.perf_counter() - start
                if self._is_eog(token):
                    finish = "stop"
                    break
                count += 1
                text += decoder.decode(llm.detokenize([token], special=False))
                hit = _find_stop(text, stops)
                if hit is not None:
                    text = text[:hit]
                    finish = "stop"
                    break
                # Hold back a tail that could be the start of a stop string.
                safe = len(text) - _partial_stop_len(text, stops)
                if safe > emitted:
                    yield StreamEvent(delta=text[emitted:safe])
                    emitted = safe
                if cancel is not None and cancel.cancelled:
                    finish = "cancelled"
                    break
                if count >= budget:
                    finish = "length"
                    break
        text += decoder.decode(b"", final=True) if finish != "stop" else ""
        if len(text) > emitted:
            yield StreamEvent(delta=text[emitted:])
        yield StreamEvent(
            result=GenerationResult(
                text=text,
                prompt_tokens=len(tokens),
                prompt_evaluated=evaluated,
                prompt_reused=reuse,
                completion_tokens=count,
                finish_reason=finish,
                prefill_s=prefill_s,
                generate_s=time.perf_counter() - gen_start,
                first_token_s=first,
            )
        )

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._llm.close()


def _find_stop(text: str, stops: Sequence[str]) -> int | None:
    hits = [text.find(s) for s in stops if s and s in text]
    return min(hits) if hits else None


def _partial_stop_len(text: str, stops: Sequence[str]) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of a stop string."""
    best = 0
    for s in stops:
        for k in range(min(len(s) - 1, len(text)), 0, -1):
            if text.endswith(s[:k]):
                best = max(best, k)
                break
    return best


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
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
