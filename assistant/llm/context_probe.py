"""How much of its window a model uses well, measured (a small RULER-style probe).

Past some prompt size a small model stops finding a fact it was just given (RULER, Hsieh et
al. 2024). :func:`probe_effective_context` plants one fact at several depths of varied filler
at several sizes and asks for it at the end, greedily; the effective context is the largest
size answered at least :data:`KEEP_SHARE` as well as the smallest. It takes minutes, so it
runs on request (``python -m assistant probe [MODEL]``); results are kept in the cache folder.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from assistant import paths
from assistant.atomicfile import JsonStore
from assistant.llm.base import GenerationOptions, LLMBackend, ModelInfo
from assistant.llm.registry import ModelEntry as RegistryEntry

DEFAULT_SIZES = (1024, 2048, 4096, 8192)
DEFAULT_DEPTHS = (0.1, 0.5, 0.9)
#: Trials (each with its own fact) per depth and size.
DEFAULT_TRIALS = 2
#: A size is "used well" when its accuracy is at least this share of the smallest size's.
KEEP_SHARE = 0.8
#: Longest reply: small models repeat the sentence before the number ("The access code
#: for the blue door is 4817."), about 15 tokens.
MAX_REPLY = 24
#: Tokens left free at the end of the window (the reply and the template's last tokens).
WINDOW_MARGIN = MAX_REPLY + 8

_SUBJECTS = (
    "The river", "A quiet market", "The old library", "Our neighbour", "The morning train",
    "A small bakery", "The museum guide", "The garden path", "A passing cloud",
    "The village choir", "The harbour master", "A tired cyclist", "The weather report",
    "The school bus", "A young painter", "The lighthouse keeper", "The hotel lobby",
    "A group of hikers", "The city council", "The farmer's dog",
)
_VERBS = (
    "moved slowly past", "was talked about near", "waited patiently beside",
    "was photographed in front of", "opened early next to", "looked calm behind",
    "was mentioned again at", "stayed a while near", "turned quietly toward",
    "was painted green beside",
)
_OBJECTS = (
    "the stone bridge", "the tall pine trees", "the empty square", "the northern hills",
    "the busy station", "the wooden fence", "the public park", "the corner shop",
    "the long beach", "the town hall", "the fishing boats", "the apple orchard",
    "the concert hall", "the old mill", "the bus shelter",
)
_TAILS = (
    "on a grey afternoon", "before lunch", "after the rain stopped", "during the festival",
    "as the bells rang", "while people chatted", "in the late evening", "at dawn",
    "without any hurry", "for most of the week",
)
_DOORS = ("blue", "red", "green", "yellow", "white", "black", "orange", "purple")


def filler_sentence(rng: random.Random) -> str:
    """A varied, neutral sentence (no numbers, no doors)."""
    return (
        f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)} "
        f"{rng.choice(_TAILS)}."
    )


@dataclass(frozen=True)
class Trial:
    size: int
    depth: float
    door: str
    code: str
    prompt_tokens: int
    reply: str

    @property
    def correct(self) -> bool:
        """The reply gives the code as a number of its own ("15242" is not 5242)."""
        return re.search(rf"(?<!\d){re.escape(self.code)}(?!\d)", self.reply) is not None


@dataclass
class EffectiveContext:
    """A probe's result for one model and window."""

    model: str
    window: int
    effective: int
    #: Size -> [correct, asked].
    accuracy: dict[int, list[int]]
    measured: str
    seconds: float = 0.0
    trials: list[dict[str, Any]] = field(default_factory=list)

    def describe(self) -> str:
        """``about 4,096 tokens (accuracy 6/6 at 1,024, 2/6 at 8,192)``."""
        parts = ", ".join(f"{c}/{n} at {size:,}" for size, (c, n) in sorted(self.accuracy.items()))
        if self.effective <= 0:
            return f"no size answered (accuracy {parts})"
        return f"about {self.effective:,} tokens (accuracy {parts})"

    @property
    def date(self) -> str:
        return self.measured[:10]


#: Results to and from their JSON form (checked: a damaged entry reads as none).
_JSON = TypeAdapter(EffectiveContext)


def choose_effective(accuracy: dict[int, list[int]]) -> int:
    """The largest size answered (at least once) :data:`KEEP_SHARE` as well as the smallest;
    0 when the smallest got no answer right."""
    if not accuracy:
        return 0
    sizes = sorted(accuracy)
    base_correct, base_asked = accuracy[sizes[0]]
    if base_correct == 0 or base_asked == 0:
        return 0
    base = base_correct / base_asked
    best = 0
    for size in sizes:
        correct, asked = accuracy[size]
        if correct >= 1 and asked and correct / asked >= KEEP_SHARE * base - 1e-9:
            best = size
    return best


def _messages(filler: list[str], fact: str, depth: float, door: str) -> list[dict[str, Any]]:
    at = round(depth * len(filler))
    body = " ".join([*filler[:at], fact, *filler[at:]])
    return [
        {
            "role": "user",
            "content": "Read these notes, then answer the question after them.\n\n"
            f"{body}\n\nQuestion: what is the access code for the {door} door? "
            "Answer with the number only.",
        }
    ]


def _fill_to(backend: LLMBackend, target: int, rng: random.Random) -> list[str]:
    """Filler sentences that make the probe prompt about ``target`` tokens (not more)."""
    probe_fact = "The access code for the blue door is 4817."
    base = backend.count_prompt(_messages([], probe_fact, 0.5, "blue"))
    filler: list[str] = []
    used = base
    while True:
        sentence = filler_sentence(rng)
        cost = backend.count(" " + sentence)
        if used + cost > target:
            break
        filler.append(sentence)
        used += cost
    # Piecewise counts can differ from the whole prompt's by a few tokens: trim to fit.
    while filler and backend.count_prompt(_messages(filler, probe_fact, 0.5, "blue")) > target:
        filler.pop()
    return filler


def probe_effective_context(
    backend: LLMBackend,
    sizes: Sequence[int] = DEFAULT_SIZES,
    *,
    trials: int = DEFAULT_TRIALS,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> EffectiveContext:
    """Measure the effective context of ``backend``'s model, for the sizes that fit its
    window. The trials of one size share their filler, deepest fact first, so a backend
    that reuses its KV cache evaluates far less than every prompt whole."""
    info = backend.info
    window = info.context_window
    usable = window - WINDOW_MARGIN
    wanted = sorted({s for s in sizes if s > 0})
    kept = [s for s in wanted if s <= window]
    if not kept:
        raise ValueError(f"no probe size fits the {window:,}-token window (sizes {wanted})")
    rng = random.Random(seed)
    options = GenerationOptions(max_tokens=MAX_REPLY, temperature=0.0, top_p=1.0)
    started = time.perf_counter()
    accuracy: dict[int, list[int]] = {}
    done: list[Trial] = []
    for size in kept:
        target = min(size, usable)
        filler = _fill_to(backend, target, random.Random(f"{seed}|{size}"))
        correct = asked = 0
        for depth in sorted(DEFAULT_DEPTHS, reverse=True):
            for _ in range(trials):
                door = rng.choice(_DOORS)
                code = str(rng.randrange(1000, 10_000))
                fact = f"The access code for the {door} door is {code}."
                messages = _messages(filler, fact, depth, door)
                reply, prompt_tokens = _ask(backend, messages, options)
                trial = Trial(size, depth, door, code, prompt_tokens, reply)
                done.append(trial)
                asked += 1
                correct += trial.correct
                if progress:
                    mark = "right" if trial.correct else "wrong"
                    progress(
                        f"size {size:,} depth {depth:.1f}: {mark} "
                        f"(code {code}, reply {reply.strip()[:40]!r})"
                    )
        accuracy[size] = [correct, asked]
    return EffectiveContext(
        model=info.name,
        window=window,
        effective=choose_effective(accuracy),
        accuracy=accuracy,
        measured=datetime.now(UTC).isoformat(timespec="seconds"),
        seconds=round(time.perf_counter() - started, 1),
        trials=[{**asdict(t), "correct": t.correct} for t in done],
    )


def _ask(
    backend: LLMBackend, messages: list[dict[str, Any]], options: GenerationOptions
) -> tuple[str, int]:
    """The final result's text (streamed pieces can hold back a tail: "789" for 7890) and
    the prompt's size."""
    text: list[str] = []
    prompt_tokens = 0
    for event in backend.generate(messages, options):
        text.append(event.delta)
        if event.result is not None:
            prompt_tokens = event.result.prompt_tokens
            if event.result.text.strip():
                text = [event.result.text]
    return "".join(text), prompt_tokens


def model_id(info: ModelInfo) -> str:
    """The model's identity: its registry sha256 when registered, else file name and size."""
    return file_model_id(Path(info.path).name, info.size_bytes)


def _registered(name: str, size: int) -> RegistryEntry | None:
    from assistant.llm.registry import load_registry

    try:
        entry = load_registry().by_file(name)
    except (OSError, ValueError, KeyError):
        return None
    return entry if entry is not None and entry.size == size else None


def file_model_id(name: str, size: int) -> str:
    entry = _registered(name, size)
    return f"sha256:{entry.sha256}" if entry is not None else f"file:{name}|{size}"


def registry_context(name: str, size: int) -> int | None:
    """The registry's effective context for this file (answer benchmark), or None."""
    entry = _registered(name, size)
    return entry.effective_context if entry is not None else None


def store_key(info: ModelInfo) -> str:
    return f"{model_id(info)}|window={info.context_window}"


class EffectiveContextStore(JsonStore):
    """Probe results in one JSON file (``effective_context.json`` in the cache folder)."""

    def __init__(self, path: Path | None = None) -> None:
        super().__init__(path or paths.cache_dir() / "effective_context.json")

    def get(self, key: str) -> EffectiveContext | None:
        return self.get_as(key, _JSON)

    def of_model(self, model: str) -> list[EffectiveContext]:
        """Every result for ``model`` (a :func:`model_id`), whatever its window."""
        found = (self.get(key) for key in self.read() if key.startswith(model + "|"))
        return [got for got in found if got is not None]

    def put(self, key: str, result: EffectiveContext) -> None:
        self.put_json(key, _JSON.dump_python(result, mode="json"))


def measured_context(info: ModelInfo, store: EffectiveContextStore | None = None) -> int | None:
    """The smaller of the probe's result (this window's, else another window's that found a
    limit) and the registry's (the answer benchmark, harder: SmolLM2-135M finds a code in
    8,000 tokens of filler yet answers nothing about a chat of that size); None unless one
    is known and below the window."""
    store = store or EffectiveContextStore()
    found = store.get(store_key(info)) or next(
        (r for r in store.of_model(model_id(info)) if 0 < r.effective < max(r.accuracy)), None
    )
    sizes = [found.effective] if found is not None and found.effective > 0 else []
    listed = registry_context(Path(info.path).name, info.size_bytes)
    if listed:
        sizes.append(listed)
    if not sizes or min(sizes) >= info.context_window:
        return None
    return min(sizes)


def measured_line(
    file: Path, size: int, key: str, store: EffectiveContextStore | None = None
) -> str:
    """What Settings and the models page say about a model file's effective context."""
    results = (store or EffectiveContextStore()).of_model(file_model_id(file.name, size))
    found = max(results, key=lambda r: r.measured, default=None)
    listed = registry_context(file.name, size)
    kept = (
        f"the history is kept within {listed:,} tokens, where it answered best (answer "
        "benchmark; a long latest message may use the whole window)"
        if listed else ""
    )
    if found is None:
        if kept:
            return f"{kept[0].upper()}{kept[1:]}; not measured on this computer yet"
        return "How much text this model reads well: not measured yet"
    if found.effective <= 0:
        return (
            f"Effective context: no planted fact was found even at {min(found.accuracy):,} "
            f"tokens (measured {found.date}); " + (kept or "the window is used as is")
        )
    line = f"Uses about {found.effective:,} tokens well (measured {found.date})"
    return f"{line}; {kept}" if listed and listed < found.effective else line
