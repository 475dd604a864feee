"""The lines of a chat file: one header, then entries forming a tree through ``parent_id``
(the format: docs/ARCHITECTURE.md, "The chat file")."""

from __future__ import annotations

import json
from typing import Annotated, Any, ClassVar, Literal, Self, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    FiniteFloat,
    JsonValue,
    RootModel,
    ValidationError,
    model_validator,
)

from assistant.conversation import CompactionRecord, Message
from assistant.fieldnames import first_error

#: Version of the file format this code writes and the newest it reads.
SCHEMA_VERSION = 1
APP_TAG = "offline-assistant"


class ChatHeader(BaseModel):
    """Line 1 of a chat file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["header"] = "header"
    schema_version: int
    chat_id: str = Field(min_length=1)
    created: FiniteFloat
    title: str | None = None
    app: str = APP_TAG


class EntryBase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    #: The field holding what the entry stores under its own id (message, record), if any.
    same_id_as: ClassVar[str] = ""

    id: str = Field(min_length=1)
    parent_id: str | None
    timestamp: FiniteFloat

    @model_validator(mode="after")
    def _same_id(self) -> Self:
        if self.same_id_as and getattr(self, self.same_id_as).id != self.id:
            kind = type(self).model_fields["type"].default
            raise ValueError(f"a {kind} entry's id must be the {self.same_id_as}'s id")
        return self


class MessageEntry(EntryBase):
    same_id_as = "message"
    type: Literal["message"] = "message"
    message: Message


class PruneEntry(EntryBase):
    type: Literal["prune"] = "prune"
    message_ids: list[str]
    tokens_freed: int = 0


class CompactionEntry(EntryBase):
    same_id_as = "record"
    type: Literal["compaction"] = "compaction"
    record: CompactionRecord


class BranchSummaryEntry(EntryBase):
    type: Literal["branch_summary"] = "branch_summary"
    summary: str
    #: Messages of the abandoned branch the summary covers (oldest first).
    covered_ids: list[str] = Field(default_factory=list)


class CheckoutEntry(EntryBase):
    type: Literal["checkout"] = "checkout"


class SettingEntry(EntryBase):
    type: Literal["setting"] = "setting"
    name: str = Field(min_length=1)
    value: JsonValue


class TitleEntry(EntryBase):
    type: Literal["title"] = "title"
    title: str


AnyEntry = (MessageEntry | PruneEntry | CompactionEntry | BranchSummaryEntry | CheckoutEntry
            | SettingEntry | TitleEntry)
Entry = Annotated[AnyEntry, Field(discriminator="type")]

#: How an entry of a type this version does not know is named (the start of the reason).
UNKNOWN_TYPE = "unknown entry type"

ENTRY_TYPES = frozenset(kind.model_fields["type"].default for kind in get_args(AnyEntry))


class _EntryLine(RootModel[Entry]):
    """Validates any entry by its ``type``."""


def parse_entry(data: Any) -> Entry:
    """Validate one decoded line; raises ValueError with a short, readable reason."""
    if not isinstance(data, dict):
        raise ValueError("an entry must be a JSON object")
    kind = data.get("type")
    if kind == "header":
        raise ValueError("a second header line")
    if not isinstance(kind, str) or kind not in ENTRY_TYPES:
        raise ValueError(f"{UNKNOWN_TYPE} {str(kind)[:40]!r}")
    try:
        return _EntryLine.model_validate(data).root
    except ValidationError as exc:
        # The first part of each error's location is the entry type that chose the model.
        raise ValueError(f"invalid {kind} entry: {first_error(exc, skip=1)}") from None


def parse_header(data: Any) -> ChatHeader:
    """Validate line 1; raises ValueError (not a header) with a short reason."""
    if not isinstance(data, dict) or data.get("type") != "header":
        raise ValueError("the first line is not a chat header (not a chat file?)")
    try:
        return ChatHeader.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"invalid header: {first_error(exc)}") from None


def encode_line(item: ChatHeader | Entry) -> bytes:
    """One JSON line, newline-terminated. ASCII-escaped so any Python str can be written."""
    data = item.model_dump(mode="json")
    return (
        json.dumps(data, ensure_ascii=True, separators=(",", ":"), allow_nan=False) + "\n"
    ).encode("ascii")
