"""One streamed chat completion, put together from its server-sent events: the text, native
tool calls (arriving in pieces keyed by ``index``), the finish reason and what the server
reports (``usage``, llama.cpp's ``timings``). Native calls are written into the text as the
text protocol's blocks, so the agent parses every reply the same way.

The text is valid Unicode (issue 47): a character outside the Basic Multilingual Plane
that a server sends as a JSON surrogate pair split across two events (``"\\ud83d"``, then
``"\\ude00"``) is joined; a surrogate left alone is shown as U+FFFD.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from assistant.llm.template import format_call_block
from assistant.textsafe import clean_text


@dataclass
class StreamedReply:
    parts: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, str]] = field(default_factory=dict)
    finish: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, Any] = field(default_factory=dict)
    #: (processed, total) prompt tokens, from llama.cpp's ``prompt_progress``.
    progress: tuple[int, int] | None = None
    #: Content pieces received (a token count when the server reports none).
    deltas: int = 0
    #: A high surrogate that ended the last piece: the rest of its pair may come next.
    pending: str = ""

    def feed(self, event: dict[str, Any]) -> tuple[str, bool]:
        """Take one event; returns (text to show, whether the reply started: text or a
        tool call arrived)."""
        if isinstance(event.get("usage"), dict):
            self.usage = event["usage"]
        if isinstance(event.get("timings"), dict):
            self.timings = event["timings"]
        progress = event.get("prompt_progress")
        self.progress = None
        if isinstance(progress, dict):
            total, processed = progress.get("total"), progress.get("processed")
            if isinstance(total, int) and isinstance(processed, int):
                self.progress = (processed, total)
        shown: list[str] = []
        started = False
        for choice in event.get("choices") or ():
            if not isinstance(choice, dict):
                continue
            delta = choice.get("delta") or {}
            content = delta.get("content") if isinstance(delta, dict) else None
            if isinstance(content, str) and content:
                self.deltas += 1
                started = True
                piece = self._joined(content)
                if piece:
                    self.parts.append(piece)
                    shown.append(piece)
            for call in (delta.get("tool_calls") or ()) if isinstance(delta, dict) else ():
                self._merge_call(call)
                started = True
            if choice.get("finish_reason"):
                self.finish = str(choice["finish_reason"])
        return "".join(shown), started

    def _joined(self, content: str) -> str:
        """``content`` as valid text, a high surrogate that ends it kept for the next piece."""
        text = self.pending + content
        self.pending = ""
        if "\ud800" <= text[-1] <= "\udbff":
            self.pending, text = text[-1], text[:-1]
        return clean_text(text)

    def _merge_call(self, piece: Any) -> None:
        if not isinstance(piece, dict):
            return
        index = piece.get("index")
        slot = self.calls.setdefault(index if isinstance(index, int) else len(self.calls), {})
        fn = piece.get("function") or {}
        if isinstance(fn.get("name"), str) and fn["name"] and not slot.get("name"):
            slot["name"] = fn["name"]
        if isinstance(fn.get("arguments"), str):
            slot["arguments"] = slot.get("arguments", "") + fn["arguments"]
        elif isinstance(fn.get("arguments"), dict):  # some servers send the object whole
            slot["arguments"] = json.dumps(fn["arguments"], ensure_ascii=False)

    @property
    def content(self) -> str:
        """The text as streamed (without tool calls); a pair's half that never got its other
        half is U+FFFD."""
        return "".join(self.parts) + ("\ufffd" if self.pending else "")

    def text(self) -> str:
        """The content, then each native tool call as a text-protocol block."""
        text = self.content
        for call in (self.calls[i] for i in sorted(self.calls)):
            if call.get("name"):
                block = clean_text(
                    format_call_block(call["name"], call.get("arguments") or "{}")
                )
                text = f"{text}\n{block}" if text else block
        return text

    def completion_tokens(self) -> int:
        """As the server counted them, else the pieces received."""
        got = self.usage.get("completion_tokens")
        if isinstance(got, int):
            return got
        predicted = self.timings.get("predicted_n")
        return predicted if isinstance(predicted, int) else self.deltas

    def prompt_tokens(self, ours: int) -> int:
        got = self.usage.get("prompt_tokens")
        return int(got) if isinstance(got, int) else ours

    def cached_tokens(self) -> int | None:
        """Prompt tokens the server says it took from its cache (None: it does not say)."""
        if isinstance(self.timings.get("cache_n"), int):
            return int(self.timings["cache_n"])
        details = self.usage.get("prompt_tokens_details")
        if isinstance(details, dict) and isinstance(details.get("cached_tokens"), int):
            return int(details["cached_tokens"])
        return None

    def finish_reason(self, cancelled: bool) -> str:
        """The app's finish reason: "cancelled", "length" or "stop"."""
        if cancelled:
            return "cancelled"
        return "length" if self.finish == "length" else "stop"
