# Over 500 lines: the five workloads are data (their messages and files), kept together.
"""Deterministic benchmark workloads with planted facts.

A :class:`Workload` is a list of steps the user takes: chat messages (:class:`ChatStep`) and
user-initiated tool calls (:class:`ToolStep`, like ``/read path``: an assistant message with
the call, then the tool result, and no model call). The model writes every assistant reply
while the benchmark runs, so the file holds only what the *user* contributes.

Everything is generated from ``(name, seed, quick)`` with :class:`random.Random` seeded by a
string, so the same arguments give byte-identical JSONL on every machine. Sizes are measured
with the offline cl100k tokenizer (model-independent); the model's own tokenizer usually
counts somewhat more.

* **W1 tool-heavy** (local): 40 turns, each reading 1-3 generated files of 200-2,000 tokens
  and asking about them; one early ``write_file``.
* **W2 plain chat** (local): 60 turns, no tools.
* **W3 oversized output** (local): a tool output larger than the whole window, then 5 turns.
* **W4 standard** (standard mode, 32k window): the W1 pattern with files 3x larger
  (600-6,000 tokens), 10 turns.
* **W5 read, then ask** (local): after a first chat turn, every turn ``/read``s one data
  file as large as one read may be (larger than ``protect``: the case that used to be
  cleared before the model saw it) and asks for one value in it; the reply is checked
  for the value (answered when asked).

``quick=True`` keeps each pattern small (2-8 turns, small files) and sets
:attr:`Workload.window_cap` (1,280 local, 2,048 standard): the run then gives the model that
window, so pruning, compaction and overflow all still happen, in a few minutes on 2 cores
instead of hours. See :data:`SIZES`.

Each workload plants facts early (user constraints, numbers the user states, file paths read
and modified) and records them as :class:`Fact` with a probe string (is it still in the
context?) and a question with accepted answers (can the model still say it?).

The JSONL (:meth:`Workload.to_jsonl`) has one OpenAI-format message per line, like
``Message.to_openai(as_model_sees=False)``; the facts and workspace files go to a JSON
sidecar (:meth:`Workload.sidecar`). :func:`load_workload` reads both back.

Why it is long (about 680 lines): the four workloads are generated here side by side from
one small seeded generator (:class:`_Gen`) and one builder, with their texts and planted
facts; splitting them apart would scatter what must stay comparable between workloads.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from assistant.config import Mode
from assistant.llm.fallback_tokenizer import Cl100kTokenizer
from assistant.tools.base import ToolContext, ToolLimits
from assistant.tools.read_file import ReadFileArgs, ReadFileTool
from assistant.tools.workspace import Workspace
from assistant.tools.write_file import WriteFileArgs, WriteFileTool

FactKind = Literal["constraint", "number", "path_read", "path_modified"]
WORKLOAD_NAMES = ("W1", "W2", "W3", "W4", "W5")
#: Windows the workloads are sized for (the embedded models' effective windows).
LOCAL_WINDOW = 8_192
STANDARD_WINDOW = 32_768
#: ``--quick`` runs the same patterns, smaller, in these windows (the mode's policy is then
#: scaled exactly as for a model trained on that many tokens). Sized so that the whole quick
#: run (20 runs) takes a few minutes on 2 cores, where prefill is ~100-150 tokens/s.
QUICK_LOCAL_WINDOW = 1_280
QUICK_STANDARD_WINDOW = 2_048
#: W1's quick turns read up to three files and write one, and W5's read one file that fills a
#: read: at 1,280 tokens the system prompt, tool schemas, a summary and the reply reserve
#: leave too little beside them, so their quick window is a little larger.
QUICK_READ_WINDOW = 1_792


@dataclass(frozen=True)
class Size:
    """How big a workload is: chat turns, file (or message) sizes in cl100k tokens."""

    turns: int
    low: int
    high: int
    window: int


#: Full and quick sizes. W3's ``turns`` are the turns after the oversized output, its
#: ``low``/``high`` the first file's size; the log is 1.5 windows.
SIZES: dict[tuple[str, bool], Size] = {
    ("W1", False): Size(40, 200, 2_000, LOCAL_WINDOW),
    ("W1", True): Size(3, 50, 200, QUICK_READ_WINDOW),
    ("W2", False): Size(60, 60, 200, LOCAL_WINDOW),
    ("W2", True): Size(8, 50, 100, QUICK_LOCAL_WINDOW),
    ("W3", False): Size(5, 600, 1_200, LOCAL_WINDOW),
    ("W3", True): Size(2, 80, 160, QUICK_LOCAL_WINDOW),
    ("W4", False): Size(10, 600, 6_000, STANDARD_WINDOW),
    ("W4", True): Size(3, 100, 500, QUICK_STANDARD_WINDOW),
    # W5's files fill one read (the window's output cap); low/high are unused.
    ("W5", False): Size(12, 0, 0, LOCAL_WINDOW),
    ("W5", True): Size(3, 0, 0, QUICK_READ_WINDOW),
}


@dataclass(frozen=True)
class Fact:
    """Something planted early that a good context manager keeps."""

    kind: FactKind
    #: The sentence or path as planted.
    text: str
    #: Case-insensitive substring whose presence in the prompt means the fact is visible.
    probe: str
    #: Asked at the end; the reply counts as correct if it contains any of ``answers``.
    question: str
    answers: tuple[str, ...]
    #: 1-based chat turn in which it was planted.
    turn: int


@dataclass(frozen=True)
class ChatStep:
    """The user sends ``text``; the model replies (through the agent loop).

    ``answers``: for a question whose answer is known (W5), the accepted answers.
    """

    text: str
    answers: tuple[str, ...] = ()


@dataclass(frozen=True)
class ToolStep:
    """A user-initiated tool call and its recorded result.

    ``live`` steps are re-run for real in the workspace (the result may then differ from
    ``result`` if the window's output cap differs); other steps are appended verbatim.
    """

    call_id: str
    tool: str
    arguments: dict[str, Any]
    result: str
    is_error: bool = False
    live: bool = True


Step = ChatStep | ToolStep


@dataclass
class Workload:
    name: str
    title: str
    mode: Mode
    seed: int
    quick: bool
    #: Window the sizes were chosen for (tool output caps use it too).
    nominal_window: int
    steps: list[Step] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    #: Workspace files (relative path -> content) that live tool steps read.
    files: dict[str, str] = field(default_factory=dict)

    @property
    def window_cap(self) -> int | None:
        """The window a quick run emulates (None: the model's own, as the app uses it)."""
        return self.nominal_window if self.quick else None

    @property
    def chat_turns(self) -> int:
        return sum(1 for s in self.steps if isinstance(s, ChatStep))

    def messages(self) -> list[dict[str, Any]]:
        """The user's side of the chat as OpenAI-format messages."""
        out: list[dict[str, Any]] = []
        for step in self.steps:
            if isinstance(step, ChatStep):
                out.append({"role": "user", "content": step.text})
                continue
            args = json.dumps(step.arguments, ensure_ascii=False, sort_keys=True)
            out.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": step.call_id,
                            "type": "function",
                            "function": {"name": step.tool, "arguments": args},
                        }
                    ],
                }
            )
            out.append(
                {
                    "role": "tool",
                    "content": step.result,
                    "tool_call_id": step.call_id,
                    "name": step.tool,
                }
            )
        return out

    def to_jsonl(self) -> str:
        return "".join(
            json.dumps(m, ensure_ascii=False, sort_keys=True) + "\n" for m in self.messages()
        )

    def sidecar(self) -> dict[str, Any]:
        """Everything the JSONL has no place for."""
        return {
            "name": self.name,
            "title": self.title,
            "mode": self.mode,
            "seed": self.seed,
            "quick": self.quick,
            "nominal_window": self.nominal_window,
            "facts": [
                {
                    "kind": f.kind, "text": f.text, "probe": f.probe, "question": f.question,
                    "answers": list(f.answers), "turn": f.turn,
                }
                for f in self.facts
            ],
            "live_calls": [s.call_id for s in self.steps if isinstance(s, ToolStep) and s.live],
            "answers": {
                str(i): list(s.answers)
                for i, s in enumerate(self.steps)
                if isinstance(s, ChatStep) and s.answers
            },
            "files": self.files,
        }

    def save(self, directory: Path) -> Path:
        """Write ``NAME.jsonl`` and ``NAME.facts.json``; returns the JSONL path."""
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{self.name}.jsonl"
        path.write_text(self.to_jsonl(), encoding="utf-8")
        (directory / f"{self.name}.facts.json").write_text(
            json.dumps(self.sidecar(), ensure_ascii=False, indent=1, sort_keys=True) + "\n",
            encoding="utf-8",
        )
        return path

    def write_workspace(self, root: Path) -> None:
        for rel, content in self.files.items():
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")


def load_workload(path: Path) -> Workload:
    """A workload from a JSONL file (and its ``.facts.json`` sidecar when present).

    User messages become chat steps; an assistant message with tool calls and the tool
    results that follow become tool steps (live if the sidecar says so). Assistant replies
    without tool calls are skipped: the model writes those during the run.
    """
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    messages = [json.loads(ln) for ln in lines]
    side_path = path.with_name(path.name.removesuffix(".jsonl") + ".facts.json")
    side: dict[str, Any] = (
        json.loads(side_path.read_text(encoding="utf-8")) if side_path.exists() else {}
    )
    live = set(side.get("live_calls", []))
    results = {
        m.get("tool_call_id"): m for m in messages if m.get("role") == "tool"
    }
    answers = {int(k): tuple(v) for k, v in side.get("answers", {}).items()}
    steps: list[Step] = []
    for m in messages:
        role = m.get("role")
        if role == "user":
            steps.append(ChatStep(str(m.get("content") or ""), answers.get(len(steps), ())))
        elif role == "assistant" and m.get("tool_calls"):
            for call in m["tool_calls"]:
                fn = call.get("function", {})
                raw = fn.get("arguments") or "{}"
                args = json.loads(raw) if isinstance(raw, str) else dict(raw)
                res = results.get(call.get("id"), {})
                steps.append(
                    ToolStep(
                        call_id=str(call.get("id")),
                        tool=str(fn.get("name")),
                        arguments=args,
                        result=str(res.get("content") or ""),
                        live=call.get("id") in live,
                    )
                )
    facts = [
        Fact(
            kind=f["kind"], text=f["text"], probe=f["probe"], question=f["question"],
            answers=tuple(f["answers"]), turn=int(f["turn"]),
        )
        for f in side.get("facts", [])
    ]
    return Workload(
        name=str(side.get("name", path.stem)),
        title=str(side.get("title", path.stem)),
        mode=Mode(side.get("mode", Mode.LOCAL)),
        seed=int(side.get("seed", 0)),
        quick=bool(side.get("quick", False)),
        nominal_window=int(side.get("nominal_window", LOCAL_WINDOW)),
        steps=steps,
        facts=facts,
        files=dict(side.get("files", {})),
    )


# -- text generation ----------------------------------------------------------------------

_NOUNS = (
    "invoice", "ledger", "cache", "session", "report", "queue", "token", "account", "order",
    "payment", "schedule", "record", "profile", "message", "archive", "index", "bucket",
    "budget", "filter", "channel", "snapshot", "batch", "client", "route", "metric",
    "widget", "journal", "policy", "template", "checksum", "upload", "ticket", "vendor",
)
_VERBS = (
    "load", "parse", "merge", "validate", "render", "store", "fetch", "compute", "encode",
    "decode", "refresh", "publish", "collect", "resolve", "normalize", "export", "import",
    "schedule", "retry", "archive", "sync", "format", "compare", "count", "split",
)
_ADJS = (
    "pending", "stale", "daily", "remote", "local", "nested", "partial", "cached", "signed",
    "empty", "large", "small", "primary", "secondary", "weekly", "legacy", "draft", "final",
)
_DIRS = ("src/core", "src/api", "src/utils", "lib/storage", "lib/net", "tools", "docs", "config")
_PLACES = (
    "Lisbon", "Oslo", "Kyoto", "Valparaiso", "Tallinn", "Porto", "Hobart", "Ljubljana",
    "Cusco", "Bergen", "Antwerp", "Graz",
)
_TOPICS = (
    "the release checklist", "the onboarding guide", "our test plan", "the migration",
    "the quarterly review", "the support rota", "the database backup", "the API freeze",
    "the design review", "the hiring plan", "the offsite", "the budget review",
)
_NAMES = ("Mara", "Tomasz", "Ines", "Kofi", "Lea", "Ravi", "Sunniva", "Dario", "Yuki", "Ana")


class _Gen:
    """Seeded text pieces measured with cl100k."""

    def __init__(self, key: str) -> None:
        self.rng = random.Random(key)
        self.tok = Cl100kTokenizer()

    def count(self, text: str) -> int:
        return self.tok.count(text)

    def pick(self, items: tuple[str, ...]) -> str:
        return self.rng.choice(items)

    def ident(self) -> str:
        return f"{self.pick(_VERBS)}_{self.pick(_ADJS)}_{self.pick(_NOUNS)}"

    def sentence(self) -> str:
        r = self.rng
        forms = (
            lambda: f"The {self.pick(_ADJS)} {self.pick(_NOUNS)} is checked every "
            f"{r.randint(2, 90)} minutes before we {self.pick(_VERBS)} it.",
            lambda: f"{self.pick(_NAMES)} said the {self.pick(_NOUNS)} for {self.pick(_TOPICS)} "
            f"needs {r.randint(2, 40)} more hours.",
            lambda: f"We agreed to {self.pick(_VERBS)} each {self.pick(_NOUNS)} in "
            f"{self.pick(_PLACES)} once the {self.pick(_ADJS)} copy is ready.",
            lambda: f"About {r.randint(3, 97)} percent of the {self.pick(_NOUNS)} records are "
            f"{self.pick(_ADJS)}.",
            lambda: f"Remind me later how {self.pick(_TOPICS)} relates to the "
            f"{self.pick(_NOUNS)}.",
        )
        return r.choice(forms)()

    def paragraph(self, tokens: int) -> str:
        parts: list[str] = []
        used = 0
        while used < tokens:
            s = self.sentence()
            parts.append(s)
            used += self.count(s) + 1
        return " ".join(parts)

    def code_file(self, tokens: int, module: str) -> str:
        r = self.rng
        lines = [f'"""{module}: helpers for {self.pick(_ADJS)} {self.pick(_NOUNS)} handling."""',
                 "", f"import {self.pick(('json', 'os', 'time', 'pathlib', 're'))}", ""]
        const = f"MAX_{self.pick(_NOUNS).upper()}_{self.pick(_ADJS).upper()}"
        lines += [f"{const} = {r.randint(2, 5000)}", ""]
        used = sum(self.count(ln) + 1 for ln in lines)
        while used < tokens:
            name = self.ident()
            a, b = self.pick(_NOUNS), self.pick(_ADJS)
            block = [
                "",
                f"def {name}({a}, {b}_limit={r.randint(1, 999)}):",
                f'    """{self.pick(_VERBS).capitalize()} the {b} {a} and return the count."""',
                f"    total = len({a}) * {r.randint(2, 64)}",
                f"    if total > {b}_limit:",
                f"        return total - {b}_limit",
                "    return total",
            ]
            lines += block
            used += sum(self.count(ln) + 1 for ln in block)
        return "\n".join(lines) + "\n"

    def prose_file(self, tokens: int, title: str) -> str:
        lines = [f"# {title}", ""]
        used = self.count(lines[0]) + 2
        while used < tokens:
            para = self.paragraph(min(120, max(tokens - used, 20)))
            lines += [para, ""]
            used += self.count(para) + 2
        return "\n".join(lines)

    def log_file(self, tokens: int) -> str:
        r = self.rng
        lines: list[str] = []
        used = 0
        n = 0
        while used < tokens:
            n += 1
            level = r.choice(("INFO", "INFO", "INFO", "WARN", "DEBUG"))
            line = (
                f"2024-05-{r.randint(1, 28):02d}T{r.randint(0, 23):02d}:{r.randint(0, 59):02d}"
                f" {level} step {n}: {self.pick(_VERBS)} {self.pick(_ADJS)} {self.pick(_NOUNS)}"
                f" took {r.randint(1, 9999)} ms"
            )
            lines.append(line)
            used += self.count(line) + 1
        return "\n".join(lines) + "\n"

    def make_file(self, path: str, tokens: int) -> str:
        if path.endswith(".py"):
            return self.code_file(tokens, path)
        return self.prose_file(tokens, path.rsplit("/", 1)[-1])

    def path(self, taken: set[str]) -> str:
        while True:
            ext = self.rng.choice((".py", ".py", ".py", ".md", ".txt"))
            p = f"{self.pick(_DIRS)}/{self.pick(_ADJS)}_{self.pick(_NOUNS)}{ext}"
            if p not in taken:
                taken.add(p)
                return p


# -- shared planting ----------------------------------------------------------------------


def _constraints(gen: _Gen, turn: int) -> tuple[str, list[Fact]]:
    limit = gen.rng.choice((60, 80, 120))
    text = (
        "Ground rules for this whole chat: Never use tabs for indentation, always use four "
        f"spaces. Always write dates as YYYY-MM-DD. Keep every answer under {limit} words."
    )
    facts = [
        Fact("constraint", "Never use tabs for indentation, always use four spaces.",
             "never use tabs", "Should code indentation use tabs or spaces? One word.",
             ("space",), turn),
        Fact("constraint", "Always write dates as YYYY-MM-DD.", "YYYY-MM-DD",
             "In which format must dates be written?", ("YYYY-MM-DD",), turn),
        Fact("constraint", f"Keep every answer under {limit} words.", f"under {limit} words",
             "What word limit did I set for your answers?", (str(limit),), turn),
    ]
    return text, facts


def _numbers(gen: _Gen, turn: int) -> tuple[str, list[Fact]]:
    port = gen.rng.randint(2000, 9999)
    budget = gen.rng.randint(11, 99) * 1000 + gen.rng.randint(1, 9) * 100
    city = gen.pick(_PLACES)
    text = (
        f"Some numbers to remember: the staging server listens on port {port}, and the team "
        f"budget for {city} is {budget} euros."
    )
    facts = [
        Fact("number", f"staging server port {port}", str(port),
             "Which port does the staging server listen on?", (str(port),), turn),
        Fact("number", f"team budget {budget} euros", str(budget),
             f"What is the team budget for {city}, in euros?",
             (str(budget), f"{budget:,}"), turn),
    ]
    return text, facts


def _read_result(root: Path, path: str, window: int, uncapped: bool = False) -> str:
    limits = ToolLimits(max_output_chars=10**9) if uncapped else ToolLimits.for_window(window)
    ctx = ToolContext(workspace=Workspace(root), limits=limits)
    return ReadFileTool().run(ReadFileArgs(path=path), ctx).text


class _Builder:
    """Accumulates steps; tool results come from the real ``read_file`` in a workspace."""

    def __init__(self, wl: Workload, root: Path) -> None:
        self.wl = wl
        self.root = root
        self.calls = 0
        self.turn = 0

    def _call_id(self) -> str:
        self.calls += 1
        return f"call_{self.wl.name.lower()}_{self.calls:04d}"

    def add_file(self, path: str, content: str) -> None:
        self.wl.files[path] = content
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")

    def read(self, path: str, *, uncapped: bool = False) -> None:
        result = _read_result(self.root, path, self.wl.nominal_window, uncapped)
        self.wl.steps.append(
            ToolStep(self._call_id(), "read_file", {"path": path}, result, live=not uncapped)
        )

    def write(self, path: str, content: str) -> None:
        ctx = ToolContext(workspace=Workspace(self.root), limits=ToolLimits())
        result = WriteFileTool().run(WriteFileArgs(path=path, content=content), ctx).text
        self.wl.steps.append(
            ToolStep(self._call_id(), "write_file", {"content": content, "path": path}, result)
        )

    def say(self, text: str) -> int:
        self.wl.steps.append(ChatStep(text))
        self.turn += 1
        return self.turn


_FILE_QUESTIONS: tuple[Callable[[_Gen, list[str]], str], ...] = (
    lambda g, ps: f"Which functions are defined in {ps[0]}? List their names.",
    lambda g, ps: f"Summarize {ps[-1]} in one sentence.",
    lambda g, ps: f"Does {ps[0]} mention a {g.pick(_NOUNS)}? Quote the line if it does.",
    lambda g, ps: "What do these files have in common: " + ", ".join(ps) + "?",
    lambda g, ps: f"Is there anything in {ps[-1]} that looks like a bug?",
    lambda g, ps: f"Which constant is defined at the top of {ps[0]}, and what is its value?",
)


def _tool_heavy(
    wl: Workload, root: Path, gen: _Gen, *, turns: int, file_min: int, file_max: int
) -> None:
    """The W1 pattern: every turn reads 1-3 files, then asks about them."""
    b = _Builder(wl, root)
    pool_size = max(6, int(turns * 1.5))
    taken: set[str] = set()
    pool = [gen.path(taken) for _ in range(pool_size)]
    for p in pool:
        b.add_file(p, gen.make_file(p, gen.rng.randint(file_min, file_max)))
    unread = list(pool)
    note_path = "notes/decisions.md"
    for turn in range(1, turns + 1):
        n = gen.rng.randint(1, 3)
        paths: list[str] = []
        for _ in range(n):
            p = unread.pop(0) if unread and gen.rng.random() < 0.8 else gen.rng.choice(pool)
            if p not in paths:
                paths.append(p)
        if turn == 3:
            note = (
                f"# Decisions\n\n- {gen.sentence()}\n- Dates are written as YYYY-MM-DD.\n"
                f"- {gen.sentence()}\n"
            )
            b.write(note_path, note)
        for p in paths:
            b.read(p)
        question = gen.rng.choice(_FILE_QUESTIONS)(gen, paths)
        if turn == 1:
            text, facts = _constraints(gen, turn)
            wl.facts += facts
            wl.facts.append(
                Fact("path_read", paths[0], paths[0],
                     "Which file did I ask you to read first in this chat? Give its path.",
                     (paths[0],), turn)
            )
            b.say(f"{text} Now, {question[0].lower()}{question[1:]}")
        elif turn == 2:
            text, facts = _numbers(gen, turn)
            wl.facts += facts
            b.say(f"{text} {question}")
        elif turn == 3:
            wl.facts.append(
                Fact("path_modified", note_path, note_path,
                     "Which file did I write our decisions to? Give its path.",
                     (note_path,), turn)
            )
            b.say(f"I saved our decisions in {note_path}. {question}")
        else:
            b.say(question)


def _w1(seed: int, quick: bool, root: Path) -> Workload:
    size = SIZES["W1", quick]
    wl = Workload("W1", "W1 tool-heavy (local)", Mode.LOCAL, seed, quick, size.window)
    gen = _Gen(f"W1:{seed}")
    _tool_heavy(wl, root, gen, turns=size.turns, file_min=size.low, file_max=size.high)
    return wl


def _w2(seed: int, quick: bool, root: Path) -> Workload:
    size = SIZES["W2", quick]
    wl = Workload("W2", "W2 plain chat (local)", Mode.LOCAL, seed, quick, size.window)
    gen = _Gen(f"W2:{seed}")
    b = _Builder(wl, root)
    turns = size.turns
    openers = (
        "Let me think out loud about {topic}.",
        "Another thing about {topic}:",
        "Quick update on {topic}.",
        "Can you help me with {topic}?",
        "I am still worried about {topic}.",
    )
    for turn in range(1, turns + 1):
        opener = gen.rng.choice(openers).format(topic=gen.pick(_TOPICS))
        body = gen.paragraph(gen.rng.randint(size.low, size.high))
        ask = gen.rng.choice(
            ("What would you do?", "Any advice?", "Does that sound reasonable?",
             "What should I check first?", "Summarize the risk in one line.")
        )
        if turn == 1:
            text, facts = _constraints(gen, turn)
            wl.facts += facts
            b.say(f"{text} {opener} {body} {ask}")
        elif turn == 2:
            text, facts = _numbers(gen, turn)
            wl.facts += facts
            b.say(f"{text} {opener} {body} {ask}")
        else:
            b.say(f"{opener} {body} {ask}")
    return wl


def _w3(seed: int, quick: bool, root: Path) -> Workload:
    size = SIZES["W3", quick]
    wl = Workload("W3", "W3 oversized tool output (local)", Mode.LOCAL, seed, quick, size.window)
    gen = _Gen(f"W3:{seed}")
    b = _Builder(wl, root)
    taken: set[str] = set()
    first = gen.path(taken)
    b.add_file(first, gen.make_file(first, gen.rng.randint(size.low, size.high)))
    log_path = "logs/build.log"
    b.add_file(log_path, gen.log_file(int(size.window * 1.5)))
    b.read(first)
    text, facts = _constraints(gen, 1)
    wl.facts += facts
    wl.facts.append(
        Fact("path_read", first, first,
             "Which file did I ask you to read first in this chat? Give its path.", (first,), 1)
    )
    b.say(f"{text} What is {first} for?")
    text, facts = _numbers(gen, 2)
    wl.facts += facts
    b.say(f"{text} I am about to show you a long build log.")
    # The whole log, without the app's per-call output cap: larger than the window.
    b.read(log_path, uncapped=True)
    after = (
        f"Which step in {log_path} took the longest?",
        "Were there any WARN lines? Name one.",
        "Summarize the build log in two sentences.",
        f"Thanks. Back to {first}: which function should I test first?",
        "Give me a one-line status update for the team.",
    )
    for q in after[: size.turns]:
        b.say(q)
    return wl


def _data_file(gen: _Gen, chars: int) -> tuple[str, list[tuple[int, str]]]:
    """Lines ``Item N: code QX-1234 ...`` up to ``chars`` characters; returns the text and
    the (item, code) pairs."""
    lines: list[str] = []
    items: list[tuple[int, str]] = []
    used = 0
    n = 0
    while True:
        n += 1
        code = f"QX-{gen.rng.randint(1000, 9999)}"
        line = (f"Item {n}: code {code}, stored in {gen.pick(_PLACES)}, "
                f"batch {gen.rng.randint(1, 99)}.")
        if used + len(line) + 1 > chars:
            break
        lines.append(line)
        items.append((n, code))
        used += len(line) + 1
    return "\n".join(lines) + "\n", items


def _w5(seed: int, quick: bool, root: Path) -> Workload:
    size = SIZES["W5", quick]
    wl = Workload("W5", "W5 read, then ask (local)", Mode.LOCAL, seed, quick, size.window)
    gen = _Gen(f"W5:{seed}")
    b = _Builder(wl, root)
    text, facts = _constraints(gen, 1)
    wl.facts += facts
    b.say(f"{text} I will show you some data files and ask you about them.")
    # As large as one read may be (the output cap less its header and a margin), and in
    # the quick run's tiny window no more than fits beside the tool schemas and the reply.
    chars = min(ToolLimits.for_window(size.window).max_output_chars - 120, size.window * 3 // 4)
    for turn in range(1, size.turns + 1):
        path = f"data/part_{turn:02d}.txt"
        body, items = _data_file(gen, chars)
        b.add_file(path, body)
        b.read(path)
        item, code = gen.rng.choice(items[1:-1] or items)
        if turn == 1:
            wl.facts.append(
                Fact("path_read", path, path,
                     "Which file did I ask you to read first in this chat? Give its path.",
                     (path,), 2)
            )
        wl.steps.append(ChatStep(f"In {path}, what is the code of item {item}?", (code,)))
        b.turn += 1
    return wl


def _w4(seed: int, quick: bool, root: Path) -> Workload:
    size = SIZES["W4", quick]
    title = f"W4 tool-heavy (standard, {size.window // 1024}k)"
    wl = Workload("W4", title, Mode.STANDARD, seed, quick, size.window)
    gen = _Gen(f"W4:{seed}")
    _tool_heavy(wl, root, gen, turns=size.turns, file_min=size.low, file_max=size.high)
    return wl


_BUILDERS: dict[str, Callable[[int, bool, Path], Workload]] = {
    "W1": _w1, "W2": _w2, "W3": _w3, "W4": _w4, "W5": _w5,
}
_ALIASES = {
    "w1": "W1", "tool-heavy": "W1", "w2": "W2", "chat": "W2", "plain-chat": "W2",
    "w3": "W3", "oversized": "W3", "w4": "W4", "standard": "W4", "w5": "W5",
    "read-then-ask": "W5", "read": "W5",
}


def canonical_name(name: str) -> str:
    """``W1``..``W5`` from a name or alias; raises ValueError for anything else."""
    got = _ALIASES.get(name.strip().lower()) or (name if name in _BUILDERS else None)
    if got is None:
        raise ValueError(f"unknown workload {name!r}; use one of {', '.join(WORKLOAD_NAMES)}")
    return got


def generate(
    name: str, seed: int = 0, *, quick: bool = False, root: Path | None = None
) -> Workload:
    """Build workload ``name`` deterministically; files are also written under ``root``.

    Without ``root`` a temporary folder is used and removed (the files stay in
    ``Workload.files`` and are written again by :meth:`Workload.write_workspace`).
    """
    builder = _BUILDERS[canonical_name(name)]
    if root is not None:
        return builder(seed, quick, root)
    import tempfile

    with tempfile.TemporaryDirectory(prefix="bench-gen-") as tmp:
        return builder(seed, quick, Path(tmp))
