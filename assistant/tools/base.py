"""What every tool is: typed arguments, a run method, and a text result with an error flag.
A problem the model can fix is an error result saying what to do, never an exception."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, model_validator

from assistant.llm.base import CancelToken
from assistant.tools.walk import WalkBudget
from assistant.tools.workspace import Workspace


@dataclass(frozen=True)
class ToolResult:
    """The text the model (and the user) sees, and whether it reports a failure."""

    text: str
    is_error: bool = False

    @classmethod
    def error(cls, text: str) -> ToolResult:
        return cls(text=text, is_error=True)


@dataclass(frozen=True)
class ToolLimits:
    """Size caps that keep one tool output from flooding a small context window."""

    #: Longest text a tool returns; more is cut with a marker saying how to read the rest.
    max_output_chars: int = 8_000
    #: Files larger than this are not read at all (grep skips them).
    max_file_bytes: int = 20_000_000
    #: Most grep matches / find results / directory entries listed.
    max_matches: int = 100
    max_entries: int = 500
    #: Longest line shown by grep.
    max_line_chars: int = 300
    #: Default and largest run_command timeout, in seconds.
    command_timeout_s: float = 60.0
    max_command_timeout_s: float = 600.0
    #: Largest content write_file accepts.
    max_write_chars: int = 2_000_000
    #: A find_files or grep search ends (with a note) after visiting this many entries,
    #: descending this many folders, or running this many seconds.
    max_search_entries: int = 200_000
    max_search_depth: int = 64
    max_search_s: float = 30.0

    def clip(self, text: str, note: str) -> str:
        """``text`` cut to ``max_output_chars``, then ``[note]`` on a line of its own."""
        cap = self.max_output_chars
        return text if len(text) <= cap else f"{text[:cap]}\n[{note}]"

    def walk_budget(self, cancelled: Callable[[], bool]) -> WalkBudget:
        """A fresh budget for one search; ``cancelled`` is the user's Stop."""
        return WalkBudget(max_entries=self.max_search_entries, max_depth=self.max_search_depth,
                          seconds=self.max_search_s, cancelled=cancelled)

    @classmethod
    def for_window(cls, window_tokens: int) -> ToolLimits:
        """Caps for ``window_tokens``: an output may take ``window * 3 / 4`` characters (2,000 to
        32,000), a quarter to a third of the window at 2-4 characters a token."""
        chars = max(2_000, min(32_000, window_tokens * 3 // 4))
        return cls(max_output_chars=chars)


@dataclass
class ToolContext:
    workspace: Workspace
    limits: ToolLimits
    cancel: CancelToken | None = None

    @property
    def cancelled(self) -> bool:
        return self.cancel is not None and self.cancel.cancelled


#: The names small models use for a file's ``path`` argument, and for a folder's.
FILE_ALIASES = {"file_path": "path", "filename": "path", "file": "path"}
FOLDER_ALIASES = {"dir": "path", "directory": "path"}


class ToolArgs(BaseModel):
    """Base of tool arguments: unknown keys ignored (small models add them), misspelt names mapped
    through ``aliases`` so the saved call carries the real one (file tracking reads it)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    aliases: ClassVar[dict[str, str]] = {}

    @model_validator(mode="before")
    @classmethod
    def _apply_aliases(cls, data: Any) -> Any:
        return canonical_arguments(cls, data) if isinstance(data, dict) else data


def canonical_arguments(model: type[ToolArgs], data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with alias keys renamed to the field names of ``model``."""
    out = dict(data)
    for alias, real in model.aliases.items():
        if alias in out and real not in out:
            out[real] = out.pop(alias)
    return out


ArgsT = TypeVar("ArgsT", bound=ToolArgs)


class Tool(ABC, Generic[ArgsT]):
    """One tool. Subclasses set the class attributes and implement :meth:`run`."""

    name: ClassVar[str]
    description: ClassVar[str]
    args_model: type[ArgsT]
    #: Changes files or runs programs: the user must approve model-initiated calls.
    needs_approval: ClassVar[bool] = False

    @abstractmethod
    def run(self, args: ArgsT, ctx: ToolContext) -> ToolResult:
        """Do the work. Return an error result (do not raise) for a fixable problem."""

    def describe(self, args: ArgsT, ctx: ToolContext) -> str:
        """One line for the approval dialog and the transcript."""
        shown = ", ".join(f"{k}={v!r}" for k, v in args.model_dump().items())
        return f"{self.name}({shown})"

    def preview(self, args: ArgsT, ctx: ToolContext) -> str:
        """Longer detail for the approval dialog (a diff, the content to write...)."""
        return ""
