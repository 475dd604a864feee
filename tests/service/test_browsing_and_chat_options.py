"""Looking at branches changes nothing until the user continues on one; the context figures
are there as soon as a chat is shown; each chat keeps its own model and system prompt."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from assistant.agent.events import ContextUsage
from assistant.config import Settings
from assistant.llm.base import LLMBackend
from assistant.service.chat_options import ChatOptions
from assistant.service.events import ConversationReset, ModelSwitchSuggested
from assistant.sessions.store import SessionStore
from assistant.sessions.summary import is_branch_summary
from tests.fakes.scripted import ScriptedBackend

from .conftest import Rig

Make = Callable[..., Rig]


def _branched(make_rig: Make) -> Rig:
    rig = make_rig("Paris.", "Rome.", "Madrid.")
    s = rig.service
    s.submit("Capital of France?")
    s.edit_message(s.chat.conversation.messages[0].id, "Capital of Italy?")
    return rig


def test_looking_at_another_branch_writes_nothing(make_rig: Make) -> None:
    rig = _branched(make_rig)
    s = rig.service
    assert s.chat.handle is not None
    path = s.chat.handle.path
    size = path.stat().st_size
    s.switch_branch(s.chat.conversation.messages[0].id, -1)
    assert s.browsing
    shown = s.chat.shown_conversation.messages
    assert [m.content for m in shown] == ["Capital of France?", "Paris."]
    assert [m.content for m in s.chat.conversation.messages] == ["Capital of Italy?", "Rome."]
    assert path.stat().st_size == size
    # Back to the branch the chat is on: nothing is being browsed any more.
    s.switch_branch(s.chat.shown_conversation.messages[0].id, 1)
    assert not s.browsing and path.stat().st_size == size
    # Reopened, the chat is where it was.
    chat_id = s.chat.chat_id
    assert chat_id is not None
    s.new_chat()
    s.open_chat(chat_id)
    assert [m.content for m in s.chat.conversation.messages] == ["Capital of Italy?", "Rome."]


def test_continuing_on_a_shown_branch_moves_the_chat_there(make_rig: Make) -> None:
    rig = _branched(make_rig)
    s = rig.service
    s.switch_branch(s.chat.conversation.messages[0].id, -1)
    resets = len(rig.of(ConversationReset))
    s.submit("And of Spain?")
    assert not s.browsing
    contents = [m.content for m in s.chat.conversation.messages]
    assert contents[:2] == ["Capital of France?", "Paris."]
    assert contents[-2:] == ["And of Spain?", "Madrid."]
    # The branch it left is summarized into the one it continues (as before).
    assert any(is_branch_summary(m) for m in s.chat.conversation.messages)
    assert len(rig.of(ConversationReset)) > resets  # the window re-renders with it
    assert s.chat.shown_conversation is s.chat.conversation


def test_the_context_is_counted_when_a_chat_is_shown(make_rig: Make) -> None:
    rig = _branched(make_rig)
    s = rig.service

    def last_usage() -> ContextUsage:
        return rig.of(ContextUsage)[-1]

    on_branch = last_usage().prompt_tokens
    s.switch_branch(s.chat.conversation.messages[0].id, -1)
    shown = last_usage()
    assert shown.prompt_tokens != on_branch
    assert shown.prompt_tokens == rig.backend.count_prompt(
        [{"role": "system", "content": s.settings.system_prompt}]
        + [m.to_openai() for m in s.chat.shown_conversation.messages],
        s.model.engine.agent.registry.schemas() if s.model.engine else None,
    )
    s.new_chat()
    empty = last_usage()
    assert empty.segments["conversation"] == 0 and empty.segments["system"] > 0
    assert empty.segments["tools"] > 0 and empty.window == 8192


def test_a_read_updates_the_context_without_a_model_call(
    make_rig: Make, tmp_path: Path
) -> None:
    ws = tmp_path / "workspace"
    ws.mkdir()
    (ws / "big.txt").write_text("lorem ipsum dolor\n" * 300, encoding="utf-8")
    rig = make_rig(settings=Settings(workspace=str(ws)))
    before = rig.of(ContextUsage)[-1].prompt_tokens
    calls = len(rig.backend.calls)
    rig.service.submit("/read big.txt")
    assert len(rig.backend.calls) == calls
    after = rig.of(ContextUsage)[-1]
    assert after.prompt_tokens > before + 1000
    assert after.segments["tool_outputs"] > 1000


def test_a_chat_keeps_its_system_prompt_when_the_default_changes(make_rig: Make) -> None:
    rig = make_rig("Ahoy.", "Hello.")
    s = rig.service
    s.set_chat_options(ChatOptions(s.settings.model, "You are a pirate."))
    s.submit("Hi")
    assert rig.backend.calls[-1].messages[0]["content"] == "You are a pirate."
    pirate_chat = s.chat.chat_id
    assert pirate_chat is not None
    s.new_chat()
    assert s.chat_options().system_prompt == s.settings.system_prompt  # the default again
    s.apply_settings(s.settings.model_copy(update={"system_prompt": "Be formal."}))
    s.submit("Good morning")
    assert rig.backend.calls[-1].messages[0]["content"] == "Be formal."
    s.open_chat(pirate_chat)
    assert s.chat_options().system_prompt == "You are a pirate."


def test_a_chat_opened_with_another_model_loaded_asks_before_switching(
    make_rig: Make, tmp_path: Path
) -> None:
    loads: list[str] = []
    backend = ScriptedBackend(["one", "two", "three"])

    def factory(model: str, _n: int, _t: int) -> LLMBackend:
        loads.append(model)
        return backend

    store = SessionStore()
    rig = make_rig(factory=factory, store=store, settings=Settings(
        model="smollm2-135m-instruct", workspace=str(tmp_path / "ws")))
    s = rig.service
    s.submit("Hello")
    first_chat = s.chat.chat_id
    assert first_chat is not None
    s.use_model("gemma-3-270m")
    assert loads[-1] == "gemma-3-270m"
    s.new_chat()
    s.submit("Hello gemma")
    s.open_chat(first_chat)
    (asked,) = rig.of(ModelSwitchSuggested)
    assert (asked.chat_model, asked.loaded_model) == ("smollm2-135m-instruct", "gemma-3-270m")
    assert loads[-1] == "gemma-3-270m"  # nothing switched without asking
    s.use_model(asked.chat_model)
    assert loads[-1] == "smollm2-135m-instruct"
    # Answering with the loaded model records it: no question next time.
    s.submit("Back again")
    s.new_chat()
    s.open_chat(first_chat)
    assert len(rig.of(ModelSwitchSuggested)) == 1
