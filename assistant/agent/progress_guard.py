"""Ending a turn that goes round in circles: the same call again, or rounds that get nowhere.

Small models, once a tool result is in front of them, often ask for it again (the same file,
the same arguments) or try call after call that fails, until the step limit. Each round of
calls is judged by :class:`ProgressGuard`: a round *progresses* when at least one of its calls
ran and did something not done before in this turn. A call identical to an earlier one of
the turn (same tool, same arguments) is not run again: it is answered with
:data:`REPEAT_RESULT`, which points the model at the result it already has. After
:data:`MAX_IDLE_ROUNDS` rounds in a row without progress the turn ends with a plain note
(:meth:`ProgressGuard.stop_note`), so the last thing the user sees is never a call that
failed or was repeated without a word of why.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from assistant.compaction.request import PreparedRequest
from assistant.conversation import ToolCall
from assistant.llm.base import EncodedPrompt, LLMBackend, ModelInfo, PromptEncoder

#: Rounds in a row without progress before the turn ends.
MAX_IDLE_ROUNDS = 2

#: What a repeated call is answered with instead of running it again.
REPEAT_RESULT = (
    "Already done: this exact call was made earlier in this turn and its result is above. "
    "Do not call it again. Answer the user now from the results you have."
)

#: The turn's last call, after a round of only repeated calls, ends with this request (in
#: the prompt only, never in the chat). Measured on Qwen2.5-Coder 1.5B with three tool
#: results in front of it: the request answered all three in words (the folder found, the
#: line edited, the file created), while the same prompt without it repeated the call or
#: echoed the tool response, and a system-prompt note with the tools withdrawn answered
#: one of three and re-read the whole prompt (the tools are in the system message).
ANSWER_FROM_RESULTS = (
    "Answer my question now from the tool results above, in plain words. Do not call a tool."
)


def call_signature(call: ToolCall) -> str:
    """One call's identity within a turn: its tool and arguments (key order ignored)."""
    args = call.raw_arguments if call.raw_arguments is not None else json.dumps(
        call.arguments, sort_keys=True, ensure_ascii=False
    )
    return f"{call.name}\x00{args}"


@dataclass
class ProgressGuard:
    """The calls of one turn, and how many rounds in a row got nowhere."""

    seen: set[str] = field(default_factory=set)
    idle_rounds: int = 0
    #: Why the last idle round got nowhere: "repeat" or "failed".
    last_reason: str = ""
    repeated_tools: list[str] = field(default_factory=list)

    def is_repeat(self, call: ToolCall) -> bool:
        """Whether ``call`` was already made in this turn (it is then not run again)."""
        return call_signature(call) in self.seen

    def record_round(self, calls: list[ToolCall], ran_ok: list[bool]) -> None:
        """After a round: ``ran_ok[i]`` says whether ``calls[i]`` ran without error (a
        repeat answered with :data:`REPEAT_RESULT` counts as not run)."""
        new_work = False
        repeats: list[str] = []
        for call, ok in zip(calls, ran_ok, strict=True):
            sig = call_signature(call)
            if sig in self.seen:
                repeats.append(call.name)
            elif ok:
                new_work = True
            self.seen.add(sig)
        if new_work:
            self.idle_rounds = 0
            self.last_reason = ""
            return
        self.idle_rounds += 1
        self.last_reason = "repeat" if repeats else "failed"
        self.repeated_tools = repeats

    @property
    def should_stop(self) -> bool:
        return self.idle_rounds >= MAX_IDLE_ROUNDS

    def stop_note(self) -> str:
        """The note that ends a turn going round in circles, for a person."""
        if self.last_reason == "repeat":
            what = (f"kept asking for the same {self.repeated_tools[0]} call instead of "
                    "answering" if self.repeated_tools else "did not answer in words")
            return (
                f"Stopped: the assistant {what}. What it found is shown above. Ask again in "
                "other words, use /read FILE to show it a file yourself, or pick a larger "
                "model in Models."
            )
        return (
            "Stopped: the assistant's last tool calls all failed, so it could not finish. "
            "Try /read, /ls, /find or /grep yourself, or rephrase the request."
        )


def echoes_a_result(text: str, model: ModelInfo) -> bool:
    """Whether a reply writes out a tool result instead of answering: it starts with what a
    result opens with in the model's template (``model.tool_result_tag``; Qwen2.5-Coder
    1.5B answered "<tool_response> Created hello.txt ...")."""
    tag = model.tool_result_tag
    return bool(tag) and text.lstrip().startswith(tag)


def with_answer_request(
    backend: LLMBackend, prepared: PreparedRequest, tools: Sequence[dict[str, Any]]
) -> PreparedRequest:
    """``prepared`` with :data:`ANSWER_FROM_RESULTS` after it as a user message, counted
    exactly; the reply's room shrinks by what it adds. Appended to the rendered prompt,
    not to the chat, so the turn's calls keep the form the model saw them in."""
    messages = [*prepared.messages, {"role": "user", "content": ANSWER_FROM_RESULTS}]
    if isinstance(backend, PromptEncoder):
        done = backend.encode_prompt(messages, tools)
        encoded: EncodedPrompt | None = done
        count = done.count
    else:
        encoded, count = None, backend.count_prompt(messages, tools)
    added = count - prepared.prompt_tokens
    return replace(prepared, messages=messages, prompt_tokens=count, prompt=encoded,
                   reserve=max(1, prepared.reserve - max(0, added)))
