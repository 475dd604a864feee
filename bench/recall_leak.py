"""Do a chat model's replies copy recall's labels? A probe of the forms of recall's block.

Recall writes its excerpts into the latest user message as labeled lines ("- (turn 2, I
said, line 1) def add(a, b):"); an instruction-tuned model given them by its own chat template
sometimes copies a label into its reply ("(turn 2, I said, line 1)", seen with
Qwen2.5-Coder-1.5B after a restart). This probe asks a model the same recall prompts in
several forms of the block, at temperature 0, and counts per form the replies that answer
(:func:`bench.questions.accepted`) and the replies that carry a label or any other words of
the block's scaffolding (:data:`LEAK`).

The prompts: :data:`ASKS` (questions that invite copying: "Repeat the code once more.", "Quote
the line ...", in the block recall writes, :func:`block_text`),
and any files saved by ``python -m bench.recall_form capture`` (the app's own prompts after a
compaction)::

    python -m bench.recall_leak --model qwen2.5-coder-1.5b-instruct /tmp/w4.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from assistant.compaction.recall import Excerpt, _line
from assistant.llm.base import GenerationOptions
from assistant.llm.llama_backend import LlamaBackend
from assistant.llm.transcript_recall import HEADING_BEFORE, plain_block, split_block

from .questions import accepted

Messages = list[dict[str, Any]]
SYSTEM = ("You are a helpful assistant running offline on the user's computer. Answer briefly "
          "and accurately. Respect every constraint the user states.")

#: (the question, its excerpts as (label, text), accepted answers).
ASKS: tuple[tuple[str, tuple[tuple[str, str], ...], tuple[str, ...]], ...] = (
    ("Thanks. Repeat the code once more.",
     (("turn 2, I said, lines 1-2", "def add(a, b):\n    return a + b"),), ("return a + b",)),
    ("Thanks. Repeat the code once more.",
     (("turn 2, I said, line 1", "print(sum(x * x for x in range(10)))"),),
     ("range(10)",)),
    ("Show me the SQL query I gave you again.",
     (("turn 3, I said, lines 2-3", "SELECT name FROM users\nWHERE age > 30;"),),
     ("age > 30",)),
    ("Quote the line of config.py that sets the port.",
     (("turn 3, read_file config.py, line 12", "PORT = 8431"),), ("8431",)),
    ("What did I say the deadline was?",
     (("turn 1, I said", "The deadline is Friday 14 March."),), ("14 March",)),
    ("What room did you say the meeting is in?",
     (("turn 4, you replied", "The meeting is in room B12 at 14:30."),), ("B12",)),
    ("Which branch name did I pick? Write it again.",
     (("turn 2, I said", "Let's call the branch fix-login-timeout."),),
     ("fix-login-timeout",)),
    ("Repeat the command you ran to count the lines.",
     (("turn 5, you called", "run_command wc -l data.csv"),), ("wc -l data.csv",)),
    ("Repeat my constraints, please.",
     (("turn 1, I said, lines 1-2", "- answers under 60 words\n- dates as YYYY-MM-DD"),),
     ("YYYY-MM-DD",)),
    ("Thanks. Repeat the code once more.",
     (("turn 2, I said, line 1", "def parse(path):"),
      ("turn 2, I said, lines 4-5", "for line in f:\n    yield line.strip()")),
     ("yield line.strip()",)),
    ("Repeat the two settings I gave you, exactly.",
     (("turn 1, I said, line 3", "timeout = 30"),
      ("turn 1, I said, line 7", "retries = 5")),
     ("retries = 5",)),
    ("Thanks. Show the loop again.",
     (("turn 3, read_file worker.py, lines 12-13",
       "while queue:\n    job = queue.pop()"),),
     ("queue.pop()",)),
    ("Thanks. Repeat the function once more, unchanged.",
     (("turn 2, I said, lines 3-5",
       "def area(r):\n    return 3.14159 * r * r\n# end"),
      ("turn 3, you replied", "The function area(r) returns the area of a circle.")),
     ("3.14159",)),
)

#: Words of the block's scaffolding in a reply: a label ("turn 2", "I said, line 1"), the
#: heading, or the plain form's lead-ins ("Earlier I said:").
LEAK = re.compile(
    r"\bturn \d+\b|\bI said\b|\byou replied\b|\byou called\b|Earlier in this chat|excerpts?\b|"
    r"\blines? \d+(?:-\d+)?\)|read_file\b", re.IGNORECASE,
)


def block_text(excerpts: list[tuple[str, str]]) -> str:
    """Recall's block of ``excerpts`` ((label, text) pairs) as recall writes it."""
    lines = [_line(Excerpt("m", label, text)) for label, text in excerpts]
    return "\n".join([HEADING_BEFORE, *lines])


def ask_prompts() -> list[dict[str, Any]]:
    """:data:`ASKS` as saved prompts (``point`` "ask"), each after a short earlier exchange."""
    out = []
    for question, excerpts, answers in ASKS:
        block = block_text(list(excerpts))
        messages = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "Can you keep an eye on what I paste today?"},
            {"role": "assistant", "content": "Of course. Paste it and I will keep it in mind."},
            {"role": "user", "content": f"{block}\n\n{question}"},
        ]
        out.append({"point": "ask", "question": question, "answers": list(answers),
                    "messages": messages})
    return out


def _latest_user(messages: Messages) -> int:
    return max(i for i, m in enumerate(messages) if m["role"] == "user")


Form = Callable[[Messages], Messages]


def _with(messages: Messages, make: Callable[[Any], str]) -> Messages:
    at = _latest_user(messages)
    block = split_block(str(messages[at]["content"]))
    if block is None:
        return messages
    return [*messages[:at], {**messages[at], "content": make(block)}, *messages[at + 1:]]


def _plain(messages: Messages) -> Messages:
    return _with(messages, lambda b: f"{plain_block(b)}\n\n{b.message}")


def _quoted(messages: Messages) -> Messages:
    """Each excerpt's text as a quotation under a heading without labels."""
    def make(b: Any) -> str:
        quotes = "\n\n".join("\n".join(f"> {ln}" for ln in e.text.split("\n"))
                             for e in b.excerpts)
        return f"From earlier in this chat:\n{quotes}\n\n{b.message}"
    return _with(messages, make)


#: The forms compared: ``labeled``, recall's block as recall writes it (what chat models
#: were shown before); ``shipped``, what the app shows them now
#: (:func:`assistant.llm.transcript_recall.without_labels`); and trial forms.
FORMS: dict[str, Form] = {
    "labeled": lambda m: m, "plain": _plain, "quoted": _quoted, "shipped": lambda m: m,
}


def run(paths: list[Path], model: str, forms: list[str], threads: int, tokens: int,
        limit: int) -> None:
    """Each prompt in every form in turn (a run cut short compares the forms on the same
    prompts), then the tallies per form and source."""
    prompts = [("ask", x) for x in ask_prompts()]
    prompts += [(p.stem, x) for p in paths for x in json.loads(p.read_text())[:limit]]
    backend = LlamaBackend.load(model, n_ctx=2048, threads=threads)
    got: dict[tuple[str, str], list[int]] = {}
    start = time.perf_counter()
    try:
        template = backend.template
        options = GenerationOptions(max_tokens=tokens, temperature=0.0, stop=template.stops)
        for name, x in prompts:
            for form in forms:
                template.recall_unlabeled = form == "shipped"
                text = template.render(FORMS[form](x["messages"]))
                reply = ""
                for event in backend.generate_tokens(backend.tokenize(text), options):
                    if event.result is not None:
                        reply = event.result.text.strip()
                ok = accepted(reply, x["answers"])
                leak = LEAK.search(reply)
                tally = got.setdefault((form, name), [0, 0, 0])
                tally[0] += ok
                tally[1] += leak is not None
                tally[2] += 1
                print(f"{form:8} {'+' if ok else '-'}{'L' if leak else ' '} {name} "
                      f"{x['question']!r} -> {reply[:100]!r}", flush=True)
    finally:
        backend.close()
        print(f"{model}, {time.perf_counter() - start:.0f} s:")
        for (form, name), (a, b, c) in got.items():
            print(f"  form={form} {name}: answered {a}/{c}, leaked {b}/{c}", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.recall_leak", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", type=Path, nargs="*", help="prompts saved by recall_form capture")
    p.add_argument("--model", default="qwen2.5-coder-1.5b-instruct")
    p.add_argument("--form", action="append", choices=list(FORMS))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--tokens", type=int, default=40, help="reply tokens at most")
    p.add_argument("--limit", type=int, default=1000, help="prompts of each file at most")
    args = p.parse_args(argv)
    run(args.paths, args.model, args.form or list(FORMS), args.threads, args.tokens,
        args.limit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
