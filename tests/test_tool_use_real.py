"""Tool use with the real models: the small model, measured failing the tool-use probe, is
offered no tools and says once how to give it a file; the first-run model does a newcomer's
file tasks (read a file and answer; write a new file) as the tool-use probe checks them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assistant.agent.events import Notice
from assistant.config import Settings
from assistant.conversation import Conversation
from assistant.engine import build_engine
from assistant.llm.base import GenerationOptions

pytestmark = pytest.mark.integration


def test_the_small_model_gets_no_tools_and_the_user_is_told(
    real_backend: Any, tmp_path: Path
) -> None:
    real_backend.reset_kv_cache()
    events: list[Any] = []
    settings = Settings(workspace=str(tmp_path))
    settings.sampling.max_reply_tokens = 24
    engine = build_engine(real_backend, lambda: settings, None, events.append)
    assert not engine.agent.offer_tools  # the registry's measured score: 0 of 6
    prompts: list[str] = []
    original = real_backend.generate

    def seen(messages: Any, options: GenerationOptions, **kw: Any) -> Any:
        prompts.append(kw["prompt"].text if kw.get("prompt") else "")
        return original(messages, options, **kw)

    real_backend.generate = seen
    try:
        conv = Conversation()
        engine.agent.chat(conv, "Read the file notes.txt and tell me when the meeting is.")
    finally:
        del real_backend.generate
    notes = [e.text for e in events if isinstance(e, Notice)]
    assert any("cannot use the file tools" in n and "/read FILE" in n for n in notes)
    assert prompts and "read_file" not in prompts[0] and "tool_call" not in prompts[0]
    assert [m.role for m in conv.messages] == ["user", "assistant"]  # no call was run
