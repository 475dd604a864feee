"""The tool-use probe: can this model do small file tasks with the app's tools?

Each task runs the way the app runs a chat (the engine :func:`~assistant.engine.build_engine`
builds, the user's system prompt, the same tools, approvals granted) in a temporary
workspace of its own, and is scored on what the user would check: the answer's words and the
files on disk. The result is kept (:mod:`assistant.llm.tool_score`) and decides whether the
model is offered tools at all. ``python -m assistant probe --tools [MODEL]`` runs it.
"""

from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from assistant.agent.events import AgentEvent, Notice, ToolCallStarted
from assistant.config import Settings
from assistant.conversation import Conversation
from assistant.engine import build_engine
from assistant.llm.base import LLMBackend, LLMError
from assistant.llm.context_probe import model_id
from assistant.llm.tool_score import ToolScore, now

#: Longest reply and most tool rounds a task may take.
MAX_REPLY_TOKENS = 200
MAX_STEPS = 5

#: A task's check: (workspace, the final answer) -> None when done, else what is wrong.
Check = Callable[[Path, str], str | None]


@dataclass(frozen=True)
class ToolTask:
    name: str
    #: Files written into the workspace first (relative path -> text).
    files: dict[str, str]
    prompt: str
    check: Check


def _answer_has(*words: str) -> Check:
    """Each of ``words`` in the answer; a word may be alternatives ("14:30|2:30")."""
    def check(_: Path, answer: str) -> str | None:
        low = answer.lower()
        missing = [w.split("|")[0] for w in words
                   if not any(alt.lower() in low for alt in w.split("|"))]
        return f"the answer does not say {', '.join(missing)}" if missing else None
    return check


def _file_is(path: str, expected: str) -> Check:
    def check(root: Path, _: str) -> str | None:
        target = root / path
        if not target.is_file():
            return f"{path} was not written"
        got = target.read_text(encoding="utf-8", errors="replace")
        if got.strip() != expected.strip():
            return f"{path} holds {got[:60]!r}, not {expected!r}"
        return None
    return check


def _config_edited(root: Path, _: str) -> str | None:
    target = root / "app" / "config.py"
    if not target.is_file():
        return "app/config.py is gone"
    got = target.read_text(encoding="utf-8", errors="replace")
    want = 'HOST = "localhost"\nPORT = 9090\nDEBUG = False\n'
    if got == want:
        return None
    return f"app/config.py is {got!r}, not {want!r}"


def _both(*checks: Check) -> Check:
    def check(root: Path, answer: str) -> str | None:
        return next((why for c in checks if (why := c(root, answer)) is not None), None)
    return check


_NOTES = (
    "Team notes\n\nThe weekly planning meeting is on Thursday at 14:30 in room B12.\n"
    "Bring the budget sheet.\n"
)

#: The fixed task set: read and answer, find a file, grep, write a new file, change one
#: line, and two steps in a row.
TASKS: tuple[ToolTask, ...] = (
    ToolTask(
        "read and answer", {"notes.txt": _NOTES},
        "Read the file notes.txt and tell me when the meeting is.",
        _answer_has("thursday", "14:30|2:30"),
    ),
    ToolTask(
        "find a file",
        {"reports/2023/summary.md": "# 2023\n", "reports/q3/budget_2024.csv": "item,cost\n",
         "readme.txt": "Reports folder.\n"},
        "In which folder is the file budget_2024.csv? Find it.",
        _answer_has("reports/q3"),
    ),
    ToolTask(
        "grep",
        {"src/billing.py": "def parse_invoice(text):\n    return text.split(',')\n",
         "src/users.py": "def load_user(name):\n    return {'name': name}\n",
         "src/main.py": "print('start')\n"},
        "Which file in src defines the function parse_invoice? Search the files.",
        _answer_has("billing.py"),
    ),
    ToolTask(
        "write a new file", {"notes.txt": _NOTES},
        "Create a new file called hello.txt that contains exactly: hello world",
        _file_is("hello.txt", "hello world"),
    ),
    ToolTask(
        "change one line",
        {"app/config.py": 'HOST = "localhost"\nPORT = 8080\nDEBUG = False\n'},
        "In app/config.py change the port from 8080 to 9090. Change nothing else.",
        _config_edited,
    ),
    ToolTask(
        "two steps",
        {"todo.txt": "buy oat milk\ncall the dentist\nwater the plants\n"},
        "Read todo.txt, then write its first line into a new file named first.txt.",
        _file_is("first.txt", "buy oat milk"),
    ),
)


@dataclass
class TaskOutcome:
    name: str
    passed: bool
    why: str
    calls: list[str]
    answer: str
    seconds: float


def run_task(
    backend: LLMBackend, settings: Settings, task: ToolTask, root: Path
) -> TaskOutcome:
    """One task in ``root`` (an empty folder) through the app's engine."""
    for rel, text in task.files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    calls: list[str] = []
    notes: list[str] = []

    def on_event(event: AgentEvent) -> None:
        if isinstance(event, ToolCallStarted):
            calls.append(event.call.name)
        elif isinstance(event, Notice) and event.level != "info":
            notes.append(event.text)

    # A task needs a few short calls and a sentence: bounded, so a model that rambles or
    # loops costs the probe seconds, not minutes.
    sampling = settings.sampling.model_copy(update={
        "max_reply_tokens": min(settings.sampling.max_reply_tokens, MAX_REPLY_TOKENS)})
    local = settings.model_copy(update={
        "workspace": str(root), "tool_approval": "auto", "sampling": sampling,
        "step_limit": min(settings.step_limit, MAX_STEPS)})
    engine = build_engine(backend, lambda: local, None, on_event, tools=True)
    conv = Conversation()
    started = time.perf_counter()
    try:
        engine.agent.chat(conv, task.prompt)
    except LLMError as exc:
        notes.append(str(exc))
    replies = [m.content for m in conv.messages if m.role == "assistant" and m.content.strip()]
    answer = replies[-1] if replies else ""
    why = task.check(root, answer)
    if why is not None and notes:
        why += f" ({notes[-1][:120]})"
    return TaskOutcome(task.name, why is None, why or "", calls, answer,
                       round(time.perf_counter() - started, 1))


def probe_tool_use(
    backend: LLMBackend,
    settings: Settings,
    tasks: Sequence[ToolTask] = TASKS,
    progress: Callable[[TaskOutcome], None] | None = None,
) -> ToolScore:
    """Run ``tasks`` (each in a fresh temporary workspace) and score them."""
    outcomes: list[TaskOutcome] = []
    started = time.perf_counter()
    for task in tasks:
        slug = re.sub(r"\W+", "-", task.name)
        with tempfile.TemporaryDirectory(prefix=f"tool-probe-{slug}-") as folder:
            outcome = run_task(backend, settings, task, Path(folder))
        outcomes.append(outcome)
        if progress is not None:
            progress(outcome)
    return ToolScore(
        model=model_id(backend.info),
        passed=sum(o.passed for o in outcomes),
        total=len(outcomes),
        measured=now(),
        seconds=round(time.perf_counter() - started, 1),
        tasks=[{"name": o.name, "passed": o.passed, "why": o.why, "calls": o.calls,
                "answer": o.answer[:300], "seconds": o.seconds} for o in outcomes],
    )
