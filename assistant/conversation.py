"""Conversation state as plain typed data, saved by the store and rendered by the UI. Nothing
is rewritten to save tokens: pruning sets ``pruned``, compaction adds a record beside."""

from __future__ import annotations

import functools
import json
import time
import uuid
from enum import StrEnum
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from assistant import jsonlimits
from assistant.jsonlimits import MAX_ARGUMENT_CHARS, MAX_ARGUMENT_DEPTH, MAX_DOCUMENT_DEPTH
from assistant.textsafe import argument_text, paired
from assistant.textsafe import valid_text as valid_text  # its home before textsafe

Role = Literal["system", "user", "assistant", "tool"]

PRUNED_PLACEHOLDER = "[Old tool result content cleared]"
#: Characters of a not-understood tool call's arguments the model is shown again.
RAW_ARGUMENTS_SHOWN = 2_000
#: Longest content of one message the model is shown (about 25,000 tokens of prose: more
#: than the local window, a good share of a standard one). Longer content (a pasted log of
#: tens of MB, a huge tool output) is cut by characters *before* anything tokenizes it, so
#: counting and rendering cost the same for a 50 MB message as for this much; the context
#: manager then cuts it further, by tokens, when it does not fit.
MAX_SHOWN_CHARS = 100_000
#: Share of the shown characters taken from the head of cut content (the rest: its tail).
_HEAD_SHARE = 2 / 3

_WHERE_THE_REST_IS = {
    "tool": "to see them, use the tool on a smaller part (read_file with start_line and "
    "end_line, or grep for what you need)",
    "user": "the user's whole message is kept in the chat; ask them for the part that "
    "matters, or to save it as a file in the workspace so read_file can read it in parts",
}


@functools.lru_cache(maxsize=32)
def cut_for_model(text: str, role: str, limit: int = MAX_SHOWN_CHARS) -> str:
    """``text`` cut to about ``limit`` characters (head and tail, around a marker that says what
    was left out and how to get it); memoized, as a render asks once per message per call."""
    if len(text) <= limit:
        return text
    head_end = int(limit * _HEAD_SHARE)
    tail_start = len(text) - (limit - head_end)
    nl = text.rfind("\n", head_end - 2_000, head_end)  # whole lines when they are short
    head_end = nl + 1 if nl >= 0 else head_end
    nl = text.find("\n", tail_start, tail_start + 2_000)
    tail_start = nl + 1 if nl >= 0 else tail_start
    first = text.count("\n", 0, head_end) + 1  # lines are numbered from 1
    omitted = text.count("\n", head_end, tail_start)
    last = first + max(omitted - 1, 0)
    total = first + omitted + text.count("\n", tail_start)
    where = _WHERE_THE_REST_IS.get(role, "the whole message is kept in the chat")
    lines = f"lines {first:,}-{last:,} of {total:,}, " if total > 1 else ""
    marker = (
        f"[... {tail_start - head_end:,} characters ({lines}of {len(text):,}) omitted "
        f"here: too long to show whole; {where} ...]"
    )
    head, tail = text[:head_end], text[tail_start:]
    sep_head = "" if head.endswith("\n") else "\n"
    return f"{head}{sep_head}{marker}\n{tail}"


def new_id() -> str:
    return uuid.uuid4().hex[:16]


def paired_surrogates(text: str) -> str:
    """``text`` with adjacent surrogate pairs joined, as after a JSON round trip."""
    return paired(text)


def _valid_keys(value: Any, depth: int) -> Any:
    """``value`` with :func:`valid_text` applied to every dict key and :func:`argument_text`
    to every string (nested past 100: as is)."""
    if depth > 100:
        return value
    if isinstance(value, str):
        return argument_text(value)
    if isinstance(value, dict):
        out = {valid_text(str(k)): _valid_keys(v, depth + 1) for k, v in value.items()}
        same = len(out) == len(value) and all(
            a == b and out[a] is value[b] for a, b in zip(out, value, strict=True)
        )
        return value if same else out
    if isinstance(value, list):
        items = [_valid_keys(v, depth + 1) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


class ToolCall(BaseModel):
    """One tool call; ``raw_arguments`` keeps what the model wrote when it is not a JSON object."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(default_factory=lambda: "call_" + new_id())
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    raw_arguments: str | None = None

    @field_validator("arguments")
    @classmethod
    def _encodable_keys(cls, value: dict[str, Any]) -> dict[str, Any]:
        """Keys with lone surrogates get U+FFFD: a chat file cannot keep them, no tool takes
        them; values are made valid text (a file name's odd byte as ``\\xHH``, issue 47)."""
        cleaned: dict[str, Any] = _valid_keys(value, 0)
        return cleaned

    def arguments_json(self) -> str:
        if self.raw_arguments is not None:
            return self.raw_arguments
        return json.dumps(self.arguments, ensure_ascii=False, sort_keys=True)

    def model_arguments(self) -> str:
        """The arguments as the model is shown them; a call not understood: its text as a JSON
        *string*, cut, so nothing decodes the raw text again (it may nest thousands deep)."""
        if self.raw_arguments is None:
            # In the order the model wrote them: re-rendered, its call reads as it wrote it
            # (the cached tokens of its reply stay valid, and it is not shown a reordered
            # call it then copies).
            return json.dumps(self.arguments, ensure_ascii=False)
        raw = self.raw_arguments
        if len(raw) > RAW_ARGUMENTS_SHOWN:
            more = len(raw) - RAW_ARGUMENTS_SHOWN
            raw = raw[:RAW_ARGUMENTS_SHOWN] + f" [... {more:,} more characters]"
        return json.dumps(raw, ensure_ascii=False)


class ReplyFigures(BaseModel):
    """How a reply was produced, saved with it so its footer is shown again."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt_tokens: int
    #: Prompt tokens evaluated for this reply vs. reused from the KV cache.
    evaluated: int
    reused: int
    completion_tokens: int
    #: Seconds from the model call to the first token (prompt evaluation included).
    ttft_s: float | None = None
    tokens_per_s: float | None = None
    #: The reply stopped at the longest-reply limit (``max_reply_tokens``), maybe mid-word.
    cut_off: bool = False


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(default_factory=new_id)
    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    #: For ``role == "tool"``: which call this answers, and that tool's name.
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    #: Assistant reply cut short by the user (kept, marked as stopped).
    stopped: bool = False
    #: Tool result whose content the model no longer sees (see PRUNED_PLACEHOLDER).
    pruned: bool = False
    #: Who started a tool call: the model, or the user with /read, !cmd, drag and drop.
    initiated_by: Literal["model", "user"] = "model"
    timestamp: float = Field(default_factory=time.time)
    #: For an assistant reply: the figures of the model call that wrote it (None for
    #: replies saved before figures were kept, and for messages no model call wrote).
    figures: ReplyFigures | None = None

    @field_validator("content")
    @classmethod
    def _paired(cls, value: str) -> str:
        """Surrogate pairs are the character they spell (as JSON reads them back)."""
        return paired_surrogates(value)

    @model_validator(mode="after")
    def _typed_by_the_user(self) -> Message:
        """A user message is initiated by the user (the default is for tool calls)."""
        if self.role == "user" and self.initiated_by != "user":
            self.initiated_by = "user"
        return self

    def model_view_content(self) -> str:
        """The content as the model sees it: pruned results cleared, cut, surrogates replaced."""
        if self.role == "tool" and self.pruned:
            return PRUNED_PLACEHOLDER
        if len(self.content) <= MAX_SHOWN_CHARS:
            return valid_text(self.content)
        return valid_text(cut_for_model(self.content, self.role))

    def to_openai(self, *, as_model_sees: bool = True) -> dict[str, Any]:
        """OpenAI chat format (used for export, replay and chat templates)."""
        out: dict[str, Any] = {
            "role": self.role,
            "content": self.model_view_content() if as_model_sees else self.content,
        }
        if self.tool_calls:
            out["tool_calls"] = [
                {"id": call.id, "type": "function", "function": {
                    "name": call.name,
                    "arguments": call.model_arguments() if as_model_sees else call.arguments_json(),
                }}
                for call in self.tool_calls
            ]
        if self.role == "tool":
            out["tool_call_id"] = self.tool_call_id
            if self.name:
                out["name"] = self.name
        return out

    @classmethod
    def from_openai(cls, data: dict[str, Any]) -> Message:
        """Parse one OpenAI-format message; raises ValueError with a clear reason."""
        if not isinstance(data, dict):
            raise ValueError("a message must be a JSON object")
        role = data.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            raise ValueError(f"unknown role {role!r}")
        content = data.get("content") or ""
        if isinstance(content, list):  # content parts: keep the text ones
            content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        if not isinstance(content, str):
            raise ValueError("content must be a string")
        calls: list[ToolCall] = []
        for raw in data.get("tool_calls") or []:
            fn = raw.get("function", {}) if isinstance(raw, dict) else {}
            name = fn.get("name")
            if not isinstance(name, str) or not name:
                raise ValueError("a tool call needs function.name")
            args, raw_args = _parse_arguments(fn.get("arguments", "{}"))
            call_id = str(raw.get("id") or "call_" + new_id())
            calls.append(ToolCall(id=call_id, name=name, arguments=args, raw_arguments=raw_args))
        if role == "tool" and not data.get("tool_call_id"):
            raise ValueError("a tool message needs tool_call_id")
        return cls(role=role, content=content, tool_calls=calls,
                   tool_call_id=data.get("tool_call_id"), name=data.get("name"))


def _parse_arguments(value: Any) -> tuple[dict[str, Any], str | None]:
    """(arguments, None), or ({}, the text) when not a JSON object, too deep or too long."""
    if isinstance(value, str):
        text = value
    elif jsonlimits.value_depth(value, MAX_DOCUMENT_DEPTH) > MAX_DOCUMENT_DEPTH:
        raise jsonlimits.TooDeepError("the arguments of a tool call", MAX_DOCUMENT_DEPTH)
    else:
        text = json.dumps(value, ensure_ascii=False)
        if (
            isinstance(value, dict)
            and len(text) <= MAX_ARGUMENT_CHARS
            and jsonlimits.value_depth(value, MAX_ARGUMENT_DEPTH) <= MAX_ARGUMENT_DEPTH
        ):
            return value, None
        return {}, text
    if not text.strip():
        return {}, None
    try:
        parsed = jsonlimits.loads(text, "arguments", MAX_ARGUMENT_DEPTH, MAX_ARGUMENT_CHARS)
    except ValueError:
        return {}, text
    return (parsed, None) if isinstance(parsed, dict) else ({}, text)


class CompactionReason(StrEnum):
    """Why a compaction ran (one spelling everywhere; compares equal to its string)."""

    THRESHOLD = "threshold"  # prompt + reserve > window before a model call
    OVERFLOW = "overflow"  # the backend refused the prompt (ContextOverflowError)
    MANUAL = "manual"  # /compact


class CompactionRecord(BaseModel):
    """Session metadata for one compaction; never stored among the messages."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(default_factory=new_id)
    summary: str
    #: The first message still sent to the model verbatim; everything before it is
    #: represented by ``summary``. ``None`` means every message was summarized.
    first_kept_id: str | None
    #: The newest message the summary covers (used when ``first_kept_id`` is None).
    last_summarized_id: str | None = None
    tokens_before: int
    tokens_after: int
    reason: CompactionReason
    count: int = Field(description="1 for the chat's first compaction, then 2, 3, ...")
    previous_summary: str | None = None
    files_read: list[str] = Field(default_factory=list)
    files_modified: list[str] = Field(default_factory=list)
    duration_s: float = 0.0
    timestamp: float = Field(default_factory=time.time)
    #: "model" when the loaded model wrote it, "extractive" for the deterministic fallback,
    #: "hook" when a before_compact hook supplied it.
    summarizer: Literal["model", "extractive", "hook"] = "model"
    focus: str | None = None
    #: Why model-written summaries were rejected before this one was chosen (empty when the
    #: first model summary was accepted, or no model was asked).
    rejected: list[str] = Field(default_factory=list)
    #: Which summarizer wrote the summary and why, in words (the compaction card shows it),
    #: e.g. "written by the model under the summary grammar" or "extractive: the model's
    #: summaries were rejected twice (...)".
    summarizer_note: str = ""


class ConversationObserver(Protocol):
    """Told of every change before it is shown; the store writes and fsyncs each one, and an
    observer that raises aborts the change, so nothing is shown that is not on disk."""

    def message_appended(self, message: Message) -> None: ...

    def messages_pruned(self, message_ids: list[str], tokens_freed: int) -> None: ...

    def compaction_added(self, record: CompactionRecord) -> None: ...


class Conversation(BaseModel):
    """One chat's active branch; change it only through :meth:`append`, :meth:`mark_pruned` and
    :meth:`add_compaction`, so observers see every change."""

    model_config = ConfigDict(extra="forbid")

    messages: list[Message] = Field(default_factory=list)
    compactions: list[CompactionRecord] = Field(default_factory=list)
    _observers: list[ConversationObserver] = PrivateAttr(default_factory=list)

    def subscribe(self, observer: ConversationObserver) -> None:
        self._observers.append(observer)

    def append(self, message: Message) -> Message:
        for obs in self._observers:
            obs.message_appended(message)
        self.messages.append(message)
        return message

    def mark_pruned(self, message_ids: list[str], tokens_freed: int) -> None:
        if not message_ids:
            return
        for obs in self._observers:
            obs.messages_pruned(list(message_ids), tokens_freed)
        wanted = set(message_ids)
        for msg in self.messages:
            if msg.id in wanted:
                msg.pruned = True

    def add_compaction(self, record: CompactionRecord) -> None:
        for obs in self._observers:
            obs.compaction_added(record)
        self.compactions.append(record)

    @property
    def last_compaction(self) -> CompactionRecord | None:
        return self.compactions[-1] if self.compactions else None

    def index_of(self, message_id: str) -> int:
        for i, msg in enumerate(self.messages):
            if msg.id == message_id:
                return i
        raise KeyError(message_id)

    def kept_messages(self) -> list[Message]:
        """Messages after the latest compaction's cut (all of them if none)."""
        rec = self.last_compaction
        if rec is None:
            return list(self.messages)
        try:
            if rec.first_kept_id is not None:
                return self.messages[self.index_of(rec.first_kept_id) :]
            if rec.last_summarized_id is not None:
                return self.messages[self.index_of(rec.last_summarized_id) + 1 :]
        except KeyError:
            pass
        return list(self.messages)
