"""The transcript form: how a base (not instruction-tuned) model is shown the chat.

A base model was never trained to take part in its chat template's turns: gemma-3-270m
given the app's chat prompt (a passage and a question in Gemma turns) answered 1 of 12 W2
oracle questions, with empty replies or the question repeated (docs/ANSWERS.md,
"gemma-3-270m"). It continues plain text, so the conversation is written as a transcript
for it to continue::

    <system message: system prompt, summary/record, recall excerpts, tool protocol>

    User: <message>

    Assistant: <reply>

    User: <worked example 1>

    Assistant: <its answer>

    ... (the two :data:`WORKED_EXAMPLES`)

    User: <latest message> (recall's excerpts in it as plain lines, the question again
          after them: :mod:`.transcript_recall`)

    Assistant:

and the reply stops at the model's next ``User:`` line (:data:`TRANSCRIPT_STOPS`). The two
short worked exchanges (generic facts, nothing from the user's chat) show the model that
an assistant line answers the question above it: on W2's oracle passages gemma answered 3
of 12 without them and 7 with them (``python -m bench.base_prompt``). They sit right before
the latest message (:func:`examples_at`), so each turn evaluates them again (68
tokens for gemma) with the previous message.

:class:`TranscriptTemplate` is a :class:`~assistant.llm.template.ChatTemplate` with this
form as its Jinja source, so everything else holds unchanged: tool calls and results use
the text protocol (the form has no ``tools``), and the backend renders, counts and
evaluates the same text, so counts stay exact.

:func:`choose_form` decides which form a model gets ("auto"): the registry's
``instruction_tuned`` when the file is registered, else the file's metadata.
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

#: Two worked exchanges shown before the conversation: (what the user says, the answer).
#: Generic on purpose: they teach the form (answer the question from what was said, in a
#: few words), not any fact of a chat.
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
    """The transcript form as a chat template (see the module docstring)."""

    def __init__(
        self, *, bos_token: str = "", eos_token: str = "", recall_layout: Layout = lay_out
    ) -> None:
        #: How recall's excerpts are shown (:mod:`.transcript_recall`; a trial layout in
        #: ``bench.recall_form``).
        self.recall_layout = recall_layout
        super().__init__(
            TRANSCRIPT_TEMPLATE, bos_token=bos_token, eos_token=eos_token,
            origin=TRANSCRIPT_ORIGIN,
        )
        self.stops = TRANSCRIPT_STOPS

    def adapt(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None
    ) -> list[dict[str, Any]]:
        """The text protocol's messages with the worked examples just before the latest
        user message (:func:`examples_at`), and recall's excerpts in that message laid out
        for a base model (:func:`.transcript_recall.lay_out`)."""
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
    """Where the worked examples go: before the latest message the user wrote (a tool
    result stays right after its call), else after the system message.

    Next to the question, because a base model continues the pattern nearest to it: with
    the examples after the system message, gemma answered W1's questions by writing the
    latest assistant line again ("[I ran write_file ...]"), 0.58 of oracle (i) after
    compactions; before the latest message 1.00 (docs/ANSWERS.md, "gemma-3-270m")."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m["role"] == "user" and not str(m.get("content") or "").startswith(TOOL_RESULT):
            return i
    return 1 if messages and messages[0]["role"] == "system" else 0


def choose_form(
    instruction_tuned: bool | None, metadata: Mapping[str, str], filename: str
) -> tuple[PromptForm, str]:
    """The prompt form for a model ("auto") and why, in words for the models page.

    ``instruction_tuned`` is the registry's word (None: the file is not registered). An
    unregistered file gets the transcript form when it has no chat template, or when its
    name or metadata say base/pretrained and nothing says instruct/chat/it; otherwise the
    chat template it carries."""
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
