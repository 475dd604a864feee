"""Reading the user's message while they type it (the ``read_ahead`` setting): the prompt the
app would send for the draft is evaluated into the engine's cache on the model worker while
it is idle (``Agent.read_ahead``), so the send evaluates only what was typed since.

The words typed so far are read, not the word being typed: a read-ahead starts when a word
ends (the text up to its last space changed), so keystrokes within a word cost nothing, and
a user typing steadily has everything but the last word read by the time they press Enter
(a word takes a second or more to type; reading it, a few milliseconds to a few hundred).
At most one is in flight: words typed meanwhile are read by the next, right after. A send
or any other model job cancels the one in flight (what it evaluated stays cached); none
starts during a reply, a compaction or any other job (docs/BENCHMARKS.md, "read ahead").
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from assistant.agent.loop import Agent
from assistant.conversation import Conversation
from assistant.llm.base import CancelToken, WarmResult
from assistant.llm.worker import ModelWorker

log = logging.getLogger("assistant.service")


@dataclass(frozen=True)
class Target:
    """What a read-ahead reads for: the agent, and the chat the draft would be sent to."""

    agent: Agent
    conv: Conversation


def typed_words(draft: str) -> str:
    """The words of ``draft`` that are finished: up to its last whitespace, without it (a
    command, ``/...``, is not a message: nothing)."""
    if draft.lstrip().startswith("/"):
        return ""
    end = max(draft.rfind(" "), draft.rfind("\n"), draft.rfind("\t"))
    return draft[:end].strip() if end > 0 else ""


class DraftReader:
    """Reads drafts ahead on ``worker``. ``target()`` is None while the model is busy, not
    loaded, or the draft has nowhere to go (the setting off, a read-only chat, a branch
    being browsed); ``dispatch`` brings the end of a read back to the owner thread."""

    def __init__(
        self,
        worker: ModelWorker,
        dispatch: Callable[[Callable[[], None]], None],
        target: Callable[[], Target | None],
    ) -> None:
        self.worker = worker
        self.dispatch = dispatch
        self.target = target
        self._wanted = ""
        self._read = ""
        self._running: CancelToken | None = None
        #: The last read's result (tests and the log read it).
        self.last: WarmResult | None = None

    def draft_changed(self, draft: str) -> None:
        """The input's text now (on each keystroke)."""
        self._wanted = typed_words(draft)
        self.resume()

    def resume(self) -> None:
        """Read the words typed since the last read, if the model is free for it (called
        again when a job ends)."""
        wanted = self._wanted
        if self._running is not None or not wanted or wanted == self._read:
            return
        target = self.target()
        if target is None:
            return
        token = CancelToken()
        self._running = token
        self._read = wanted

        def job() -> WarmResult | None:
            if token.cancelled:
                return None
            return target.agent.read_ahead(target.conv, wanted, token)

        future = self.worker.submit(job)
        future.add_done_callback(lambda f: self.dispatch(lambda: self._done(token, f)))

    def cancel(self) -> None:
        """A model job starts: stop the read in flight (what it evaluated stays cached);
        the draft is read again when the model is free."""
        if self._running is not None:
            self._running.cancel()
            self._running = None
        self._read = ""  # the job changes the cache: the draft is read again after it

    def _done(self, token: CancelToken, future: Future[WarmResult | None]) -> None:
        if self._running is token:
            self._running = None
        exc = future.exception()
        if exc is not None:  # an aid: the send evaluates what this did not
            log.warning("Reading the draft ahead failed: %s", exc)
            return
        self.last = future.result()
        if self.last is not None:
            log.debug("Read ahead: %d tokens evaluated in %.2f s (%d cached)",
                      self.last.evaluated, self.last.seconds, self.last.reused)
        if not token.cancelled:
            self.resume()  # words typed meanwhile
