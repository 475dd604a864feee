# Over 500 lines: every setting with its description and check in one versioned schema.
"""Typed settings: context policies per mode, model, engine, sampling, tools and UI, saved as
JSON in the config directory. The policy rules: docs/ARCHITECTURE.md ("Context policies in
force")."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    ValidationError,
    field_validator,
    model_validator,
)

from assistant import jsonlimits, paths
from assistant.atomicfile import make_dirs, write_atomically
from assistant.fieldnames import field_path, first_error

SETTINGS_SCHEMA_VERSION = 1



class Mode(StrEnum):
    """The context policies, by name: the one list argparse, the settings, the settings dialog
    and ``/mode`` read (saved as the plain strings, so settings files are unchanged)."""

    LOCAL = "local"
    STANDARD = "standard"

    @property
    def label(self) -> str:
        """The mode's name as the window writes it ("Local")."""
        return self.value.capitalize()


#: The modes' names, in the order the settings dialog, argparse and ``/mode`` list them.
MODE_NAMES: tuple[str, ...] = tuple(m.value for m in Mode)

#: A settings field holding a mode: saved as its name, also when a copy was given the plain
#: name (``model_copy(update=...)`` does not validate).
ModeName = Annotated[Mode, PlainSerializer(str, return_type=str)]

#: A measured effective context never shrinks the window below this (or the window).
MIN_MEASURED_WINDOW = 2_048
#: Floors applied when values are scaled down for a small window.
MIN_RESERVE = 256
MIN_SUMMARY_BUDGET = 128
MIN_KEEP_RECENT = 256
#: Standard's least kept recent text on a smaller window than its own (docs/ARCHITECTURE.md).
STANDARD_KEEP_SHARE = 0.4
#: Largest window a policy may name (2^20 tokens, beyond any model's trained length today):
#: absurd values are refused rather than scaling protect and minimum down to nothing.
MAX_WINDOW = 1_048_576

#: What the settings dialog calls each field; errors about settings use the same names.
SETTING_LABELS: dict[str, str] = {
    "mode": "Active mode",
    **{mode.value: f"{mode.label} mode" for mode in Mode},
    "window": "Context window",
    "protect": "Protect newest tool output",
    "minimum": "Prune only if it frees at least",
    "reserve": "Reserve for the reply",
    "keep_recent": "Keep recent (unsummarized)",
    "summary_budget": "Summary budget",
    "compaction": "",
    "auto_compact": "Summarize older messages when the window is full",
    "compact_on_overflow": "On a context overflow, summarize and retry once",
    "prune": "Clear old tool outputs before every model call",
    "compact_ahead": "Write the next summary ahead of time, while the model is idle",
    "read_ahead": "Read your message while you type it, while the model is idle",
    "use_measured_context": "Keep prompts within the size the model was measured to use well",
    "sampling": "",
    "threads": "CPU threads",
    "temperature": "Temperature",
    "top_p": "Top p",
    "max_reply_tokens": "Longest reply (tokens)",
    "seed": "Seed",
    "model": "Model",
    "system_prompt": "System prompt",
    "workspace": "Workspace folder",
    "tool_approval": "Tool approval",
    "theme": "Theme",
    "enter_sends": "Input",
    "step_limit": "Tool steps per reply",
    "schema_version": "Settings format version",
    "engine": "Engine",
    "kind": "Engine",
    "server": "Server",
    "base_url": "Address",
    "tokenizer_gguf": "Tokenizer GGUF",
    "tool_calls": "Tool calls",
    "timeout_s": "Timeout",
    "reply_limit_s": "Longest reply time",
}


def setting_name(loc: Sequence[str | int]) -> str:
    """A settings field as the dialog names it, e.g. "Local mode › Context window"."""
    return field_path(loc, SETTING_LABELS)


class _Section(BaseModel):
    """A group of settings: unknown keys refused, every assignment checked."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ModePolicy(_Section):
    """What the user configured for one mode. All values are tokens."""

    window: int = Field(
        description="Context window. Local: used as is, or the model's trained length if "
        "smaller. Standard: a cap on the model's trained length.",
        ge=1,
        le=MAX_WINDOW,
    )
    protect: int = Field(description="Newest tool-output tokens never pruned.", ge=0)
    minimum: int = Field(description="Prune only when it frees at least this many.", ge=0)
    reserve: int = Field(description="Room kept for the reply.", ge=0)
    keep_recent: int = Field(description="Tail of the chat left unsummarized.", ge=0)
    summary_budget: int = Field(description="Largest summary, in tokens.", ge=1)

    @model_validator(mode="after")
    def _fits(self) -> ModePolicy:
        total = self.reserve + self.keep_recent + self.summary_budget
        if total > self.window:
            names = [SETTING_LABELS[k] for k in ("reserve", "keep_recent", "summary_budget")]
            raise ValueError(
                f"{' + '.join(names)} ({total:,}) must fit in the "
                f"{SETTING_LABELS['window']} ({self.window:,})"
            )
        return self

    def effective(self, mode: Mode, trained_context: int | None) -> EffectivePolicy:
        """The values the engine uses for a model with ``trained_context`` tokens: capped by it and
        scaled (the rule: docs/ARCHITECTURE.md, "Context policies in force")."""
        eff_window = self.window if not trained_context else min(self.window, trained_context)
        if eff_window == self.window:
            return EffectivePolicy(mode=mode, **self.model_dump())
        factor = eff_window / self.window
        reserve = max(MIN_RESERVE, int(self.reserve * factor))
        keep_recent = max(MIN_KEEP_RECENT, int(self.keep_recent * factor))
        if mode == Mode.STANDARD:  # never less than its share of the window (Local keeps 30%)
            share = min(self.keep_recent, int(eff_window * STANDARD_KEEP_SHARE))
            keep_recent = max(keep_recent, share)
        summary_budget = max(MIN_SUMMARY_BUDGET, int(self.summary_budget * factor))
        # Floors that do not fit: shares of the window, so the three always fit.
        if reserve + keep_recent + summary_budget > eff_window:
            reserve = eff_window // 4
            keep_recent = eff_window // 4
            summary_budget = max(1, eff_window // 8)
        return EffectivePolicy(
            mode=mode, window=eff_window, protect=int(self.protect * factor),
            minimum=int(self.minimum * factor), reserve=reserve, keep_recent=keep_recent,
            summary_budget=summary_budget, scaled=True,
        )


@dataclass(frozen=True)
class EffectivePolicy:
    """The values in force for the loaded model: ``window`` is the target, ``hard_window`` (0:
    the same) the hard limit the latest turn may use (see :meth:`for_turn`)."""

    mode: Mode
    window: int
    protect: int
    minimum: int
    reserve: int
    keep_recent: int
    summary_budget: int
    scaled: bool = False
    hard_window: int = 0

    @property
    def limit(self) -> int:
        """The hard limit for prompt + reserve: the model's window."""
        return max(self.hard_window, self.window)

    def for_turn(self, latest: int, beside: int) -> EffectivePolicy:
        """The policy for a call whose latest turn takes ``latest`` tokens beside ``beside`` that
        cannot be compacted away: the target, or up to the hard limit what the turn needs."""
        need = latest + beside + self.reserve
        return replace(self, window=min(self.limit, max(self.window, need)),
                       hard_window=self.limit)

    def describe(self) -> str:
        note = " (scaled to the model's window)" if self.scaled else ""
        within = (
            f"prompts kept within {self.window:,} of the {self.limit:,} window (a long "
            f"latest message may use the whole window)"
            if self.limit > self.window else f"window {self.window:,}"
        )
        return (
            f"{self.mode}: {within}, protect {self.protect:,}, minimum "
            f"{self.minimum:,}, reserve {self.reserve:,}, keep recent {self.keep_recent:,}, "
            f"summary budget {self.summary_budget:,}{note}"
        )


def default_local() -> ModePolicy:
    return ModePolicy(window=10_000, protect=2_000, minimum=500, reserve=1_024,
                      keep_recent=3_000, summary_budget=768)


def default_standard() -> ModePolicy:
    return ModePolicy(window=131_072, protect=40_000, minimum=20_000, reserve=16_384,
                      keep_recent=20_000, summary_budget=13_107)


class CompactionSwitches(_Section):
    auto_compact: bool = Field(True, description="Summarize when prompt + reserve > window.")
    compact_on_overflow: bool = Field(True, description="Compact and retry once on overflow.")
    prune: bool = Field(True, description="Clear old tool outputs before every model call.")
    compact_ahead: bool = Field(
        True,
        description="Once the chat is 70% of the way to its next summary and the model is "
        "idle (you are reading or typing), write that summary in the background, so the "
        "compaction does not make you wait inside your next turn. Costs: the CPU work of one "
        "summary while idle (fan, battery), wasted when the chat changes before it is used. "
        "Saves: the summary's wait (seconds to minutes on a laptop). Anything you do stops "
        "it at once. When no summary written ahead fits, the compaction takes the one code "
        "writes (your words, the files) at once and the model writes the next one while you "
        "read; off, the model writes it inside your turn. The terminal chat never does it.",
    )
    read_ahead: bool = Field(
        True,
        description="While you type and the model is idle, evaluate the prompt your message "
        "would make so far (the words you finished), so that when you press Enter only the "
        "last word and what changed are left to read: the reply starts sooner. Costs: CPU "
        "work while you type (a few tokens per word), wasted when you delete what you typed. "
        "A send or anything else stops it at once (docs/BENCHMARKS.md, engines side by "
        "side).",
    )
    use_measured_context: bool = Field(
        True,
        description="When the model was measured to use fewer tokens well than its window "
        "holds (models/registry.json, `python -m assistant probe`), keep the history within "
        "that size (never below 2,048 tokens); the window stays the hard limit, and a long "
        "latest message may use all of it.",
    )
    recall: bool = Field(
        True,
        description="Before every model call, put excerpts of earlier messages relevant to "
        "the latest one beside it (searched in the whole chat, compacted parts included): "
        "the sentences that answer it, even while they are still somewhere in a long "
        "prompt. On by default: the answer benchmark measured the embedded model answering "
        "more with it (docs/ANSWERS.md).",
    )
    earlier_as_notes: bool = Field(
        True,
        description="Show the model the tool calls of earlier turns as notes (\"[I ran "
        "read_file path=...]\") rather than as calls it would copy, and, beside recall's "
        "excerpts, leave out earlier one-line answers it would repeat (the chat itself is "
        "unchanged). On by default: the answer benchmark measured more right answers with "
        "it (docs/ANSWERS.md).",
    )
    recall_focus: bool = Field(
        True,
        description="When recall puts excerpts beside your message, show the model only "
        "them, the latest exchange and the newest few hundred tokens of the chat for that "
        "reply (the summary and older turns stay in the chat and come back on the next "
        "message). On by default: the answer benchmark measured the embedded model answering "
        "more from the smaller prompt (docs/ANSWERS.md).",
    )


class Performance(_Section):
    """How the embedded model spends (and saves) prompt evaluation."""

    resume_state: bool = Field(
        True,
        description="After each reply, save the chat's model state (the KV cache) in the "
        "cache folder, so reopening the chat evaluates only what is new.",
    )
    state_cache_mb: int = Field(
        2048, ge=0, le=1_048_576,
        description="Most disk space for saved chat states, in MB (least recently used go "
        "first; 0 saves none).",
    )
    chunk_reuse: bool = Field(
        True,
        description="After a prune or a compaction, keep the cached text that follows the "
        "changed part by moving it instead of evaluating it again (faster, approximate: the "
        "greedy token agreed with a full evaluation in 97% of 202 measured positions, see "
        "docs/PERFORMANCE.md). Not used with sliding-window, recurrent or quantized-K models.",
    )
    chunk_reuse_min: int = Field(
        64, ge=8, le=100_000, description="Shortest run of cached tokens worth moving."
    )
    server_chunk_reuse_min: int = Field(
        32, ge=8, le=100_000,
        description="With chunk reuse on, the shortest run llama-server is asked to move "
        "(its n_cache_reuse). Below the embedded engine's: the server only skips cached "
        "text, and a focus window that restarts begins with a short earlier reply, which a "
        "longer minimum stops at (docs/BENCHMARKS.md, engines side by side).",
    )
    prompt_lookup: Literal["auto", "on", "off"] = Field(
        "auto",
        description="Speculative decoding from the context: when a reply quotes the chat (a "
        "file, code being edited), several tokens are checked per model call. 'auto' uses it "
        "with the models it was measured faster on (docs/PERFORMANCE.md).",
    )
    draft_model: str = Field(
        "auto", max_length=4096,
        description="Speculative decoding with a smaller model of the same vocabulary (a "
        "registry name or a GGUF path): it proposes the next tokens and the loaded model "
        "checks them in one batch; the reply is the one plain decoding gives. 'auto' uses "
        "the pairing measured faster for the model (the registry's draft_model; also when "
        "empty), 'off' none. "
        "Loaded only when in use (docs/PERFORMANCE.md, \"Draft-model decoding\").",
    )
    prompt_form: Literal["auto", "chat", "transcript"] = Field(
        "auto",
        description="How the chat is shown to the embedded model: 'chat' uses the chat "
        "template in its file (instruction-tuned models); 'transcript' writes it as "
        "User:/Assistant: lines the model continues, after two short worked examples (base "
        "models, which answer nothing through a chat template; tools are offered in the "
        "same text protocol, which base models rarely follow). 'auto' takes the registry's "
        "word, else the file's: no chat template or a base-model name gives 'transcript'.",
    )
    n_batch: int = Field(
        0, ge=0, le=65_536,
        description="Prompt tokens per llama.cpp call; 0 takes the value measured on first "
        "load.",
    )
    n_ubatch: int = Field(
        0, ge=0, le=65_536,
        description="Prompt tokens per compute step (at most n_batch); 0 takes the measured "
        "value.",
    )


class Sampling(_Section):
    temperature: float = Field(0.2, ge=0.0, le=2.0)
    top_p: float = Field(0.95, gt=0.0, le=1.0)
    max_reply_tokens: int = Field(
        512, ge=16, le=32_768, description="Longest reply; never more than the reserve."
    )
    threads: int = Field(
        0, ge=0, le=256, description="CPU threads; 0 takes the number measured on first load."
    )
    seed: int = Field(0, ge=0)


EngineKind = Literal["embedded", "server"]
ToolCallMode = Literal["auto", "native", "text"]


class ServerEngine(_Section):
    """An OpenAI-compatible server (llama-server, Ollama, ...); API key:
    :mod:`assistant.secrets`."""

    base_url: str = Field(
        "", description="The server's address, e.g. http://127.0.0.1:8080 (with or without /v1)."
    )
    model: str = Field(
        "", description="A model name from the server's /v1/models; empty takes the first."
    )
    tokenizer_gguf: str = Field(
        "",
        description="A GGUF file whose tokenizer and chat template count prompts when the "
        "server cannot (Ollama, LM Studio); empty: the server's own, else an estimate.",
    )
    window: int = Field(
        0, ge=0, le=10_000_000,
        description="Context window in tokens; 0 takes it from the server.",
    )
    tool_calls: ToolCallMode = Field(
        "auto",
        description="auto: the server's native tool calls when it says it has them, else "
        "the app's text protocol.",
    )
    timeout_s: float = Field(
        300.0, ge=1.0, le=3600.0,
        description="Longest wait in seconds for the server to answer or send the next piece.",
    )
    reply_limit_s: float = Field(
        1800.0, ge=10.0, le=86_400.0,
        description="Longest a whole reply may take, in seconds; a server still sending "
        "(pings or a slow drip too) is stopped with a clear error.",
    )

    @field_validator("base_url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        return normalize_base_url(value)


def normalize_base_url(value: str) -> str:
    """``http(s)://host[:port][/prefix]`` without a trailing ``/`` or ``/v1``; "" stays "".
    Raises ValueError for anything else (the settings dialog shows the reason)."""
    text = value.strip()
    if not text:
        return ""
    if "://" not in text:
        raise ValueError("the address must start with http:// or https://")
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https"):
        raise ValueError("the address must start with http:// or https://")
    if not parts.hostname:
        raise ValueError("the address has no host name")
    try:
        _ = parts.port
    except ValueError as exc:
        raise ValueError("the port is not a number from 0 to 65535") from exc
    if parts.query or parts.fragment:
        raise ValueError("the address must not have a ?query or #fragment")
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return f"{parts.scheme}://{parts.netloc}{path}"


class EngineSettings(_Section):
    """Which engine runs the model: the embedded llama.cpp (default) or a server."""

    kind: EngineKind = Field(
        "embedded", description="embedded: the GGUF model in this app; server: an "
        "OpenAI-compatible server at an address you set.",
    )
    server: ServerEngine = Field(default_factory=ServerEngine)

    @model_validator(mode="after")
    def _server_needs_address(self) -> EngineSettings:
        if self.kind == "server" and not self.server.base_url:
            raise ValueError("a server engine needs the server's address")
        return self


ApprovalPolicy = Literal["ask", "auto"]
Theme = Literal["system", "light", "dark"]

#: The model a first run uses: the registry's default (models/registry.json; a test keeps the
#: two equal). The test suite sets the small model here for speed (tests/conftest.py).
DEFAULT_MODEL = "qwen2.5-coder-1.5b-instruct"

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant running offline on the user's computer. Answer briefly and "
    "accurately. Respect every constraint the user states."
)


class Settings(BaseModel):
    """Everything the user can set. Saved as JSON with a schema version."""

    model_config = ConfigDict(extra="ignore", validate_assignment=True)

    schema_version: int = SETTINGS_SCHEMA_VERSION
    mode: ModeName = Mode.LOCAL
    local: ModePolicy = Field(default_factory=default_local)
    standard: ModePolicy = Field(default_factory=default_standard)
    compaction: CompactionSwitches = Field(default_factory=CompactionSwitches)
    sampling: Sampling = Field(default_factory=Sampling)
    performance: Performance = Field(default_factory=Performance)
    model: str = Field(
        default_factory=lambda: DEFAULT_MODEL,
        description="A registered model name, or a path to any GGUF file.",
    )
    engine: EngineSettings = Field(default_factory=EngineSettings)
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    workspace: str = Field("", description="Workspace folder; empty means the default.")
    tool_approval: ApprovalPolicy = "ask"
    theme: Theme = "system"
    enter_sends: bool = True
    step_limit: int = Field(8, ge=1, le=64)
    zoom: int = Field(
        100, ge=50, le=250, description="Text size of the chat and the input, in percent "
        "(View → Zoom in / Zoom out / Reset)."
    )

    def policy(self) -> ModePolicy:
        return self.local if self.mode == Mode.LOCAL else self.standard

    def effective_policy(
        self, trained_context: int | None, measured_context: int | None = None
    ) -> EffectivePolicy:
        """The policy for a model with ``trained_context`` tokens; ``measured_context`` becomes the
        target when ``use_measured_context`` is on (never below :data:`MIN_MEASURED_WINDOW`)."""
        hard = self.policy().effective(self.mode, trained_context)
        if not (measured_context and self.compaction.use_measured_context):
            return hard
        usable = max(measured_context, MIN_MEASURED_WINDOW)
        if usable >= hard.window:
            return hard
        cap = usable if not trained_context else min(trained_context, usable)
        return replace(self.policy().effective(self.mode, cap), hard_window=hard.window)

    def switches(self) -> CompactionSwitches:
        sw = self.compaction.model_copy()
        if _env_flag("ASSISTANT_DISABLE_PRUNE"):
            sw.prune = False
        if _env_flag("ASSISTANT_DISABLE_AUTOCOMPACT"):
            sw.auto_compact = False
            sw.compact_on_overflow = False
        # The benchmark's switches, either way when set.
        for name, field in (("ASSISTANT_EARLIER_AS_NOTES", "earlier_as_notes"),
                            ("ASSISTANT_RECALL_FOCUS", "recall_focus")):
            if os.environ.get(name, "").strip():
                setattr(sw, field, _env_flag(name))
        return sw

    def workspace_path(self) -> Path:
        return Path(self.workspace).expanduser() if self.workspace else paths.default_workspace()


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


@dataclass
class LoadedSettings:
    settings: Settings
    notice: str | None = None


def load_settings(path: Path | None = None) -> LoadedSettings:
    """Read settings; on a corrupt file back it up, use defaults and say so."""
    path = path or paths.settings_file()
    if not path.exists():
        return LoadedSettings(Settings())
    try:
        raw = jsonlimits.loads(path.read_text(encoding="utf-8"), "the file")
        if not isinstance(raw, dict):
            raise ValueError("the file does not hold a JSON object")
        version = raw.get("schema_version", SETTINGS_SCHEMA_VERSION)
        if isinstance(version, int) and version > SETTINGS_SCHEMA_VERSION:
            raise ValueError(f"schema version {version} is newer than this app understands")
        return LoadedSettings(Settings.model_validate(raw))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        backup = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
        try:
            shutil.copy2(path, backup)
            kept = f"it was backed up to {backup}"
        except OSError as copy_exc:
            kept = f"it could not be backed up ({copy_exc.strerror or copy_exc})"
        return LoadedSettings(
            Settings(),
            notice=f"Settings file {path} could not be read ({_reason(exc)}); {kept}, and "
            "defaults are in use.",
        )


def _reason(exc: BaseException) -> str:
    """One line that names the offending field as the settings dialog does."""
    if isinstance(exc, ValidationError):
        return first_error(exc, SETTING_LABELS)
    if isinstance(exc, RecursionError):
        return "it is nested too deeply"
    text = str(exc)
    return text.splitlines()[0][:300] if text else type(exc).__name__


def save_settings(settings: Settings, path: Path | None = None) -> None:
    path = path or paths.settings_file()
    make_dirs(path.parent)
    text = json.dumps(settings.model_dump(mode="json"), ensure_ascii=False, indent=2)
    write_atomically(path, text)
