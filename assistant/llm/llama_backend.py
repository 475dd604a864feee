# Over 500 lines: the owner of llama.cpp's internals (with the llama_* modules beside it).
"""The embedded engine: a GGUF model through llama-cpp-python, one ``Llama`` object used
from one thread (the model worker's).

Generation is driven at the token level, not through ``create_completion``, so the model
evaluates exactly the tokens every count uses, the KV-cache reuse is known per call, and
Stop takes effect within one token or inside a decode (:mod:`.llama_abort`).
"""

from __future__ import annotations

import codecs
import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from pathlib import Path
from typing import Any

from assistant.llm.base import (
    CancelToken,
    ChatMessages,
    ContextOverflowError,
    EncodedPrompt,
    EngineTuning,
    GenerationOptions,
    GenerationResult,
    GrammarError,
    KVState,
    LLMError,
    ModelInfo,
    ModelLoadError,
    StreamEvent,
    WarmResult,
)
from assistant.llm.cache_reuse import (
    ReuseFailed,
    ReusePlan,
    apply_plan,
    common_prefix,
    plan_reuse,
)
from assistant.llm.calibration import (
    DEFAULT_BATCH,
    Calibration,
    CalibrationStore,
    calibration_key,
    default_config,
)
from assistant.llm.calibration import calibrate as run_calibration
from assistant.llm.gguf import GGUFHeaderError, read_header
from assistant.llm.incremental_tokenizer import (
    PROBE_CONVERSATIONS,
    PROBE_TOOLS,
    TURN_ROLE_NAMES,
    IncrementalTokenizer,
    chars_before,
    overlaps,
    self_overlaps,
)
from assistant.llm.llama_abort import AbortSwitch
from assistant.llm.llama_constrained import GrammarSampler
from assistant.llm.llama_draft import DraftError, DraftModel
from assistant.llm.llama_kv import (
    LlamaMemory,
    PrefillConfig,
    current_config,
    decode_timed,
    evaluation_settings,
    keep_prefix,
    open_context,
    read_state,
    reuse_blocker,
    set_threads,
    write_state,
)
from assistant.llm.llama_speculative import (
    DRAFT_TOKENS,
    Drafter,
    DraftStats,
    FirstDraft,
    PromptLookup,
    lookup_generate,
)
from assistant.llm.llama_vocab import LlamaTokenizer, quiet_stderr
from assistant.llm.provision import file_sha256, is_verified
from assistant.llm.registry import ModelEntry, resolve_model
from assistant.llm.template import ChatTemplate
from assistant.llm.transcript import PromptForm, TranscriptTemplate, choose_form

log = logging.getLogger(__name__)

_FIRST_CTX = 256

#: End-of-turn texts of the usual templates: a reply stops at them even when the model
#: writes one as text rather than its end-of-generation token.
_STOP_TEXTS = ("<|im_end|>", "<end_of_turn>", "<|eot_id|>", "<|endoftext|>")
#: Sampler settings besides the temperature (``top_p`` is overridden per call).
_SAMPLER: dict[str, Any] = {"top_p": 0.95, "top_k": 40, "min_p": 0.05, "repeat_penalty": 1.1}


def check_model_file(path: Path, entry: ModelEntry | None) -> int | None:
    """The trained context of a model file that can work: the registry's, else the GGUF
    header's capped by what the file's weights can back (:attr:`GGUFHeader.usable_context`).
    Raises :class:`ModelLoadError` with a clear reason for a file that cannot work."""
    if not path.exists():
        hint = (
            " Run `make run` (or `python -m assistant provision`) to provide it." if entry else ""
        )
        raise ModelLoadError(str(path), "the file does not exist." + hint)
    if not path.is_file():
        raise ModelLoadError(str(path), "it is not a regular file.")
    if entry is None:  # the header is read (and checked) before any context exists
        try:
            header = read_header(path)
        except GGUFHeaderError as exc:
            raise ModelLoadError(str(path), f"{exc}.") from None
        except OSError as exc:
            raise ModelLoadError(str(path), f"it cannot be read ({exc.strerror or exc}).") from None
        if note := header.cap_note():
            log.warning("%s: %s", path.name, note)
        return header.usable_context
    size = path.stat().st_size
    if entry.size and size != entry.size:
        raise ModelLoadError(
            str(path),
            f"the file is damaged or truncated: {size:,} bytes, expected {entry.size:,}.",
        )
    if not is_verified(entry, path):
        raise ModelLoadError(
            str(path), "the file is damaged: its sha256 does not match the registry."
        )
    return entry.context_length


class LlamaBackend(LlamaTokenizer):
    """A loaded GGUF model. Create with :meth:`load`."""

    def __init__(self, llama: Any, path: Path, entry: ModelEntry | None) -> None:
        import llama_cpp

        super().__init__(llama)
        self._llama_cpp = llama_cpp
        self._path = path
        self._entry = entry
        meta: dict[str, str] = dict(llama.metadata or {})
        self._meta = meta
        model = llama._model
        self._vocab = model.vocab  # llama-cpp-python >= 0.3.16 always has it
        self._auto_form = choose_form(
            entry.instruction_tuned if entry else None, meta, path.name
        )
        #: How the chat is shown to the model: its chat template or the transcript form.
        self.prompt_form: PromptForm = self._auto_form[0]
        self.template = self._make_template(self.prompt_form)
        arch = meta.get("general.architecture", "unknown")
        self.info = ModelInfo(
            name=entry.name if entry else path.stem, path=str(path),
            trained_context=int(model.n_ctx_train()), context_window=int(llama.n_ctx()),
            architecture=arch,
            chat_template_source=self.template.origin,
            supports_native_tools=self.template.native_tools,
            tool_result_tag=self.template.result_tag,
            size_bytes=path.stat().st_size,
            extra={"general.name": meta.get("general.name", ""),
                   "prompt_form": self._describe_form()},
        )
        self.name = f"{self.info.name} tokenizer"
        self._prompt_lock = threading.Lock()
        self._incremental: IncrementalTokenizer | None = None
        self._incremental_state = "unchecked"  # then "on" or "off"
        self._incremental_reason = ""
        self._verify_prompts = 3
        self._auto_prefill = current_config(llama)
        self.calibration: Calibration | None = None
        #: The smallest chunk moved after a changed span (0: off), tokens after each seam
        #: evaluated again instead, and why the model rules chunk reuse out (None: it does not).
        self.chunk_reuse = 0
        self.reuse_seam = 0
        self.chunk_reuse_blocker = reuse_blocker(llama)
        self._fingerprint: str | None = None
        #: GBNF text -> whether llama.cpp parses it (see :meth:`check_grammar`).
        self._grammars: dict[str, bool] = {}
        #: Prompt-lookup drafts per step (0: off; :mod:`.llama_speculative`).
        self.prompt_lookup = DRAFT_TOKENS if entry is not None and entry.prompt_lookup else 0
        self.draft_stats: DraftStats | None = None
        #: The draft model in use (:mod:`.llama_draft`), the one asked for, why it is not used.
        self.draft: DraftModel | None = None
        self._draft_wanted = ""
        self.draft_problem = ""
        self._abort = AbortSwitch()

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def load(
        cls,
        model: str | Path,
        *,
        n_ctx: int = 10_000,
        threads: int = 0,
        n_batch: int = 0,
        n_ubatch: int = 0,
        calibrate: bool = False,
        seed: int = 0,
        flash_attn: bool = False,
        flat_weights: bool | None = None,
    ) -> LlamaBackend:
        """Load a registry name or a GGUF path; ``n_ctx`` is capped by the trained length.

        ``threads``, ``n_batch``, ``n_ubatch``: 0 takes the calibrated value when
        ``calibrate`` (:mod:`.calibration`), else llama.cpp's usual. ``flash_attn`` is off by
        default: it slows generation (docs/PERFORMANCE.md, "Loading"). ``flat_weights``: no
        repacked weights (None: when the registry pairs the model with a draft model), so a
        verified draft gives exactly plain decoding's tokens (docs/PERFORMANCE.md,
        "Draft-model decoding").
        Raises :class:`ModelLoadError` for a file that cannot work.
        """
        path, entry = resolve_model(str(model))
        # Known before any context exists: a window beyond it is never allocated.
        trained = check_model_file(path, entry)
        try:
            from llama_cpp import Llama
        except ImportError as exc:  # pragma: no cover - broken install
            raise ModelLoadError(str(path), f"llama-cpp-python is not installed ({exc})") from exc
        ctx = min(n_ctx, trained) if trained else n_ctx
        if flat_weights is None:
            flat_weights = entry is not None and entry.draft_model is not None
        try:
            # A tiny context first: the real one is made once the prefill settings are known.
            with quiet_stderr(), _weights_off_amx(flat_weights):
                llama = Llama(
                    model_path=str(path),
                    n_ctx=min(ctx, _FIRST_CTX),
                    n_threads=threads or 1,
                    n_threads_batch=threads or 1,
                    n_batch=DEFAULT_BATCH,
                    seed=seed,
                    flash_attn=flash_attn,
                    verbose=False,
                )
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelLoadError(
                str(path), f"llama.cpp could not load it ({exc}); the file may be damaged."
            ) from exc
        # llama.cpp's trained length caps it too (it knows one when the header named none).
        ctx = min(ctx, int(llama._model.n_ctx_train()) or ctx)
        auto, calibration = _auto_prefill(llama, path, threads, flash_attn, calibrate)
        config = PrefillConfig(
            threads or auto.threads, n_batch or auto.n_batch, n_ubatch or auto.n_ubatch
        )
        try:
            with quiet_stderr():
                open_context(llama, config, ctx)
        except (ValueError, RuntimeError, OSError) as exc:
            llama.close()
            raise ModelLoadError(
                str(path), f"llama.cpp could not make a {ctx:,}-token context ({exc})."
            ) from exc
        backend = cls(llama, path, entry)
        if trained and backend.info.trained_context > trained:  # a header's claim, capped
            backend.info = dataclasses.replace(backend.info, trained_context=trained)
        backend._auto_prefill = auto
        backend.calibration = calibration
        return backend

    # -- incremental prompt tokenization --------------------------------------------------
    def _piece_tokens(self, piece: str, add_special: bool) -> list[int]:
        """``llama_tokenize`` of one piece (parse_special=True), buffer sized to the text."""
        data = piece.encode("utf-8")
        lc = self._llama_cpp
        size = len(data) + 8
        for _ in range(2):
            buf = (lc.llama_token * size)()
            n = int(lc.llama_tokenize(self._vocab, data, len(data), buf, size, add_special, True))
            if n >= 0:
                return list(buf[:n])
            size = -n
        raise RuntimeError(f"llama_tokenize failed on a prompt piece of {len(data)} bytes")

    def tokenize_prompt(self, text: str) -> list[int]:
        """Exactly ``tokenize(text)`` for a rendered prompt, from memoized pieces (the first
        prompts are also tokenized whole and compared: a difference turns the pieces off)."""
        inc = self._prompt_tokenizer()
        if inc is None:
            return self.tokenize(text)
        tokens = inc.tokens(text, self._adds_bos(text))
        if self._verify_prompts <= 0:
            return tokens
        self._verify_prompts -= 1
        full = self.tokenize(text)
        if full != tokens:
            reason = "it differed from a full tokenization on a prompt"
            log.warning(
                "%s: incremental prompt tokenization is off (%s); prompts are tokenized whole",
                self.info.name, reason,
            )
            self._incremental, self._incremental_state = None, "off"
            self._incremental_reason = reason
        return full

    @property
    def incremental_status(self) -> tuple[str, str]:
        """("on" | "off" | "unchecked", marker or the reason it is off)."""
        return self._incremental_state, self._incremental_reason

    def _prompt_tokenizer(self) -> IncrementalTokenizer | None:
        if self._incremental_state == "unchecked":
            with self._prompt_lock:
                if self._incremental_state == "unchecked":
                    try:
                        inc, reason = self._build_incremental()
                    except Exception as exc:  # never let the optimisation break counting
                        inc, reason = None, f"setup failed: {exc!r}"
                    self._incremental = inc
                    self._incremental_reason = reason
                    self._incremental_state = "on" if inc is not None else "off"
                    log.info(
                        "%s: incremental prompt tokenization %s (%s)",
                        self.info.name, self._incremental_state, reason,
                    )
        return self._incremental

    def _build_incremental(self) -> tuple[IncrementalTokenizer | None, str]:
        """Find the message-start marker, check the cut is exact, verify on probes."""
        lc, vocab = self._llama_cpp, self._vocab
        if lc.llama_vocab_get_add_eos(vocab) or lc.llama_vocab_get_add_sep(vocab):
            return None, "the tokenizer appends EOS/SEP"
        short = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
        with_gen = self.template.render(short, None, add_generation_prompt=True)
        without = self.template.render(short, None, add_generation_prompt=False)
        if not with_gen.startswith(without) or len(with_gen) == len(without):
            return None, "no separate generation prompt in the template"
        suffix = with_gen[len(without) :]
        n_vocab = int(lc.llama_vocab_n_tokens(vocab))
        special_attr = (
            lc.LLAMA_TOKEN_ATTR_CONTROL | lc.LLAMA_TOKEN_ATTR_USER_DEFINED
            | lc.LLAMA_TOKEN_ATTR_UNKNOWN
        )
        attrs = [int(lc.llama_vocab_get_attr(vocab, i)) for i in range(n_vocab)]
        specials = {
            i: bytes(lc.llama_vocab_get_text(vocab, i))
            for i in range(n_vocab)
            if attrs[i] & special_attr
        }
        marker = ""
        split_ok: Callable[[str], bool] | None = None
        # The marker is the special token the generation prompt starts with, if any.
        head = suffix.lstrip()
        first = self._llm.tokenize(head.encode("utf-8"), add_bos=False, special=True)[:1]
        mtext = specials.get(first[0], b"") if first else b""
        if mtext and head.startswith(mtext.decode("utf-8", errors="replace")):
            tok = first[0]
            marker = mtext.decode("utf-8")
            if attrs[tok] & lc.LLAMA_TOKEN_ATTR_LSTRIP:
                return None, f"marker {marker!r} strips whitespace before it"
            if self_overlaps(mtext):
                return None, f"marker {marker!r} can overlap itself"
            for other_id, other in specials.items():
                if other_id != tok and len(other) >= len(mtext) and overlaps(other, mtext):
                    return None, f"special token {other!r} can overlap marker {marker!r}"
        else:
            # A plain-text marker: only for SPM vocabularies without a space prefix.
            add_space_prefix = self._meta.get("tokenizer.ggml.add_space_prefix", "true")
            if int(lc.llama_vocab_type(vocab)) != lc.LLAMA_VOCAB_TYPE_SPM:
                return None, "no special message marker and not an SPM vocabulary"
            if add_space_prefix.lower() != "false":
                return None, "no special message marker and an SPM space prefix"
            ends = [suffix.find(r) for r in TURN_ROLE_NAMES if suffix.find(r) > 0]
            marker = suffix[: min(ends)].lstrip() if ends else ""
            if len(marker) < 2:
                return None, "no message marker found in the generation prompt"
            bad = chars_before(
                (bytes(lc.llama_vocab_get_text(vocab, i)) for i in range(n_vocab)),
                marker[0].encode("utf-8"),
            )

            def split_ok(c: str) -> bool:
                return c.encode("utf-8") not in bad and c.replace(" ", "\u2581").encode(
                    "utf-8"
                ) not in bad

        inc = IncrementalTokenizer(marker, self._piece_tokens, split_ok)
        for probe in PROBE_CONVERSATIONS:
            for tools in (None, PROBE_TOOLS):
                try:
                    text = self.template.render(list(probe), tools)
                except Exception:  # a template may reject a probe (roles, tools)
                    continue
                if inc.tokens(text, self._adds_bos(text)) != self.tokenize(text):
                    return None, f"probe mismatch with marker {marker!r}"
        kind = "special token" if split_ok is None else "text"
        return inc, f"marker {marker!r} ({kind})"

    # -- prompts --------------------------------------------------------------------------
    def _make_template(self, form: PromptForm) -> ChatTemplate:
        if form == "transcript":
            return TranscriptTemplate(bos_token=self._bos_text, eos_token=self._eos_text)
        return ChatTemplate(
            self._meta.get("tokenizer.chat_template"), bos_token=self._bos_text,
            eos_token=self._eos_text, origin="gguf",
        )

    def _describe_form(self) -> str:
        auto, why = self._auto_form
        if self.prompt_form == auto:
            return f"{self.prompt_form} ({why})"
        return f"{self.prompt_form} (set in Settings; automatic would be {auto}: {why})"

    def use_prompt_form(self, form: PromptForm | None) -> None:
        """Show the chat in ``form`` (None: automatic), before the first prompt is counted."""
        form = form or self._auto_form[0]
        if form == self.prompt_form:
            return
        with self._prompt_lock:
            self.prompt_form = form
            self.template = self._make_template(form)
            self._incremental, self._incremental_state = None, "unchecked"
            self._verify_prompts = 3
        self.info = dataclasses.replace(
            self.info, chat_template_source=self.template.origin,
            supports_native_tools=self.template.native_tools,
            tool_result_tag=self.template.result_tag,
            extra={**self.info.extra, "prompt_form": self._describe_form()},
        )

    def render_prompt(
        self, messages: ChatMessages, tools: Sequence[dict[str, Any]] | None = None
    ) -> str:
        return self.template.render(messages, tools)

    def encode_prompt(
        self, messages: ChatMessages, tools: Sequence[dict[str, Any]] | None = None
    ) -> EncodedPrompt:
        """The rendered prompt and its tokens, for ``generate(..., prompt=...)``."""
        text = self.render_prompt(messages, tools)
        tokens = self.tokenize_prompt(text)
        return EncodedPrompt(count=len(tokens), text=text, tokens=tuple(tokens))

    def count_prompt(
        self, messages: ChatMessages, tools: Sequence[dict[str, Any]] | None = None
    ) -> int:
        text = self.render_prompt(messages, tools)
        inc = self._prompt_tokenizer()
        if inc is None or self._verify_prompts > 0:
            return len(self.tokenize_prompt(text))
        return inc.count(text, self._adds_bos(text))

    # -- generation -----------------------------------------------------------------------
    def cached_prefix(self, tokens: Sequence[int]) -> int:
        """How many leading ``tokens`` are already in the KV cache."""
        llm = self._llm
        return common_prefix(llm.input_ids[: llm.n_tokens], tokens)

    def save_state(self) -> KVState:
        """The chat's KV cells (only the used ones) with the tokens they hold."""
        llm = self._llm
        try:
            data = read_state(llm)
        except RuntimeError as exc:
            raise LLMError(str(exc)) from exc
        tokens = tuple(int(t) for t in llm.input_ids[: llm.n_tokens])
        return KVState(
            model=self.info.path, tokens=tokens, data=data,
            fingerprint=self.state_fingerprint(),
        )

    def load_state(self, state: KVState) -> None:
        """Restore a :meth:`save_state` snapshot; on refusal the cache is left empty."""
        if state.model != self.info.path or (
            state.fingerprint and state.fingerprint != self.state_fingerprint()
        ):
            raise LLMError(f"a KV state of {state.model} cannot be loaded into {self.info.path}")
        llm = self._llm
        if len(state.tokens) > int(llm.n_ctx()):
            raise LLMError("the KV state holds more tokens than this context window")
        llm.reset()
        if not write_state(llm, state.data):
            raise LLMError("llama.cpp refused the KV state (another context size?)")
        n = len(state.tokens)
        llm.input_ids[:n] = state.tokens
        llm.n_tokens = n

    def state_fingerprint(self) -> str:
        """sha256 of the model file and the context settings a state depends on."""
        if self._fingerprint is None:
            known = self._entry.sha256 if self._entry is not None else None
            parts = {"model_sha256": file_sha256(self._path, known),
                     **evaluation_settings(self._llm)}
            text = json.dumps(parts, sort_keys=True)
            self._fingerprint = hashlib.sha256(text.encode()).hexdigest()
        return self._fingerprint

    def reset_kv_cache(self) -> None:
        self._llm.reset()

    # -- prompt evaluation settings -------------------------------------------------------
    @property
    def prefill_config(self) -> PrefillConfig:
        return current_config(self._llm)

    def use_abort_callback(self, on: bool) -> None:
        """Whether Stop aborts inside a decode (off only to measure what that gains)."""
        self._abort.enabled = on

    def raw_prefill(
        self, tokens: list[int], config: PrefillConfig | None = None, piece: int | None = None
    ) -> list[tuple[int, float]]:
        """(tokens, seconds) of each ``piece`` of a raw ``llama_decode`` in a temporary
        context, for the benchmark to compare the app's prefill with."""
        return decode_timed(self._llm, config or self.prefill_config, tokens, piece)

    def tune_chunk_reuse(self, min_chunk: int) -> None:
        """Chunk reuse on (runs of ``min_chunk``+ tokens) or off (0), if the model allows."""
        self.chunk_reuse = max(0, min_chunk) if self.chunk_reuse_blocker is None else 0

    def cached_tokens(self) -> list[int]:
        """The tokens the KV cache holds, in order."""
        llm = self._llm
        return [int(t) for t in llm.input_ids[: llm.n_tokens]]

    def tune(self, tuning: EngineTuning) -> str:
        """Apply ``tuning``; new batch sizes need a new context, which empties the cache."""
        auto = self._auto_prefill
        want = PrefillConfig(
            tuning.threads or auto.threads,
            tuning.n_batch or auto.n_batch,
            tuning.n_ubatch or auto.n_ubatch,
        )
        have = current_config(self._llm)
        if (want.n_batch, want.n_ubatch) != (have.n_batch, have.n_ubatch):
            with quiet_stderr():
                open_context(self._llm, want)
            self.chunk_reuse_blocker = reuse_blocker(self._llm)
        elif want.threads != have.threads:
            set_threads(self._llm, want.threads)
        if self.draft is not None:
            self.draft.set_threads(want.threads)
        self.tune_chunk_reuse(max(1, tuning.min_chunk) if tuning.chunk_reuse else 0)
        lookup = tuning.prompt_lookup
        if lookup is None:
            lookup = self._entry is not None and self._entry.prompt_lookup
        self.prompt_lookup = DRAFT_TOKENS if lookup else 0
        draft = tuning.draft_model
        if draft is None:
            draft = (self._entry.draft_model if self._entry is not None else None) or ""
        self.use_draft_model(draft)
        self.use_prompt_form(tuning.prompt_form)
        return self.describe_tuning()

    def use_draft_model(self, name: str) -> None:
        """Draft with ``name`` (a registry name or a GGUF path; "": none). Loaded only here,
        so a model without a pairing never holds a second one in memory; a model that cannot
        draft for this one (another vocabulary, a broken file) is not used, and
        :attr:`draft_problem` says why."""
        if name == self._draft_wanted:
            return
        if self.draft is not None:
            self.draft.close()
        self.draft, self._draft_wanted, self.draft_problem = None, name, ""
        if not name:
            return
        try:
            path, entry = resolve_model(name)
            if path.resolve() == self._path.resolve():
                raise DraftError("it is the model itself")
            check_model_file(path, entry)
            draft = DraftModel.load(
                path, entry.name if entry else path.stem,
                threads=current_config(self._llm).threads, guard=_weights_off_amx,
            )
            try:
                draft.check_vocabulary(self._llm)
            except DraftError:
                draft.close()
                raise
        except (DraftError, ModelLoadError, OSError) as exc:
            self.draft_problem = f"{name}: {exc}"
            log.warning("%s: no draft model (%s)", self.info.name, self.draft_problem)
            return
        self.draft = draft
        log.info("%s: %s drafts tokens", self.info.name, draft.name)

    def describe_tuning(self) -> str:
        cfg = current_config(self._llm)
        how = "measured" if self.calibration is not None and cfg == self._auto_prefill else (
            "default" if cfg == self._auto_prefill else "set")
        if self.chunk_reuse:
            reuse = f"chunk reuse on (chunks of {self.chunk_reuse}+ tokens)"
        elif self.chunk_reuse_blocker:
            reuse = f"chunk reuse unavailable ({self.chunk_reuse_blocker})"
        else:
            reuse = "chunk reuse off"
        lookup = "prompt lookup on" if self.prompt_lookup else "prompt lookup off"
        if self.draft is not None:
            lookup += f"; draft model {self.draft.name}"
        elif self.draft_problem:
            lookup += f"; draft model not used ({self.draft_problem})"
        return f"{cfg.describe()} ({how}); {reuse}; {lookup}"

    def generate(
        self,
        messages: ChatMessages,
        options: GenerationOptions,
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        cancel: CancelToken | None = None,
        on_prefill: Callable[[int, int], None] | None = None,
        prompt: EncodedPrompt | None = None,
    ) -> Iterator[StreamEvent]:
        if prompt is not None and prompt.tokens is not None:
            tokens = list(prompt.tokens)  # encoded by the controller: not tokenized again
        else:
            tokens = self.tokenize_prompt(self.render_prompt(messages, tools))
        # After the transcript form's "Assistant:", the first space is not the reply's.
        return self.generate_tokens(
            tokens, options, cancel=cancel, on_prefill=on_prefill,
            trim_start=bool(self.template.stops),
        )

    def generate_tokens(
        self,
        tokens: list[int],
        options: GenerationOptions,
        *,
        cancel: CancelToken | None = None,
        on_prefill: Callable[[int, int], None] | None = None,
        trim_start: bool = False,
    ) -> Iterator[StreamEvent]:
        """Generate from exact prompt tokens (validation happens before the first event)."""
        n_ctx = int(self._llm.n_ctx())
        if len(tokens) >= n_ctx:
            raise ContextOverflowError(len(tokens), n_ctx)
        if not tokens:
            raise ValueError("empty prompt")
        if options.grammar is not None:
            self.check_grammar(options.grammar)

        def armed() -> Iterator[StreamEvent]:
            with self._abort.armed(self._llm._ctx.ctx, cancel):
                yield from self._stream_call(tokens, options, cancel, on_prefill, trim_start)

        return armed()

    def warm(
        self,
        messages: ChatMessages,
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        cancel: CancelToken | None = None,
        prompt: EncodedPrompt | None = None,
    ) -> WarmResult:
        """Evaluate the prompt :meth:`generate` would (all but its last token, through the
        same prefix and chunk reuse) into the cache, in batches, abortable between and
        inside them; what was evaluated stays cached (:class:`~.base.PromptWarmer`)."""
        if prompt is not None and prompt.tokens is not None:
            tokens = list(prompt.tokens)
        else:
            tokens = self.tokenize_prompt(self.render_prompt(messages, tools))
        n_ctx = int(self._llm.n_ctx())
        if len(tokens) >= n_ctx:
            raise ContextOverflowError(len(tokens), n_ctx)
        start = time.perf_counter()
        if not tokens:
            return WarmResult(0, 0, 0, 0.0)
        with self._abort.armed(self._llm._ctx.ctx, cancel):
            plan, finished = self._prefill(tokens, cancel, None)
        evaluated = max(0, int(self._llm.n_tokens) - plan.reused)
        return WarmResult(len(tokens), evaluated, plan.reused, time.perf_counter() - start,
                          finished)

    def check_grammar(self, grammar: str) -> None:
        """Raise :class:`GrammarError` unless llama.cpp parses ``grammar`` (memoized): a
        sampler built on a bad grammar is NULL and would crash sampling, so build one now."""
        known = self._grammars.get(grammar)
        if known is None:
            lc = self._llama_cpp
            with quiet_stderr():
                sampler = lc.llama_sampler_init_grammar(
                    self._vocab, grammar.encode("utf-8"), b"root"
                )
            known = bool(sampler)
            if sampler:
                lc.llama_sampler_free(sampler)
            if len(self._grammars) > 32:
                self._grammars.clear()
            self._grammars[grammar] = known
        if not known:
            raise GrammarError(f"{self.info.name}: llama.cpp cannot parse the grammar")

    def _constrained(
        self, tokens: list[int], grammar: str, temperature: float, top_p: float
    ) -> Generator[int, Any, None]:
        """Tokens sampled under ``grammar`` after :meth:`_prefill`."""
        llm = self._llm
        sampler = GrammarSampler(
            llm, grammar, temperature=temperature, top_p=top_p,
            top_k=int(_SAMPLER["top_k"]), min_p=float(_SAMPLER["min_p"]),
            repeat_penalty=float(_SAMPLER["repeat_penalty"]),
            seed=int(getattr(llm, "_seed", 0) or 0),
        )
        try:
            llm.eval(tokens[llm.n_tokens :])
            while True:
                token = sampler.sample()
                sampler.accept(token)
                yield token
                llm.eval([token])
        finally:
            log.debug("grammar sampling: %s", sampler.stats)
            sampler.close()

    def raw_generation_seconds(self, tokens: list[int], count: int, temperature: float) -> float:
        """Seconds for ``count`` tokens from ``Llama.generate`` (for the benchmark)."""
        start = time.perf_counter()
        stream = self._llm.generate(tokens, temp=temperature, reset=True, **_SAMPLER)
        for n, _token in enumerate(stream, start=1):
            if n >= count:
                break
        return time.perf_counter() - start

    def _prefill(
        self,
        tokens: list[int],
        cancel: CancelToken | None,
        on_prefill: Callable[[int, int], None] | None,
    ) -> tuple[ReusePlan, bool]:
        """Evaluate all but the last prompt token (left for fresh logits), reusing the
        common prefix and, when tuned on, cached chunks; returns (reused, finished)."""
        llm = self._llm
        target = len(tokens) - 1
        n_cached = int(llm.n_tokens)
        reuse = min(self.cached_prefix(tokens), target)
        plan = ReusePlan(reuse)
        if self.chunk_reuse > 0 and n_cached - reuse >= self.chunk_reuse:
            plan = plan_reuse(
                llm.input_ids[:n_cached], tokens, min_chunk=self.chunk_reuse, end=target,
                seam=self.reuse_seam,
            )
        done = plan.reused
        if plan.chunks:
            progress: Callable[[int], None] | None = None
            if on_prefill is not None:
                on_prefill(done, len(tokens))  # the start: what the cache already holds

                def progress(n: int) -> None:
                    nonlocal done
                    done += n
                    on_prefill(done, len(tokens))

            moved = self._move_chunks(plan, tokens, n_cached, cancel, progress)
            if moved is None:
                return ReusePlan(reuse), False
            plan = moved
        elif not keep_prefix(llm, reuse):
            plan = ReusePlan(0)
        step = max(1, int(llm.n_batch))
        at = plan.end
        if on_prefill is not None and at < target and not plan.chunks:
            on_prefill(at, len(tokens))  # the start: what the cache already holds
        with self._abortable() as aborted:
            while at < target:
                if cancel is not None and cancel.cancelled:
                    return plan, False
                chunk = tokens[at : min(target, at + step)]
                llm.eval(chunk)
                at += len(chunk)
                if on_prefill is not None:
                    on_prefill(at, len(tokens))
        return plan, not aborted[0]

    def _move_chunks(
        self,
        plan: ReusePlan,
        tokens: list[int],
        n_cached: int,
        cancel: CancelToken | None,
        progress: Callable[[int], None] | None,
    ) -> ReusePlan | None:
        """Apply a chunk-reuse plan: the plan done, the plain prefix on a refusal, None
        (cache cut back to the prefix) on a cancel."""
        llm = self._llm
        memory = LlamaMemory(llm, int(llm.n_batch))
        try:
            finished = apply_plan(
                memory, plan, tokens, n_cached, batch=int(llm.n_batch),
                cancelled=lambda: cancel is not None and cancel.cancelled, on_tokens=progress,
            )
            ok = finished and memory.positions() == (0, plan.end - 1)
            if finished and not ok:
                log.warning("chunk reuse left the cache inconsistent; evaluating instead")
        except ReuseFailed as exc:
            log.warning("chunk reuse refused (%s); evaluating instead", exc)
            finished, ok = True, False
        finally:
            memory.close()
        if ok:
            llm.input_ids[: plan.end] = tokens[: plan.end]
            llm.n_tokens = plan.end
            return plan
        keep_prefix(llm, plan.prefix)
        return ReusePlan(int(llm.n_tokens)) if finished else None

    @contextlib.contextmanager
    def _abortable(self) -> Iterator[list[bool]]:
        """Ends the block (the flag it gets set) when Stop aborted a decode in it, dropping
        the cells of the ubatches the aborted decode finished (uncounted)."""
        aborted = [False]
        try:
            yield aborted
        except RuntimeError:
            if not self._abort.raised:
                raise
            llm = self._llm
            keep_prefix(llm, int(llm.n_tokens))
            log.info("Stop aborted llama.cpp inside a decode (%d tokens kept in the cache)",
                     int(llm.n_tokens))
            aborted[0] = True

    def _stream_call(
        self,
        tokens: list[int],
        options: GenerationOptions,
        cancel: CancelToken | None,
        on_prefill: Callable[[int, int], None] | None,
        trim_start: bool,
    ) -> Iterator[StreamEvent]:
        llm = self._llm
        n_ctx = int(llm.n_ctx())
        start = time.perf_counter()
        plan, finished = self._prefill(tokens, cancel, on_prefill)
        prefill_s = time.perf_counter() - start
        reuse = plan.reused
        if finished:
            evaluated = len(tokens) - reuse
            budget = max(0, min(options.max_tokens, n_ctx - len(tokens)))
        else:  # stopped while reading the prompt: only what reached the cache counts
            evaluated = max(0, llm.n_tokens - reuse)
            budget = 0
        stops = options.stop + _STOP_TEXTS + self.template.stops
        # The transcript form's reply ends before a blank line and "User:": those line
        # ends are not the reply's (nor, with ``trim_start``, the space it starts with).
        trim = bool(self.template.stops)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        text = ""
        emitted = 0
        count = 0
        finish = "length" if finished else "cancelled"
        first: float | None = None
        gen_start = time.perf_counter()
        if budget > 0:
            sampled: Generator[int, Any, None] = (
                self._constrained(tokens, options.grammar, options.temperature, options.top_p)
                if options.grammar is not None
                else self._sampled(tokens, options)
            )
            # closing: frees a grammar's samplers on a break
            with contextlib.closing(sampled), self._abortable() as aborted:
                for token in sampled:
                    if first is None:
                        first = time.perf_counter() - start
                    if self._llama_cpp.llama_vocab_is_eog(self._vocab, token):
                        finish = "stop"
                        break
                    count += 1
                    text += decoder.decode(llm.detokenize([token], special=False))
                    if trim_start and not emitted:
                        text = text.lstrip()
                    hit = _find_stop(text, stops)
                    if hit is not None:
                        text = text[:hit].rstrip() if trim else text[:hit]
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
            if aborted[0]:
                finish = "cancelled"
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
                prompt_shifted=plan.shifted,
            )
        )

    def _sampled(self, tokens: list[int], options: GenerationOptions) -> Generator[int, Any, None]:
        """The reply's tokens: drafted (prompt lookup first, then the draft model) when
        either is on, else ``Llama.generate``."""
        sampling = {**_SAMPLER, "top_p": options.top_p, "temp": options.temperature}
        drafters: list[Drafter] = []
        if self.prompt_lookup > 0:
            drafters.append(PromptLookup(self.prompt_lookup))  # fresh for each reply
        if self.draft is not None:
            drafters.append(self.draft)
        if drafters:
            self.draft_stats = DraftStats()
            drafter = drafters[0] if len(drafters) == 1 else FirstDraft(*drafters)
            return lookup_generate(self._llm, tokens, drafter, self.draft_stats, **sampling)
        stream: Generator[int, Any, None] = self._llm.generate(tokens, reset=True, **sampling)
        return stream

    def close(self) -> None:
        if self.draft is not None:
            self.draft.close()
            self.draft = None
        with contextlib.suppress(Exception):
            self._llm.close()


def _auto_prefill(
    llama: Any, path: Path, threads: int, flash_attn: bool, calibrate: bool
) -> tuple[PrefillConfig, Calibration | None]:
    """This model's calibration on this machine (measured now if none is kept) or the
    defaults. ``ASSISTANT_CALIBRATE=0`` turns measuring off (the test suite does)."""
    if not calibrate or os.environ.get("ASSISTANT_CALIBRATE", "").strip() in {"0", "off", "no"}:
        return default_config(threads), None
    store = CalibrationStore()
    key = calibration_key(path, flash_attn) + (f"|threads={threads}" if threads else "")
    got = store.get(key)
    if got is None:
        got = run_calibration(llama, threads=threads)
        log.info(
            "%s: prefill calibrated in %.1f s: %s, %.0f tok/s (default %.0f tok/s); trials %s",
            path.name, got.seconds, got.config.describe(), got.tokens_per_s,
            got.default_tokens_per_s, got.trials,
        )
        try:
            store.put(key, got)
        except OSError as exc:
            log.warning("could not keep the prefill calibration: %s", exc)
    return got.config, got


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


_AMX_LOCK = threading.Lock()


def has_amx_kernels() -> bool:
    """Whether this llama.cpp build runs matrix products on AMX tiles."""
    import llama_cpp

    return b"AMX_INT8 = 1" in bytes(llama_cpp.llama_print_system_info())


@contextlib.contextmanager
def _weights_off_amx(flat: bool = False) -> Iterator[None]:
    """Load with weights out of the AMX buffers, whose kernels crash some CPUs
    (llama.cpp#20824; docs/PERFORMANCE.md, "Loading"); ``flat``: out of every extra buffer
    type, with the CPU's repacking, on any build (a batch of tokens is then computed as one
    token at a time is: draft verification gives plain decoding's reply)."""
    import llama_cpp.llama_cpp as native

    if not (flat or has_amx_kernels()) or not hasattr(native.llama_model_params,
                                                      "use_extra_bufts"):
        yield
        return
    with _AMX_LOCK:
        original = native.llama_model_default_params

        def defaults() -> Any:
            params = original()
            params.use_extra_bufts = False
            return params

        native.llama_model_default_params = defaults
        try:
            log.info("weights kept out of llama.cpp's extra buffers (%s)",
                     "draft verification" if flat else "AMX kernels")
            yield
        finally:
            native.llama_model_default_params = original
