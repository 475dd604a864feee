"""Instant resume (the chat's KV state saved after each reply and restored on opening, see
docs/PERFORMANCE.md, "Instant resume"), with the context controller's state of the chat
(:mod:`assistant.compaction.carry`: the prompt after a restart is the one the saved state
holds), and the prompt-evaluation settings."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from assistant.compaction import carry
from assistant.compaction.controller import ContextController
from assistant.config import Settings
from assistant.llm.base import EngineTuning, KVCacheAware, LLMBackend, LLMError
from assistant.llm.calibration import CalibrationStore
from assistant.llm.kv_state import StateCache, StateWriter
from assistant.service.events import ModelStateRestored as Restored
from assistant.sessions.errors import SessionError
from assistant.sessions.handle import ChatHandle

log = logging.getLogger(__name__)

MB = 1024 * 1024


def engine_tuning(settings: Settings) -> EngineTuning:
    perf = settings.performance
    return EngineTuning(
        threads=settings.sampling.threads,
        n_batch=perf.n_batch,
        n_ubatch=perf.n_ubatch,
        chunk_reuse=perf.chunk_reuse,
        min_chunk=perf.chunk_reuse_min,
        prompt_lookup={"auto": None, "on": True, "off": False}[perf.prompt_lookup],
        prompt_form=None if perf.prompt_form == "auto" else perf.prompt_form,
        draft_model=draft_choice(perf.draft_model),
    )


def draft_choice(setting: str) -> str | None:
    """The draft model a setting asks for: None (the registry's pairing), "" (none), a name."""
    value = setting.strip()
    return {"auto": None, "": None, "off": ""}.get(value.lower(), value)


def forget_calibration() -> None:
    """Forget the measured prompt settings: the next model load measures them again."""
    CalibrationStore().clear()


class ChatResume:
    def __init__(self, settings: Settings, root: Path | None = None) -> None:
        self.cache = StateCache(root, settings.performance.state_cache_mb * MB)
        self.writer = StateWriter(self.cache)
        #: Per open chat, the controller's state last taken (:meth:`carry_job`), written
        #: with the chat when it closes (:meth:`write_carried`).
        self.carried: dict[str, Any] = {}
        self.configure(settings)

    def configure(self, settings: Settings) -> None:
        perf = settings.performance
        self.enabled = perf.resume_state and perf.state_cache_mb > 0
        self.cache.set_limit(perf.state_cache_mb * MB)

    def forget(self, chat_id: str) -> None:
        """Delete the chat's saved states (the chat was deleted)."""
        try:
            self.cache.forget(chat_id)
        except OSError as exc:
            log.warning("could not delete the saved states of chat %s: %s", chat_id, exc)

    def save_job(self, backend: LLMBackend, chat_id: str) -> Callable[[], None] | None:
        """A worker job copying the chat's KV state out for the writer (None: nothing to save)."""
        if not self.enabled or not isinstance(backend, KVCacheAware):
            return None
        kv: KVCacheAware = backend

        def job() -> None:
            started = time.perf_counter()
            try:
                state = kv.save_state()
            except LLMError as exc:
                log.warning("could not copy the chat's model state: %s", exc)
                return
            if state.tokens:
                self.writer.submit(chat_id, state)
                log.info("chat %s: %d tokens of model state copied in %.2f s", chat_id,
                         len(state.tokens), time.perf_counter() - started)

        return job

    def restore_job(
        self, backend: LLMBackend, chat_id: str, still_wanted: Callable[[], bool]
    ) -> Callable[[], Restored] | None:
        """A worker job loading the chat's saved state (skipped unless ``still_wanted()``)."""
        if not self.enabled or not isinstance(backend, KVCacheAware):
            return None
        kv: KVCacheAware = backend

        def job() -> Restored:
            started = time.perf_counter()
            if not still_wanted():
                return Restored(chat_id, 0, 0.0, "another chat was opened")
            self.writer.flush()  # a state of this chat may still be on its way to disk
            state = self.cache.load(chat_id, kv.state_fingerprint())
            if state is None:
                return Restored(chat_id, 0, time.perf_counter() - started, self.cache.last_miss)
            if kv.cached_prefix(state.tokens) >= len(state.tokens):
                return Restored(chat_id, 0, time.perf_counter() - started, "already loaded")
            try:
                kv.load_state(state)
            except LLMError as exc:
                kv.reset_kv_cache()
                return Restored(chat_id, 0, time.perf_counter() - started, str(exc))
            return Restored(chat_id, len(state.tokens), time.perf_counter() - started)

        return job

    # -- the controller's state of the chat (carried across a restart) ---------------------
    def carry_job(self, controller: ContextController, handle: ChatHandle) -> Callable[[], None]:
        """A worker job taking the controller's state of the chat (kept until it closes)."""
        conv, chat_id = handle.conversation, handle.chat_id

        def job() -> None:
            try:
                self.carried[chat_id] = carry.to_json(controller.carry_out(conv))
            except Exception:  # a hint for the next start: never in the way of this one
                log.warning("chat %s: the context state was not taken", chat_id, exc_info=True)

        return job

    def carry_in_job(
        self, controller: ContextController, handle: ChatHandle
    ) -> Callable[[], None]:
        """A worker job giving the controller the chat's state: the one taken in this run,
        else the one saved with the chat. A damaged one is ignored (logged); the chat's
        messages are read apart from it and never depend on it."""
        conv, chat_id = handle.conversation, handle.chat_id
        value = self.carried.get(chat_id, handle.settings.get(carry.SETTING))

        def job() -> None:
            if value is None:
                return
            try:
                carried = carry.from_json(value)
            except ValueError as exc:
                log.warning("chat %s: its saved context state was ignored (%s); the chat "
                            "is read as it is, its first prompt evaluated again", chat_id, exc)
                return
            if carried is not None:
                controller.carry_in(conv, carried)

        return job

    def write_carried(self, handle: ChatHandle) -> None:
        """Save the chat's state taken last with the chat (before it closes), if changed."""
        value = self.carried.pop(handle.chat_id, None)
        if value is None or handle.closed or handle.read_only is not None:
            return
        if handle.settings.get(carry.SETTING) == value:
            return
        try:
            handle.record_setting(carry.SETTING, value)
        except (OSError, SessionError) as exc:
            log.warning("chat %s: the context state was not saved: %s", handle.chat_id, exc)
