"""A base model answers through the app's prompt path in the transcript form (issue 25,
gemma-3-270m): a fact the user stated is asked back through the agent (the context
controller's prompt, the system prompt, the tools' text protocol), and the reply gives it;
the same chat in the chat form the app used before (the gemma GGUF has no chat template,
so the ChatML fallback) gets the question repeated instead (measured first: "Which port
does the staging server listen on?").

The form's counts are the prompt's tokens exactly (also with recall's excerpts laid out for
a base model: assistant/llm/transcript_recall.py), and its reply ends before the model's
next "User:" line. Bounded: a 1,024-token window, one thread, temperature 0, two answers of
at most 24 tokens (about 10 s of gemma work on the loaded 2-core machine).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from assistant.config import Settings
from assistant.conversation import Conversation, Message
from assistant.engine import build_engine
from assistant.llm.base import GenerationOptions, GenerationResult
from assistant.llm.llama_backend import LlamaBackend
from assistant.llm.registry import resolve_model
from assistant.llm.transcript import TRANSCRIPT_ORIGIN
from assistant.llm.transcript_recall import HEADING_BEFORE

pytestmark = pytest.mark.integration

FACT = "Our staging server port is 4406. Please keep that in mind."
QUESTION = "Which port does the staging server listen on?"


@pytest.fixture(scope="module")
def gemma() -> Iterator[LlamaBackend]:
    path, _entry = resolve_model("gemma-3-270m")
    if not path.exists():
        pytest.skip("gemma-3-270m is not provisioned")
    backend = LlamaBackend.load("gemma-3-270m", n_ctx=1024, threads=1)
    yield backend
    backend.close()


def _answers(reply: str) -> bool:
    """The reply gives the port, not an echo of the prompt (through the chat form gemma
    copies the prompt: the recall excerpt with the fact, then the question)."""
    return "4406" in reply and "Which port" not in reply and "turn 1" not in reply


def _ask(backend: LlamaBackend, workspace: Path) -> tuple[str, str]:
    """The app's answer to QUESTION after FACT (and a short reply), and the prompt text."""
    settings = Settings(workspace=str(workspace))
    settings.sampling.temperature = 0.0
    settings.sampling.max_reply_tokens = 24
    engine = build_engine(backend, lambda: settings, None, lambda _e: None)
    conv = Conversation()
    conv.append(Message(role="user", content=FACT))
    conv.append(Message(role="assistant", content="Noted."))
    backend.reset_kv_cache()
    engine.agent.chat(conv, QUESTION)
    last = conv.messages[-1]
    assert last.role == "assistant"
    return last.content, backend.render_prompt(
        [{"role": "user", "content": FACT}, {"role": "user", "content": QUESTION}]
    )


def test_a_base_model_answers_a_stated_fact_in_the_transcript_form(
    gemma: LlamaBackend, tmp_path: Path
) -> None:
    assert gemma.prompt_form == "transcript"  # the registry: not instruction tuned
    assert gemma.info.chat_template_source == TRANSCRIPT_ORIGIN
    answer, prompt = _ask(gemma, tmp_path)
    assert "User: " + QUESTION in prompt and prompt.endswith("Assistant:")
    assert _answers(answer) and answer == answer.strip() and "User:" not in answer
    try:
        gemma.use_prompt_form("chat")  # what the app showed it before
        # The file has no chat template of its own: the chat form is the ChatML fallback.
        assert "<|im_start|>" in gemma.render_prompt([{"role": "user", "content": "x"}])
        before, _ = _ask(gemma, tmp_path)
        assert not _answers(before), before
    finally:
        gemma.use_prompt_form(None)
    assert gemma.prompt_form == "transcript"


def test_the_transcript_form_is_counted_exactly_and_stops_at_the_next_user_line(
    gemma: LlamaBackend,
) -> None:
    messages = [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": FACT},
        {"role": "assistant", "content": "Noted."},
        # As recall puts a fact back beside the question (shown as a plain line).
        {"role": "user", "content": f"{HEADING_BEFORE}\n- (turn 1, I said) {FACT}\n\n{QUESTION}"},
    ]
    text = gemma.render_prompt(messages)
    assert f"Earlier I said: {FACT}\n\n{QUESTION}\n\nAssistant:" in text
    count = gemma.count_prompt(messages)
    assert count == len(gemma.tokenize(text)) == gemma.encode_prompt(messages).count
    result: GenerationResult | None = None
    gemma.reset_kv_cache()
    for event in gemma.generate(messages, GenerationOptions(max_tokens=24, temperature=0.0)):
        result = event.result or result
    assert result is not None and result.prompt_tokens == count
    assert "4406" in result.text and "User:" not in result.text
    assert result.finish_reason == "stop" and result.text == result.text.strip()
