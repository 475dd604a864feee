"""bench/base_prompt.py: each prompt form shows the model what its docstring says, and the
replies are scored as the answer benchmark scores them."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from assistant.llm.base import GenerationOptions, GenerationResult, StreamEvent
from assistant.llm.template import ChatTemplate
from assistant.llm.transcript import TRANSCRIPT_STOPS, TranscriptTemplate
from bench.answers import workload_transcript
from bench.base_prompt import FORMS, score
from bench.questions import passage
from bench.workloads import generate


class _Completer:
    """Stands in for LlamaBackend: records each prompt text (and stops) and answers the
    planted port when the prompt holds it after its last question."""

    def __init__(self) -> None:
        self.form: str | None = None
        self.template: ChatTemplate = ChatTemplate(None, bos_token="<bos>")
        self.prompts: list[tuple[str, tuple[str, ...]]] = []
        self._texts: dict[int, str] = {}

    def use_prompt_form(self, form: str | None) -> None:
        self.form = form
        self.template = (
            TranscriptTemplate(bos_token="<bos>") if form in (None, "transcript")
            else ChatTemplate(None, bos_token="<bos>")
        )

    def tokenize(self, text: str) -> list[int]:
        self._texts[len(self._texts)] = text
        return [len(self._texts) - 1]

    def generate_tokens(
        self, tokens: list[int], options: GenerationOptions
    ) -> Iterator[StreamEvent]:
        text = self._texts[tokens[0]]
        self.prompts.append((text, options.stop))
        reply = " 4406.\n" if "4406" in text else " I do not know."
        yield StreamEvent(result=GenerationResult(reply, 1, 1, 0, 2, "stop"))

    def generate(
        self, messages: Sequence[dict[str, Any]], options: GenerationOptions
    ) -> Iterator[StreamEvent]:
        return self.generate_tokens(self.tokenize(self.template.render(messages)), options)


def test_each_form_shows_the_passage_and_the_question_as_documented() -> None:
    t = workload_transcript(generate("W2", 0), limit=12)
    port = next(q for q in t.questions if "port" in q.question)
    one = type(t)(t.name, t.kind, t.mode, t.system, t.messages, [port])
    text = passage(t.messages, port)
    shown: dict[str, tuple[str, tuple[str, ...]]] = {}
    for name in FORMS:
        backend = _Completer()
        got = score(backend, one, name)  # type: ignore[arg-type]
        assert got == [(True, "4406.")], name  # stripped, and accepted as the bench does
        shown[name] = backend.prompts[-1]
    plain, stops = shown["plain"]
    assert plain == f"<bos>{text}\n\nQuestion: {port.question}\nAnswer:" and stops == ("\n",)
    fewshot, _ = shown["fewshot"]
    assert fewshot.count("Question: ") == 3 and fewshot.endswith(plain[len("<bos>"):])
    turns, _ = shown["turns"]
    assert turns.startswith("<bos><start_of_turn>user\n") and t.system not in turns
    assert turns.endswith("<start_of_turn>model\n")
    transcript, stops = shown["transcript"]
    assert stops == TRANSCRIPT_STOPS and transcript.startswith("<bos>" + t.system)
    assert transcript.count("User: ") == 3 and transcript.endswith("\n\nAssistant:")
    bare, _ = shown["bare"]
    assert bare.count("User: ") == 1
    assert "<|im_start|>" in shown["chat"][0]  # the file's template (ChatML here)
    assert shown["app"][0] == transcript  # the automatic choice of a base model
