"""Continue generation (issue 26): the model is asked to go on; what it adds is joined to
the reply, a repeat of what was already written is dropped."""

from __future__ import annotations

from pathlib import Path

from assistant.agent.continuation import CONTINUE_REQUEST, only_new
from assistant.agent.events import AgentEvent, Notice, TurnFinished
from assistant.agent.loop import Agent
from assistant.compaction.controller import ContextController
from assistant.config import Settings
from assistant.conversation import Conversation, Message
from assistant.llm.base import LLMError
from assistant.tools.registry import ToolRegistry
from tests.fakes.scripted import ScriptedBackend


def _agent(backend: ScriptedBackend, tmp_path: Path) -> tuple[Agent, list[AgentEvent]]:
    settings = Settings(workspace=str(tmp_path))
    policy = settings.effective_policy(backend.info.trained_context)
    controller = ContextController(backend, lambda: policy)
    events: list[AgentEvent] = []
    agent = Agent(backend, controller, ToolRegistry.default(), lambda: settings, None,
                  events.append)
    controller.on_event = agent.on_context_event
    return agent, events


def _branch(conv: Conversation):  # type: ignore[no-untyped-def]
    def move(reply: Message) -> None:
        conv.messages.remove(reply)

    return move


def test_the_repeat_of_a_restart_is_dropped(tmp_path: Path) -> None:
    backend = ScriptedBackend(["Monday: work.\nTuesday: gym.", "Monday: work.\nTuesday: gym."
                               "\nWednesday: rest."])
    agent, events = _agent(backend, tmp_path)
    conv = Conversation()
    agent.chat(conv, "My week?")
    agent.continue_reply(conv, _branch(conv))
    assert conv.messages[-1].content == "Monday: work.\nTuesday: gym.\nWednesday: rest."
    asked = backend.calls[-1].messages[-1]
    assert asked["role"] == "user" and asked["content"].startswith(CONTINUE_REQUEST)
    assert asked["content"].endswith('It stopped at: "Monday: work. Tuesday: gym."')
    assert isinstance(events[-1], TurnFinished) and events[-1].error is None


def test_nothing_to_continue_says_so_and_changes_nothing(tmp_path: Path) -> None:
    backend = ScriptedBackend(["An answer.", "An answer."])
    agent, events = _agent(backend, tmp_path)
    conv = Conversation()
    conv.append(Message(role="user", content="hi"))
    agent.continue_reply(conv, _branch(conv))  # the last message is not a reply
    assert any(isinstance(e, Notice) and "no reply to continue" in e.text for e in events)
    agent.respond(conv)
    before = [m.content for m in conv.messages]
    agent.continue_reply(conv, _branch(conv))  # the model only repeats itself
    assert [m.content for m in conv.messages] == before
    assert any(isinstance(e, Notice) and "nothing to add" in e.text for e in events)


def test_only_new() -> None:
    assert only_new("One two three four five six", "four five six seven eight") == (
        " seven eight"
    )
    assert only_new("abc", "abc def") == " def"
    assert only_new("The end is near", "near and far") == "near and far"  # seam too short
    assert only_new("Hello there, friend.", "Hello there") == ""


class _TokenBackend(ScriptedBackend):
    """A scripted model that also generates from prompt tokens (like the embedded one);
    it keeps each prompt text it was given."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.prompt_texts: list[str] = []

    def tokenize_prompt(self, text: str) -> list[int]:
        self.prompt_texts.append(text)
        return super().tokenize_prompt(text)

    def generate_tokens(self, tokens, options, *, cancel=None, on_prefill=None):  # type: ignore[no-untyped-def]
        return self.generate([{"role": "user", "content": "(tokens)"}], options, cancel=cancel,
                             on_prefill=on_prefill)


def test_a_model_that_takes_tokens_goes_on_in_place(tmp_path: Path) -> None:
    backend = _TokenBackend(["Once upon a ti", "me, there was a llama."])
    agent, events = _agent(backend, tmp_path)
    conv = Conversation()
    agent.chat(conv, "A story?")
    agent.continue_reply(conv, _branch(conv))
    assert conv.messages[-1].content == "Once upon a time, there was a llama."
    # the prompt ended with the reply's own text: the assistant's turn was left open
    assert backend.prompt_texts[-1].endswith("Once upon a ti")
    assert CONTINUE_REQUEST not in backend.prompt_texts[-1]
    assert isinstance(events[-1], TurnFinished) and events[-1].error is None


def test_a_model_that_fails_while_going_on_leaves_the_reply_as_it_was(tmp_path: Path) -> None:
    def fail(messages: list[dict[str, object]]) -> str:
        raise LLMError("the model file went away")

    backend = ScriptedBackend(["Monday: work.\nTuesday: gym.", fail])
    agent, events = _agent(backend, tmp_path)
    conv = Conversation()
    agent.chat(conv, "My week?")
    before = [(m.role, m.content) for m in conv.messages]
    agent.continue_reply(conv, _branch(conv))
    assert [(m.role, m.content) for m in conv.messages] == before  # nothing moved or lost
    notices = [e.text for e in events if isinstance(e, Notice) and e.level == "error"]
    assert notices == ["The model could not continue: the model file went away"]
    assert isinstance(events[-1], TurnFinished)
    assert events[-1].error == "the model file went away"
