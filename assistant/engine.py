"""Builds the non-Qt core for one loaded model (context controller + tools + agent), the same
for the service and the smoke test, and turns the engine setting into a backend."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from assistant.agent.events import AgentEvent, PromptProgress
from assistant.agent.loop import Agent
from assistant.compaction.context_render import FOCUS_TOKENS
from assistant.compaction.controller import ContextController
from assistant.compaction.recall import IndexFor, PassageIndex, Recall
from assistant.config import CompactionSwitches, EffectivePolicy, Settings
from assistant.conversation import Conversation
from assistant.llm.base import LLMBackend, LLMError
from assistant.llm.context_probe import measured_context
from assistant.llm.openai_backend import ServerBackend, ServerConfig
from assistant.llm.server_probe import model_label
from assistant.llm.tool_score import offers_tools
from assistant.secrets import SecretStore, SecretStoreError
from assistant.sessions.recall_index import MemoryIndexes
from assistant.tools.approval import Approver
from assistant.tools.registry import ToolRegistry


@dataclass
class Engine:
    backend: LLMBackend
    controller: ContextController
    agent: Agent


def build_engine(
    backend: LLMBackend,
    settings: Callable[[], Settings],
    approver: Approver | None,
    on_event: Callable[[AgentEvent], None],
    recall_index: IndexFor | None = None,
    *,
    tools: bool | None = None,
) -> Engine:
    """``recall_index``: a conversation's full-text index (others are indexed in memory);
    ``tools``: whether the model is offered the tools (None: unless it was measured failing
    them, :mod:`assistant.llm.tool_score`)."""

    # The size the model was measured to use well (``python -m assistant probe``), read
    # once per loaded model: prompts are built within it, the window stays the hard bound.
    measured = measured_context(backend.info)

    def policy() -> EffectivePolicy:
        return settings().effective_policy(backend.info.trained_context, measured)

    offer = offers_tools(backend.info) if tools is None else tools
    # Earlier turns' calls as notes ("[I ran write_file ...]") helped the small models
    # answer; a model with native tool calls copies the note instead of calling (Qwen2.5-
    # Coder 1.5B wrote "[I ran write_file path=hello.txt ...]" and no file): it sees its
    # calls as its template writes them.
    calls_as_notes = not (offer and backend.info.supports_native_tools)

    def switches() -> CompactionSwitches:
        sw = settings().switches()
        if not calls_as_notes:
            sw.earlier_as_notes = False
        return sw

    controller = ContextController(backend, policy, switches=switches)
    attach_recall(controller, recall_index, focus=recall_focus(settings))
    # The tools' note was measured with a native-tools model (Qwen2.5-Coder 1.5B); models on
    # the text protocol were not measured with it, so they are shown the prompt as it was.
    agent = Agent(backend, controller, ToolRegistry.default(),
                  settings if calls_as_notes else with_tool_note(settings), approver, on_event,
                  offer_tools=offer)
    controller.on_event = agent.on_context_event
    # A summary written inside a turn shows its prompt evaluation like the chat's own.
    controller.on_summary_prefill = lambda done, total: on_event(PromptProgress(done, total))
    return Engine(backend, controller, agent)


#: Added to the system prompt when the model is offered the tools. Qwen2.5-Coder 1.5B, asked
#: "What is the capital of France?" with the tools at temperature 0.2, opened a read_file call
#: (of data/capitals.txt) 2 times in 8 without it and 0 times in 8 with it
#: (``python -m bench.tool_misuse``); small models also guessed a file's content instead of
#: looking.
TOOL_NOTE = (
    "The tools work on the files in the user's workspace folder. When the user asks about "
    "those files, use the tools to look first; never guess a file's name, place or content. "
    "Answer any other question directly, without a tool."
)


def with_tool_note(settings: Callable[[], Settings]) -> Callable[[], Settings]:
    """``settings`` whose system prompt ends with :data:`TOOL_NOTE` (a chat's own system
    prompt too)."""
    def read() -> Settings:
        current = settings()
        prompt = f"{current.system_prompt.rstrip()}\n\n{TOOL_NOTE}".lstrip()
        return current.model_copy(update={"system_prompt": prompt})
    return read


def recall_focus(settings: Callable[[], Settings]) -> Callable[[], int | None]:
    """The history tokens shown beside recall's excerpts (None: all, the setting off)."""
    return lambda: FOCUS_TOKENS if settings().switches().recall_focus else None


def attach_recall(
    controller: ContextController,
    recall_index: IndexFor | None = None,
    focus: Callable[[], int | None] | None = None,
) -> Recall:
    """Give ``controller`` recall as the app has it: ``recall_index`` gives a conversation's
    index (else one in memory); ``focus``: how much history is shown beside the excerpts."""
    in_memory = MemoryIndexes()

    def index_for(conv: Conversation) -> PassageIndex | None:
        found = recall_index(conv) if recall_index is not None else None
        return found if found is not None else in_memory.get(conv)

    controller.recall = Recall(controller.counter, index_for)
    if focus is not None:
        controller.focus_tokens = focus
    return controller.recall


#: Overrides the stored API key (the terminal chat, scripts).
API_KEY_ENV = "ASSISTANT_API_KEY"


def uses_server(settings: Settings) -> bool:
    return settings.engine.kind == "server"


def engine_label(settings: Settings) -> str:
    """What is being loaded, for the status bar: a model name, or a model at an address."""
    if not uses_server(settings):
        return settings.model
    server = settings.engine.server
    model = model_label(server.model) if server.model else "the server's model"
    return f"{model} at {server.base_url}"


def server_config(settings: Settings, api_key: str | None = None) -> ServerConfig:
    """The server engine's settings as the backend takes them."""
    server = settings.engine.server
    perf = settings.performance
    return ServerConfig(
        base_url=server.base_url, model=server.model, api_key=api_key,
        tokenizer_gguf=server.tokenizer_gguf, window=server.window,
        fallback_window=settings.policy().window, tool_calls=server.tool_calls,
        timeout_s=server.timeout_s, reply_deadline_s=server.reply_limit_s,
        seed=settings.sampling.seed,
        # Chunk reuse (on by default, approximate) asks llama-server to move cached text too.
        cache_reuse=perf.server_chunk_reuse_min if perf.chunk_reuse else 0,
    )


def api_key_for(base_url: str) -> str | None:
    """The key for ``base_url``: ``$ASSISTANT_API_KEY``, else the stored one (or None)."""
    from_env = os.environ.get(API_KEY_ENV, "").strip()
    if from_env:
        return from_env
    try:
        return SecretStore().get(base_url)
    except SecretStoreError as exc:
        raise LLMError(f"Cannot read the API key for {base_url}: {exc}") from exc


def server_builder(settings: Settings) -> Callable[[], LLMBackend] | None:
    """A function that connects to the configured server on the worker (None: embedded engine)."""
    if not uses_server(settings):
        return None
    frozen = settings.model_copy(deep=True)

    def build() -> LLMBackend:
        key = api_key_for(frozen.engine.server.base_url)
        return ServerBackend.connect(server_config(frozen, key))

    return build
