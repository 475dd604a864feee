"""The turn loop: user input -> context check -> model -> tool calls -> ... -> answer.
Synchronous and UI-agnostic; reports through ``on_event`` in order (docs/ARCHITECTURE.md,
"One message, end to end"). Stop leaves a consistent history: a half reply is kept with
``stopped=True`` and unanswered calls get a "cancelled" result. User-started tools enter
the history like the model's calls and start no model reply (typing them is the approval)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from assistant.agent.controller_api import ContextManager, DraftPreview
from assistant.agent.events import (
    AgentEvent,
    AssistantDelta,
    ContextChanged,
    MessageAdded,
    MessageRefused,
    ModelCallFinished,
    Notice,
    PromptProgress,
    ToolCallStarted,
    TurnFinished,
)
from assistant.agent.overflow import overflow_message
from assistant.agent.progress_guard import (
    REPEAT_RESULT,
    ProgressGuard,
    echoes_a_result,
    with_answer_request,
)
from assistant.agent.tool_steps import CANCELLED_RESULT, ToolRunner, result_message
from assistant.agent.usage import context_usage, reply_figures
from assistant.compaction.events import ContextEvent
from assistant.compaction.request import CallRequest, PreparedRequest
from assistant.config import Settings
from assistant.conversation import (
    CompactionReason,
    CompactionRecord,
    Conversation,
    Message,
    ToolCall,
)
from assistant.llm.base import (
    CancelToken,
    ContextOverflowError,
    GenerationCancelled,
    GenerationOptions,
    GenerationResult,
    LLMBackend,
    LLMError,
    PromptWarmer,
    TokenGenerator,
    WarmResult,
)
from assistant.llm.toolcall import ParsedCall, parse_tool_calls
from assistant.tools.approval import ApprovalGate, Approver
from assistant.tools.base import ToolContext, ToolLimits, ToolResult
from assistant.tools.importing import import_file
from assistant.tools.registry import ToolRegistry
from assistant.tools.workspace import SandboxError, Workspace

log = logging.getLogger(__name__)

OVERFLOW_NO_COMPACT = (
    "Context too large, and compaction on overflow is turned off. Use /compact to retry."
)
#: Said once per chat to the user of a model that failed the tool-use probe.
NO_TOOLS_NOTE = (
    "This model cannot use the file tools reliably, so it answers only from the chat: use "
    "/read FILE to show it a file, or pick Qwen2.5 Coder in Models (Ctrl+M) to let the "
    "assistant read and write files itself."
)
#: Stop sequence for the text protocol: a model must not write the tool result itself.
TEXT_PROTOCOL_STOP = ("[Tool result:",)


class Agent:
    """Runs chat turns and tool commands against one conversation at a time. ``settings`` is read
    each turn; ``approver`` None denies model writes and commands unless approval is "auto".
    The builder connects the controller's ``on_event`` to :meth:`on_context_event`."""

    def __init__(
        self,
        backend: LLMBackend,
        controller: ContextManager,
        registry: ToolRegistry,
        settings: Callable[[], Settings],
        approver: Approver | None,
        on_event: Callable[[AgentEvent], None],
        *,
        offer_tools: bool = True,
    ) -> None:
        self.backend = backend
        #: False for a model measured failing the tool-use probe: it is offered no tools
        #: (the user's own /read, /ls, ... still work) and told so once per chat.
        self.offer_tools = offer_tools
        self._told_no_tools: Conversation | None = None
        self.controller = controller
        self.registry = registry
        self.settings = settings
        self.on_event = on_event
        self.gate = ApprovalGate(approver)
        self.runner = ToolRunner(registry, self.gate)
        self._approvals_for: Conversation | None = None
        self._context_events = 0

    def offered_tools(self) -> list[dict[str, Any]]:
        """The tool schemas the model is shown (none for a model that cannot use them)."""
        return self.registry.schemas() if self.offer_tools else []

    # -- entry points -------------------------------------------------------------------
    def chat(self, conv: Conversation, text: str, cancel: CancelToken | None = None) -> None:
        """One user message and all the model does about it (refused first if it cannot fit
        whole)."""
        cancel = cancel or CancelToken()
        self._bind(conv)
        self._tell_no_tools(conv)
        settings = self.settings()
        try:
            fit = self.controller.message_fit(
                CallRequest(conv, settings.system_prompt, self.offered_tools()), text
            )
        except LLMError:  # an engine that cannot count now (a server gone away): the
            fit = None    # message is kept, and the model call says what is wrong
        # With no room at all the system prompt (or the tools) is what does not fit: the
        # call then says so, and the message is kept.
        if fit is not None and not fit.fits and fit.room > 0:
            self.on_event(MessageRefused(text, fit.tokens, fit.room))
            self._finish_failed(fit.refusal())
            return
        self._turn(conv, cancel, Message(role="user", content=text))

    def respond(self, conv: Conversation, cancel: CancelToken | None = None) -> None:
        """The model turn of :meth:`chat` without a new message (after an edit or a regenerate)."""
        self._bind(conv)
        self._turn(conv, cancel or CancelToken())

    def _turn(
        self, conv: Conversation, cancel: CancelToken, message: Message | None = None
    ) -> None:
        """Append ``message`` (when there is one), then the model turn, then ``TurnFinished``."""
        try:
            if message is not None:
                self._append(conv, message)
            stopped, error = self._model_turn(conv, cancel)
        except OSError as exc:  # an observer could not save: nothing unsaved is shown
            self._finish_failed(f"Could not save the chat: {exc}")
            return
        self.on_event(TurnFinished(stopped=stopped, error=error))

    def continue_reply(
        self,
        conv: Conversation,
        branch: Callable[[Message], object],
        cancel: CancelToken | None = None,
    ) -> None:
        """Write more of the last reply, from its last token where the backend takes prompt tokens,
        else by asking (:mod:`.continuation`); ``branch(reply)`` moves the chat to just before
        the reply, then the joined reply is appended as its next version."""
        from assistant.agent.continue_turn import continue_reply

        continue_reply(self, conv, branch, cancel)

    def run_tool_command(
        self,
        conv: Conversation,
        tool: str,
        arguments: dict[str, Any],
        cancel: CancelToken | None = None,
    ) -> Message | None:
        """Run a tool the user asked for, no model call after; the result (None: not saved)."""
        cancel = cancel or CancelToken()
        self._bind(conv)
        call = self.registry.normalize(ToolCall(name=tool, arguments=dict(arguments)))
        try:
            self._append(conv, Message(role="assistant", tool_calls=[call], initiated_by="user"))
            messages = self._run_calls(conv, [ParsedCall(call)], cancel, "user")
        except OSError as exc:
            self._finish_failed(f"Could not save the chat: {exc}")
            return None
        self.on_event(TurnFinished(stopped=cancel.cancelled))
        return messages[0]

    def drop_file(
        self, conv: Conversation, path: Path, cancel: CancelToken | None = None
    ) -> Message | None:
        """/read a dropped file (copied into the workspace first:
        :mod:`assistant.tools.importing`)."""
        workspace = self.workspace()
        try:
            target, copied = import_file(workspace, path, max_bytes=self._limits().max_file_bytes)
        except (SandboxError, OSError) as exc:
            self.on_event(Notice("error", f"Cannot open the dropped file: {exc}"))
            self.on_event(TurnFinished(error=str(exc)))
            return None
        shown = workspace.display(target)
        if copied:
            self.on_event(Notice("info", f"Copied {path.name} into the workspace as {shown}."))
        return self.run_tool_command(conv, "read_file", {"path": shown}, cancel)

    def compact(
        self, conv: Conversation, focus: str | None = None, cancel: CancelToken | None = None
    ) -> CompactionRecord | None:
        cancel = cancel or CancelToken()
        before = self._context_events
        settings = self.settings()
        try:
            record = self.controller.compact(
                CallRequest(conv, settings.system_prompt, self.offered_tools(), cancel, focus),
                CompactionReason.MANUAL,
            )
        except GenerationCancelled:
            self.on_event(TurnFinished(stopped=True))
            return None
        except (LLMError, OSError) as exc:
            self._finish_failed(f"Compaction failed: {exc}")
            return None
        if record is None and self._context_events == before and not cancel.cancelled:
            self.on_event(Notice("info", "Nothing to compact yet."))
        self.on_event(TurnFinished(stopped=cancel.cancelled))
        return record

    def read_ahead(
        self, conv: Conversation, draft: str, cancel: CancelToken | None = None
    ) -> WarmResult | None:
        """While the user types ``draft``: evaluate into the engine's cache the prompt
        :meth:`chat` would send for it now (pruning, recall and focus as for the send), so
        that the send evaluates only what changed since. Changes nothing else: not ``conv``,
        no event, no compaction. None when nothing was read: an empty draft, one that
        would be refused or need a compaction, an engine or a controller that cannot."""
        backend, controller = self.backend, self.controller
        if (not draft.strip() or not isinstance(backend, PromptWarmer)
                or not isinstance(controller, DraftPreview)):
            return None
        settings = self.settings()
        tools = self.offered_tools()
        call = CallRequest(conv, settings.system_prompt, tools, cancel)
        try:
            if not controller.message_fit(call, draft).fits:
                return None
            trial = Conversation(
                messages=[*(m.model_copy() for m in conv.messages),
                          Message(role="user", content=draft)],
                compactions=list(conv.compactions),
            )
            prepared = controller.preview(call.on(trial), conv)
            if prepared is None or (cancel is not None and cancel.cancelled):
                return None
            return backend.warm(prepared.messages, tools=tools, cancel=cancel,
                                prompt=prepared.prompt)
        except LLMError as exc:  # a read-ahead is an aid: the send says what is wrong
            log.info("Read-ahead skipped: %s", exc)
            return None

    def workspace(self) -> Workspace:
        return Workspace(self.settings().workspace_path())

    # -- the model turn -------------------------------------------------------------------
    def _model_turn(self, conv: Conversation, cancel: CancelToken) -> tuple[bool, str | None]:
        """Model calls and tool rounds for the message just appended: (stopped, error)."""
        settings = self.settings()
        tools = self.offered_tools()
        rounds = 0
        guard = ProgressGuard()
        overflow_retried = False
        retry: PreparedRequest | None = None
        call = CallRequest(conv, settings.system_prompt, tools, cancel)
        call_start = time.perf_counter()
        while True:
            if cancel.cancelled:
                return True, None
            if retry is None:  # a retry after overflow counts from the failed call
                call_start = time.perf_counter()
            try:
                prepared = retry or self.controller.prepare(call)
            except GenerationCancelled:
                return True, None
            except LLMError as exc:  # e.g. a server engine that cannot count: it went away
                self.on_event(Notice("error", str(exc)))
                return False, str(exc)
            retry = None
            if cancel.cancelled:
                return True, None
            for note in prepared.notices:
                self.on_event(Notice("warning", note))
            try:
                text, result, ttft = self._generate(prepared, tools, settings, cancel, call_start)
            except ContextOverflowError:
                if overflow_retried or not settings.switches().compact_on_overflow:
                    message = (overflow_message(prepared.segments, prepared.window)
                               if overflow_retried else OVERFLOW_NO_COMPACT)
                    self.on_event(Notice("error", message))
                    return False, message
                overflow_retried = True
                try:
                    retry = self.controller.handle_overflow(call)
                except GenerationCancelled:
                    return True, None
                except (LLMError, OSError):
                    if cancel.cancelled:
                        return True, None
                    message = overflow_message(prepared.segments, prepared.window)
                    self.on_event(Notice("error", message))
                    return False, message
                continue
            except StreamFailed as failed:
                if failed.text:
                    self._append(conv, Message(role="assistant", content=failed.text, stopped=True))
                self.on_event(Notice("error", f"The model failed: {failed.error}"))
                return False, str(failed.error)
            figures = reply_figures(result, ttft)
            if cancel.cancelled or (result is not None and result.stopped):
                if text:
                    self._append(conv, Message(role="assistant", content=text, stopped=True,
                                               figures=figures))
                return True, None
            parsed = parse_tool_calls(text)
            calls = [
                ParsedCall(self.registry.normalize(p.call), p.error) if p.error is None else p
                for p in parsed.calls
            ]
            if (all(p.error is None and guard.is_repeat(p.call) for p in calls) if calls  # "Turns
                    else rounds and echoes_a_result(text, self.backend.info)):  # that go round"
                return self._answer_from_results(conv, settings, cancel, calls)
            if not calls:
                if not text.strip():
                    self.on_event(Notice("warning", "The assistant stopped without writing "
                                         "an answer." + (" What its tools found is shown "
                                         "above." if rounds else "")))
                    return False, None
                self._append(conv, Message(role="assistant", content=text, figures=figures))
                return False, None
            self._append(conv, Message(role="assistant", content=parsed.content,
                                       tool_calls=[p.call for p in calls], figures=figures))
            results = self._run_calls(conv, calls, cancel, "model", guard)
            if cancel.cancelled:
                return True, None
            rounds += 1
            guard.record_round([p.call for p in calls],
                               [not m.is_error and m.content != REPEAT_RESULT for m in results])
            if guard.should_stop:
                self.on_event(Notice("warning", guard.stop_note()))
                return False, None
            if rounds >= settings.step_limit:
                self.on_event(Notice("warning", f"Stopped after {rounds} tool steps (the step "
                                  "limit). Send a message to let the assistant continue."))
                return False, None

    def _answer_from_results(
        self, conv: Conversation, settings: Settings, cancel: CancelToken, calls: list[ParsedCall]
    ) -> tuple[bool, str | None]:
        """After ``calls`` it already made (or none: a result written out), the turn's last call:
        the prompt so far and :data:`ANSWER_FROM_RESULTS` (its prefix stays cached), as a
        small model then answers in words. A call it writes anyway is not run; no words: a
        note ends the turn."""
        tools, start = self.offered_tools(), time.perf_counter()
        call = CallRequest(conv, settings.system_prompt, tools, cancel)
        try:
            prepared = with_answer_request(self.backend, self.controller.prepare(call), tools)
            text, result, ttft = self._generate(prepared, tools, settings, cancel, start)
        except GenerationCancelled:
            return True, None
        except (LLMError, StreamFailed) as exc:
            self.on_event(Notice("error", f"The model failed: {exc}"))
            return False, str(exc)
        stopped = cancel.cancelled or (result is not None and result.stopped)
        answer = parse_tool_calls(text).content.strip()
        if answer and not echoes_a_result(answer, self.backend.info):
            self._append(conv, Message(role="assistant", content=answer, stopped=stopped,
                                       figures=reply_figures(result, ttft)))
        elif not stopped:
            stuck = ProgressGuard(last_reason="repeat", repeated_tools=[c.call.name for c in calls])
            self.on_event(Notice("warning", stuck.stop_note()))
        return stopped, None

    def _generate(
        self,
        prepared: PreparedRequest,
        tools: Sequence[dict[str, Any]],
        settings: Settings,
        cancel: CancelToken,
        call_start: float,
        tokens: list[int] | None = None,
    ) -> tuple[str, GenerationResult | None, float | None]:
        """Report the prompt, stream one reply to ``prepared`` (its tokens, not tokenized again)
        or from ``tokens`` (a continuation), and report the call: (text, result, time to the
        first token from ``call_start``). Overflow propagates; other failures become
        StreamFailed."""
        self.on_event(context_usage(prepared, estimated=not self.backend.info.exact_counts))
        pieces: list[str] = []
        result: GenerationResult | None = None
        stop = () if self.backend.info.supports_native_tools else TEXT_PROTOCOL_STOP
        sampling = settings.sampling
        max_tokens = max(1, min(sampling.max_reply_tokens, prepared.reserve))
        options = GenerationOptions(max_tokens=max_tokens, temperature=sampling.temperature,
                                    top_p=sampling.top_p, stop=stop)
        gen_start = time.perf_counter()

        def progress(done: int, total: int) -> None:
            self.on_event(PromptProgress(done, total))

        backend = self.backend
        if tokens is not None and isinstance(backend, TokenGenerator):
            stream = backend.generate_tokens(tokens, options, cancel=cancel, on_prefill=progress)
        else:
            stream = backend.generate(
                prepared.messages, options, tools=tools, cancel=cancel, on_prefill=progress,
                prompt=prepared.prompt,
            )
        try:
            for event in stream:
                if event.delta:
                    pieces.append(event.delta)
                    self.on_event(AssistantDelta(event.delta))
                if event.result is not None:
                    result = event.result
        except ContextOverflowError:
            if pieces:
                raise StreamFailed("".join(pieces), LLMError("context overflow")) from None
            raise
        except GenerationCancelled:
            cancel.cancel()
        except LLMError as exc:
            raise StreamFailed("".join(pieces), exc) from exc
        text = result.text if result is not None and result.text else "".join(pieces)
        ttft = None
        if result is not None:
            before = gen_start - call_start
            ttft = None if result.first_token_s is None else before + result.first_token_s
            self.on_event(ModelCallFinished(result, ttft))
        return text, result, ttft

    # -- tools ------------------------------------------------------------------------------
    def _run_calls(
        self,
        conv: Conversation,
        calls: list[ParsedCall],
        cancel: CancelToken,
        initiated_by: Literal["model", "user"],
        guard: ProgressGuard | None = None,
    ) -> list[Message]:
        """Run each call and append its result; after Stop the rest get "cancelled"; a call
        ``guard`` has seen in this turn is answered without running it again."""
        settings = self.settings()
        ctx = ToolContext(workspace=self.workspace(), limits=self._limits(), cancel=cancel)
        out: list[Message] = []
        for parsed in calls:
            if cancel.cancelled:
                result = ToolResult.error(CANCELLED_RESULT)
            elif guard is not None and parsed.error is None and guard.is_repeat(parsed.call):
                result = ToolResult(REPEAT_RESULT)
            else:
                self.on_event(ToolCallStarted(parsed.call, initiated_by))
                result = self.runner.run(parsed.call, ctx, initiated_by=initiated_by,
                                         approval=settings.tool_approval, parse_error=parsed.error)
            out.append(self._append(conv, result_message(parsed.call, result, initiated_by)))
        return out

    def _limits(self) -> ToolLimits:
        # Sized from the hard limit: an output is part of the latest turn, which may use
        # the whole window (once answered it is history: pruned or compacted to the target).
        return ToolLimits.for_window(self.controller.policy().limit)

    # -- plumbing ---------------------------------------------------------------------------
    def _bind(self, conv: Conversation) -> None:
        """ "Allow for this chat" holds for one conversation object."""
        if self._approvals_for is not conv:
            self.gate.reset()
            self._approvals_for = conv

    def _tell_no_tools(self, conv: Conversation) -> None:
        if self.offer_tools or self._told_no_tools is conv:
            return
        self._told_no_tools = conv
        self.on_event(Notice("info", NO_TOOLS_NOTE))

    def _append(self, conv: Conversation, message: Message) -> Message:
        conv.append(message)
        self.on_event(MessageAdded(message))
        return message

    def _finish_failed(self, text: str) -> None:
        self.on_event(Notice("error", text))
        self.on_event(TurnFinished(error=text))

    def on_context_event(self, event: ContextEvent) -> None:
        self._context_events += 1
        self.on_event(ContextChanged(event))


class StreamFailed(Exception):
    def __init__(self, text: str, error: LLMError) -> None:
        super().__init__(str(error))
        self.text = text
        self.error = error
