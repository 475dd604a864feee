"""Prompt-lookup speculative decoding measured on a quoting workload
(``python -m bench --speculative``).

The workload is the app's common case for it: the model has read a file (a ``read_file`` call
and its result in the history) and the user asks for a change and the whole function back,
so most of the reply is text the context already holds. Each model generates the reply at
temperature 0 without and with prompt-lookup drafts (same prompt, cache warm, so both time
decoding only), in alternating order over ``rounds``; the section reports decode tokens/s,
the speed-up, the drafts' acceptance and whether the two replies are the same text.
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

from assistant.llm.base import GenerationOptions, GenerationResult

#: The file the model has read (written for this benchmark).
INVENTORY_PY = '''"""Stock levels for the shop's warehouse."""

from dataclasses import dataclass, field


@dataclass
class Item:
    sku: str
    name: str
    price_cents: int
    qty: int = 0
    tags: list[str] = field(default_factory=list)


class Inventory:
    def __init__(self) -> None:
        self.items: dict[str, Item] = {}

    def add(self, item: Item) -> None:
        if item.sku in self.items:
            raise ValueError(f"duplicate sku {item.sku}")
        self.items[item.sku] = item

    def restock(self, sku: str, qty: int) -> int:
        """Add qty units of sku and return the new level."""
        if qty <= 0:
            raise ValueError("qty must be positive")
        item = self.items[sku]
        item.qty += qty
        return item.qty

    def sell(self, sku: str, qty: int) -> int:
        """Remove qty units of sku (never below zero) and return the new level."""
        item = self.items[sku]
        if qty > item.qty:
            raise ValueError(f"only {item.qty} of {item.name} left")
        item.qty -= qty
        return item.qty

    def value_cents(self) -> int:
        return sum(i.price_cents * i.qty for i in self.items.values())

    def low_stock(self, threshold: int = 5) -> list[Item]:
        return sorted(
            (i for i in self.items.values() if i.qty < threshold),
            key=lambda i: (i.qty, i.sku),
        )
'''

#: The requests after the read: an edit shown whole, and a plain quote.
ASKS = (
    "Change `sell` in inventory.py so it raises ValueError when quantity is not positive, "
    "and show the whole function. Reply with the code only.",
    "Show the `restock` function of inventory.py exactly as it is.",
)


def quoting_messages(ask: str = ASKS[0]) -> list[dict[str, Any]]:
    """A read of inventory.py (the call, its result and the model's answer, as the app's
    history holds them), then the request to change it and show the function."""
    call = {"id": "call_1", "type": "function", "function": {
        "name": "read_file", "arguments": json.dumps({"path": "inventory.py"})}}
    return [
        {"role": "system", "content": "You are a coding assistant. Answer with code."},
        {"role": "user", "content": "Read inventory.py"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "name": "read_file",
         "content": INVENTORY_PY},
        {"role": "assistant", "content": "I have read inventory.py: an `Item` dataclass and "
         "an `Inventory` class with add, restock, sell, value_cents and low_stock."},
        {"role": "user", "content": ask},
    ]


@dataclass
class SpeculationResult:
    """One model and request: decode rates without and with prompt lookup (medians)."""

    model: str
    ask: str
    tokens: int
    plain_tps: float
    lookup_tps: float
    identical: bool
    same_prefix: int
    acceptance: float
    rounds: int
    plain_runs: list[float] = field(default_factory=list)
    lookup_runs: list[float] = field(default_factory=list)

    @property
    def speedup(self) -> float:
        return self.lookup_tps / self.plain_tps if self.plain_tps else 0.0


def _decode_rate(result: GenerationResult) -> float:
    """Tokens/s after the first token (the first one's time is the prompt's tail)."""
    first = result.first_token_s or 0.0
    decode = result.prefill_s + result.generate_s - first
    return (result.completion_tokens - 1) / decode if decode > 0 else 0.0


def _reply(backend: Any, ask: str, lookup: int, max_tokens: int
           ) -> tuple[GenerationResult, float]:
    backend.prompt_lookup = lookup
    options = GenerationOptions(max_tokens=max_tokens, temperature=0.0)
    result = None
    for event in backend.generate(quoting_messages(ask), options):
        result = event.result or result
    assert result is not None
    stats = backend.draft_stats if lookup else None
    return result, (stats.acceptance if stats is not None else 0.0)


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def measure(backend: Any, model: str, ask: str, *, draft: int = 10, rounds: int = 3,
            max_tokens: int = 256) -> SpeculationResult:
    """Decode speed of ``backend`` (a loaded :class:`LlamaBackend`) on one request."""
    _reply(backend, ask, 0, 2)  # evaluates the prompt once; the timed calls reuse it
    plain: list[float] = []
    lookup: list[float] = []
    accepted: list[float] = []
    texts: dict[int, set[str]] = {0: set(), draft: set()}
    tokens = 0
    for r in range(rounds):
        for n in ((0, draft) if r % 2 == 0 else (draft, 0)):
            result, acceptance = _reply(backend, ask, n, max_tokens)
            rate = _decode_rate(result)
            (lookup if n else plain).append(rate)
            if n:
                accepted.append(acceptance)
            texts[n].add(result.text)
            tokens = result.completion_tokens
            print(f"  {model}: {'lookup' if n else 'plain '} {rate:6.1f} tok/s "
                  f"({result.completion_tokens} tokens)", file=sys.stderr)
    backend.prompt_lookup = 0
    plain_text, lookup_text = min(texts[0]), min(texts[draft])
    return SpeculationResult(
        model=model, ask=ask, tokens=tokens, plain_tps=statistics.median(plain),
        lookup_tps=statistics.median(lookup),
        identical=texts[0] == texts[draft] and len(texts[0]) == 1,
        same_prefix=_common_prefix(plain_text, lookup_text),
        acceptance=statistics.mean(accepted) if accepted else 0.0, rounds=rounds,
        plain_runs=plain, lookup_runs=lookup,
    )


def run(models: list[str], *, threads: int = 0, draft: int = 10, rounds: int = 3,
        max_tokens: int = 256) -> list[SpeculationResult]:
    """Load each model in turn (2,048-token window) and measure it on every request."""
    from assistant.llm.llama_backend import LlamaBackend

    out = []
    for name in models:
        backend = LlamaBackend.load(name, n_ctx=2048, threads=threads, calibrate=True)
        try:
            for ask in ASKS:
                out.append(measure(backend, name, ask, draft=draft, rounds=rounds,
                                   max_tokens=max_tokens))
        finally:
            backend.close()
    return out


def render(results: list[SpeculationResult], command: str) -> str:
    """A markdown table of the results."""
    lines = [
        "### Prompt-lookup decoding on a quoting workload",
        "",
        f"`{command}`: a read of a 45-line Python file (call, result, the model's answer), "
        "then a request; temperature 0, decode tokens/s after the first token, median of "
        f"{results[0].rounds if results else 0} alternating rounds. \"same text\": the "
        "replies with and without drafts are the same; else how many characters agree.",
        "",
        "| model | request | tokens | plain tok/s | prompt lookup tok/s | speed-up "
        "| drafts accepted | same text |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        same = "yes" if r.identical else f"no (first {r.same_prefix} chars)"
        lines.append(
            f"| {r.model} | {r.ask[:40]}... | {r.tokens} | {r.plain_tps:.1f} | "
            f"{r.lookup_tps:.1f} | {r.speedup:.2f}x | {r.acceptance:.0%} | {same} |"
        )
    return "\n".join(lines) + "\n"


def to_json(results: list[SpeculationResult]) -> list[dict[str, Any]]:
    return [{**asdict(r), "speedup": r.speedup} for r in results]
