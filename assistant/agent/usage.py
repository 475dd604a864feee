"""The context bar's numbers (the prompt about to be sent, in segments) and reply figures."""

from __future__ import annotations

from assistant.agent.events import ContextUsage
from assistant.compaction.request import PreparedRequest
from assistant.conversation import ReplyFigures
from assistant.llm.base import GenerationResult


def context_usage(prepared: PreparedRequest, *, estimated: bool = False) -> ContextUsage:
    """The bar's figures from the prepared request (``estimated``: the counts are estimates)."""
    total = prepared.prompt_tokens
    segments = dict(prepared.segments) or {"conversation": total}
    return ContextUsage(
        prompt_tokens=total, window=prepared.window, reserve=prepared.reserve,
        segments=segments, estimated=estimated, target=prepared.target,
    )


def reply_figures(result: GenerationResult | None, ttft_s: float | None) -> ReplyFigures | None:
    """The figures a reply is saved with (None when the model call reported none)."""
    return None if result is None else figures_of(result, ttft_s)


def figures_of(result: GenerationResult, ttft_s: float | None) -> ReplyFigures:
    """``ttft_s``: the agent's time to first token, by default the backend's."""
    speed = result.completion_tokens / result.generate_s if result.generate_s > 0 else None
    return ReplyFigures(
        prompt_tokens=result.prompt_tokens, evaluated=result.prompt_evaluated,
        reused=result.prompt_reused, completion_tokens=result.completion_tokens,
        ttft_s=ttft_s if ttft_s is not None else result.first_token_s,
        tokens_per_s=speed if result.completion_tokens else None,
        cut_off=result.finish_reason == "length",
    )
