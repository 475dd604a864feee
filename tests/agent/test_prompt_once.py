"""A prompt is rendered and tokenized once per model call (issue 27): the controller encodes
it while preparing the request, and the backend evaluates those tokens as they are.

The backend is the scripted one (its real cl100k tokenizer and ChatML template) with every
tokenizer and template call counted by the text it was given.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from assistant.compaction.recall import Recall
from assistant.config import Settings
from assistant.llm.base import ChatMessages
from assistant.llm.transcript_recall import UNLABELED_HEADING
from assistant.sessions.recall_index import MemoryIndexes
from tests.fakes.scripted import ScriptedBackend

from .conftest import Harness, call_block


class CountedBackend(ScriptedBackend):
    """Counts each text tokenized (``tokenize`` or ``count``) and each prompt rendered."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.tokenized: Counter[str] = Counter()
        self.rendered: Counter[str] = Counter()

    def tokenize(self, text: str) -> list[int]:
        self.tokenized[text] += 1
        return super().tokenize(text)

    def count(self, text: str) -> int:
        self.tokenized[text] += 1
        return super().count(text)

    def render_prompt(
        self, messages: ChatMessages, tools: Sequence[dict[str, Any]] | None = None
    ) -> str:
        text = super().render_prompt(messages, tools)
        self.rendered[text] += 1
        return text


def _sent(backend: CountedBackend) -> list[str]:
    return [call.prompt_text for call in backend.calls]


def test_each_prompt_sent_is_tokenized_once(settings: Settings, workspace: Path) -> None:
    (workspace / "notes.txt").write_text("The code word is PELICAN.\n", encoding="utf-8")
    backend = CountedBackend([
        "Let me look.\n" + call_block("read_file", path="notes.txt"),
        "The code word is PELICAN.",
        "It was in notes.txt.",
    ])
    h = Harness(settings, backend=backend)
    h.say("What is the code word in notes.txt?")  # two model calls: the tool, the answer
    h.say("Where was it?")
    sent = _sent(backend)
    assert len(sent) == 3
    for text in sent:
        assert backend.tokenized[text] == 1, "the prompt sent was tokenized more than once"
        assert backend.rendered[text] == 1, "the prompt sent was rendered more than once"
    # What the model was given is exactly what was counted for the context bar.
    assert [c.prompt_tokens for c in backend.calls] == [
        backend.count(text) for text in sent
    ]


def test_without_the_encoded_prompt_the_backend_tokenizes_again(
    settings: Settings,
) -> None:
    """The check above can fail: a generate that is not given the prepared prompt renders
    and tokenizes the messages a second time."""
    backend = CountedBackend(["Hello."])
    h = Harness(settings, backend=backend)
    original = backend.generate

    def without_prompt(messages: ChatMessages, options: Any, **kw: Any) -> Any:
        kw.pop("prompt", None)
        return original(messages, options, **kw)

    backend.generate = without_prompt  # type: ignore[method-assign]
    h.say("Hi")
    (text,) = _sent(backend)
    assert backend.tokenized[text] == 2


def _whole_prompts(backend: CountedBackend) -> int:
    """Whole chat prompts rendered (to be counted, encoded or evaluated): not one message
    counted alone beside the anchor, nor the system prompt and tools alone."""
    return sum(
        n for text, n in backend.rendered.items()
        if "<|im_start|>user" in text and not text.startswith("<|im_start|>system\n.<|im_end|>")
    )


def test_each_model_call_renders_one_prompt_with_notes_and_recall(
    settings: Settings, workspace: Path
) -> None:
    """The prompt changes after it is built (earlier turns' calls written as notes, recall's
    excerpts beside the question): it is still rendered and tokenized once per model call,
    not once per change."""
    (workspace / "notes.txt").write_text("The code word is PELICAN.\n", encoding="utf-8")
    backend = CountedBackend([
        "Let me look.\n" + call_block("read_file", path="notes.txt"),
        "The code word is PELICAN.",
        "Noted.",
        "It was PELICAN, from notes.txt.",
    ])
    h = Harness(settings, backend=backend)
    h.controller.recall = Recall(h.controller.counter, MemoryIndexes().get)
    h.say("What is the code word in notes.txt?")
    h.say("Our staging server port is 12345. We deploy on Fridays. Please remember that.")
    backend.rendered.clear()
    h.say("Which port does the staging server use?")
    last = backend.calls[-1]
    assert "[I ran read_file" in last.prompt_text  # the earlier call, as a note
    assert UNLABELED_HEADING in last.prompt_text  # recall's excerpts, as a chat model sees them
    assert _whole_prompts(backend) == 1
    assert backend.tokenized[last.prompt_text] == 1
