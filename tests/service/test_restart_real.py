"""Issue 43 with the real small model: after quitting and relaunching (a new service, the
model loaded again), the first reply evaluates only the new question; the rest of its
prompt comes from the chat's saved model state. Bounded: two short exchanges, 16-token
replies, a 2,048-token window (about 4 minutes on 2 loaded cores)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from assistant.agent.events import ModelCallFinished
from assistant.config import Settings
from assistant.llm.base import LLMBackend
from assistant.llm.llama_backend import LlamaBackend
from assistant.service.events import ModelStateRestored
from bench.restart import windowed

from .conftest import Rig

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _load(model: str, n_ctx: int, threads: int) -> LLMBackend:
    return LlamaBackend.load(model, n_ctx=n_ctx, threads=threads)


def test_the_first_reply_after_a_relaunch_evaluates_only_the_new_question(
    make_rig: Callable[..., Rig], embedded_model_path: Path, tmp_path: Path
) -> None:
    settings = windowed(Settings(model=str(embedded_model_path),
                                 workspace=str(tmp_path / "workspace")), 2_048)
    settings.sampling.max_reply_tokens = 16
    # Recall's excerpts change a prompt's history beside a question that finds them (before
    # quitting as after: bench.restart compares those); here only the saved state counts.
    settings.compaction.recall = False
    rig = make_rig(settings=settings, factory=_load)
    for text in ("Hello! My name is Ada and I keep bees.", "Thanks, that helps."):
        assert rig.service.submit(text)
    chat_id = rig.service.chat.chat_id
    assert chat_id is not None
    rig.service.shutdown()  # quit

    again = make_rig(settings=settings, factory=_load)  # relaunch: the model loaded anew
    assert again.service.open_chat(chat_id)
    restored = again.of(ModelStateRestored)
    assert restored and restored[-1].tokens > 0, restored
    assert again.service.submit("Thanks. What do I keep?")
    result = again.of(ModelCallFinished)[0].result
    assert again.service.chat.conversation.messages[-1].role == "assistant"
    question = again.service.model.engine.backend.count(  # type: ignore[union-attr]
        "Thanks. What do I keep?")
    assert result.prompt_reused >= restored[-1].tokens - 2  # the saved state, all of it
    assert result.prompt_evaluated == result.prompt_tokens - result.prompt_reused
    # The question, its turn markers and the reply's opening: nothing of the history.
    assert result.prompt_evaluated <= question + 16, result
