"""The transcript form: how a base (not instruction-tuned) model is shown the chat.

A base model does not take part in its template's turns (gemma-3-270m answered 1 of 12 W2
oracle questions in chat form); it continues plain text, so the chat is written as
``User:``/``Assistant:`` lines ending in ``Assistant:``, the reply stopping at its next
``User:`` line, with two worked exchanges before the latest message (7 of 12 with them, 3
without). The forms and their measurements: docs/ANSWERS.md, "gemma-3-270m".

:class:`TranscriptTemplate` is a :class:`~assistant.llm.template.ChatTemplate` with this form
as its Jinja source, so tools use the text protocol and counts stay exact.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from assistant.llm.template import TOOL_RESULT, ChatTemplate
from assistant.llm.transcript_recall import Layout, lay_out, split_block

PromptForm = Literal["chat", "transcript"]

TRANSCRIPT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% if message['role'] == 'system' %}{{ message['content'] | trim }}{{ '\\n\\n' }}"
    "{% elif message['role'] == 'assistant' %}"
    "{{ 'Assistant: ' + (message['content'] | trim) + '\\n\\n' }}"
    "{% else %}{{ 'User: ' + (message['content'] | trim) + '\\n\\n' }}"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)

#: Where a reply in the transcript form ends: the model starting the user's next line.
TRANSCRIPT_STOPS = ("\nUser:",)

#: :attr:`ChatTemplate.origin` of the transcript form.
TRANSCRIPT_ORIGIN = "transcript (base model: User:/Assistant: lines)"

#: What the models page and Settings say of a base model.
BASE_MODEL_NOTE = (
    "base model (not instruction tuned): shown the chat as User:/Assistant: lines; it does "
    "not call tools (use /read)"
)

#: Two worked exchanges (what the user says, the answer), generic on purpose: they teach the
#: form, not any fact of a chat.
WORKED_EXAMPLES: tuple[tuple[str, str], ...] = (
    ("The library opens at 9 am on weekdays and at 11 am on Saturdays.\n\n"
     "When does the library open on Saturdays?", "At 11 am."),
    ("Our team uses tabs for indentation and the deploy window is Thursday.\n\n"
     "Which day is the deploy window?", "Thursday."),
)

#: Words in a file's name or metadata that mark an instruction-tuned build ...
_TUNED = re.compile(r"(?:^|[^a-z])(instruct\w*|it|chat|sft|dpo|rlhf|orpo)(?:[^a-z]|$)")
#: ... and a base (pretrained only) build.
_BASE = re.compile(r"(?:^|[^a-z])(base|pretrain\w*|pt)(?:[^a-z]|$)")


class TranscriptTemplate(ChatTemplate):
    """The transcript form as a chat template."""

    def __init__(
        self, *, bos_token: str = "", eos_token: str = "", recall_layout: Layout = lay_out
    ) -> None:
        #: How recall's excerpts are shown (a trial layout in ``bench.recall_form``).
        self.recall_layout = recall_layout
        super().__init__(
            TRANSCRIPT_TEMPLATE, bos_token=bos_token, eos_token=eos_token,
            origin=TRANSCRIPT_ORIGIN,
        )
        self.stops = TRANSCRIPT_STOPS
        self.recall_unlabeled = False  # it lays recall's labeled block out itself

    def adapt(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None
    ) -> list[dict[str, Any]]:
        """The text protocol's messages with the worked examples before the latest user
        message, and recall's excerpts in it laid out for a base model."""
        out = super().adapt(messages, tools)
        at = examples_at(out)
        shots: list[dict[str, Any]] = []
        for said, answer in WORKED_EXAMPLES:
            shots += [{"role": "user", "content": said}, {"role": "assistant", "content": answer}]
        block = split_block(str(out[at].get("content") or "")) if at < len(out) else None
        if block is None:
            return out[:at] + shots + out[at:]
        return self.recall_layout(out, at, block, shots)


def examples_at(messages: Sequence[dict[str, Any]]) -> int:
    """Where the worked examples go: before the latest message the user wrote (not a tool
    result), else after the system message. Next to the question: placed after the system
    message, gemma wrote the latest assistant line again (W1 0.58 of oracle (i), 1.00 here)."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m["role"] == "user" and not str(m.get("content") or "").startswith(TOOL_RESULT):
            return i
    return 1 if messages and messages[0]["role"] == "system" else 0


def choose_form(
    instruction_tuned: bool | None, metadata: Mapping[str, str], filename: str
) -> tuple[PromptForm, str]:
    """The prompt form for a model ("auto") and why, for the models page: the registry's
    ``instruction_tuned`` (None: unregistered), else the file's template and names."""
    if instruction_tuned is not None:
        if instruction_tuned:
            return "chat", "the registry lists it as instruction tuned"
        return "transcript", "the registry lists it as a base model (not instruction tuned)"
    if not metadata.get("tokenizer.chat_template"):
        return "transcript", "the file has no chat template"
    names = " ".join(
        metadata.get(k, "") for k in ("general.name", "general.finetune", "general.basename")
    )
    words = f"{names} {filename}".lower()
    if _BASE.search(words) and not _TUNED.search(words):
        return "transcript", "its name or metadata say it is a base model"
    return "chat", "the file has a chat template"
