"""Measuring, from the window, how much of its window the loaded model uses well (what
``python -m assistant probe`` does in a terminal): a job on the model's worker that Esc
stops, its result kept where the engine reads it when the model next loads."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assistant.llm.base import CancelToken
from assistant.llm.context_probe import (
    EffectiveContext,
    EffectiveContextStore,
    probe_effective_context,
    store_key,
)

if TYPE_CHECKING:
    from assistant.service.service import ChatService

#: The status line while it runs.
MEASURING = "A few minutes, Esc stops it: measuring how much text the model reads well"


class _Stopped(Exception):
    """Esc was pressed between two questions of the measurement."""


def measure_effective_context(service: ChatService) -> bool:
    """Start measuring the loaded model; False (and a notice saying why) when it cannot."""
    engine = service.model.engine
    if engine is None:
        service.notice("warning", "Load the model first: only a loaded model can be measured.")
        return False
    if service.jobs.busy:
        service.notice("info", "Wait until the assistant has finished, then measure.")
        return False
    backend = engine.backend

    def job(cancel: CancelToken) -> EffectiveContext | None:
        def progress(_line: str) -> None:
            if cancel.cancelled:
                raise _Stopped

        try:
            return probe_effective_context(backend, progress=progress)
        except _Stopped:
            return None

    def then(result: EffectiveContext | None) -> bool:
        """Keep the result and say so (False: the job ends as usual)."""
        if result is None:
            service.notice("info", "Measuring stopped; nothing was kept.")
            return False
        EffectiveContextStore().put(store_key(backend.info), result)
        service.notice(
            "info",
            f"Measured: this model reads about {result.effective:,} tokens of text well "
            f"(of the {result.window:,} it can take). The assistant uses this from the next "
            "time the model loads.",
        )
        return False

    service.jobs.run(job, then, MEASURING)
    return True
