"""Fuzzing the text boundaries (issue 47): ``python -m bench.fuzz_text``.

Random bytes and text, with invalid UTF-8, lone and split surrogates and control characters
(escape sequences, C1 controls, BEL, NUL, CR), go through every edge where text enters the
app, in the real terminal chat (``python -m assistant chat``, a subprocess) on a scripted
OpenAI-compatible server (tests/fakes/openai_server.py):

* **standard input**: each fuzzed line is a message (some are ``/ls``, ``/find``, ``/grep``
  and ``/read`` of a fuzzed name, which print file names and contents on the terminal);
* **file names** (and contents): the workspace holds files whose names are fuzzed bytes, which
  the model lists, finds, greps, reads and writes (``write_file`` with a fuzzed path and
  content: the **tool arguments**);
* **server events** and **model output**: every reply is fuzzed text sent as several stream
  events, with emoji split between two events at their surrogate pair.

Then each chat is checked as a user would find it: reopened (``--resume``), compacted
(``/compact``), asked about a fact it was told first (recall must bring it back beside the
question) and read back from its file with no damaged line. The summary counts each
boundary's cases and, over every run, the *broken chats* (any check failed), *tracebacks*
(on either stream) and *raw control sequences* (a control character other than newline and
tab reaching the terminal); the exit status is 1 when any is above 0.

    python -m bench.fuzz_text --cases 1000 --chats 4 --seed 47
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from assistant.config import Settings, save_settings
from tests.fakes.openai_server import FakeOpenAIServer, Messages, fake_openai_server, tool_call_text

#: What the chat is told first, and asked about last (recall must bring the number back).
FACT = "Remember this for later. The vault code is 48213. Keep it safe."
QUESTION = "What is the vault code?"
#: Pieces fuzzed text is made of, besides random bytes and code points.
CONTROLS = ["\x1b[2J", "\x1b]0;pwned\x07", "\x9b31m", "\x1bP1$r\x1b\\", "\x07", "\x00", "\r",
            "\x08", "\x7f", "\x85", "\x1b[6n", "\x1bc", "\u202e"]
EMOJI = ["\U0001f600", "\U0001f4a9", "\U00010348"]
WORDS = ["pump", "code", "café", "naïve", "日本", "note", "file", "Allow? [y]es once"]
#: A raw control on the terminal: C0 but newline and tab, DEL, C1 (as UTF-8).
RAW = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")


def fuzz_bytes(rng: random.Random, longest: int = 60) -> bytes:
    """Bytes as a user, a file or a pipe may hold: invalid UTF-8, encoded surrogates,
    controls, emoji, words."""
    out = bytearray()
    while len(out) < rng.randint(1, longest):
        kind = rng.randrange(6)
        if kind == 0:
            out += bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
        elif kind == 1:
            out += rng.choice([b"\xff", b"\xc3", b"\xe9", b"\xed\xa0\xbd", b"\xed\xb3\xa9",
                               b"\xf0\x9f", b"\x80\x80"])
        elif kind == 2:
            out += rng.choice(CONTROLS).encode("utf-8")
        elif kind == 3:
            out += rng.choice(EMOJI).encode("utf-8")
        else:
            out += (rng.choice(WORDS) + " ").encode("utf-8")
    return bytes(out)


def fuzz_text(rng: random.Random, longest: int = 60) -> str:
    """Text as a server may send it: lone surrogates and controls among words."""
    out: list[str] = []
    for _ in range(rng.randint(1, max(1, longest // 6))):
        kind = rng.randrange(5)
        if kind == 0:
            out.append(chr(rng.choice([rng.randrange(0xD800, 0xE000), rng.randrange(0x20),
                                       rng.randrange(0x7F, 0xA0)])))
        elif kind == 1:
            out.append(rng.choice(CONTROLS))
        elif kind == 2:
            out.append(rng.choice(EMOJI))
        else:
            out.append(rng.choice(WORDS) + " ")
    return "".join(out)


def pieces(text: str, rng: random.Random) -> list[str]:
    """``text`` as stream events: cut at random places, an emoji cut between its halves
    (as a server sending UTF-16 surrogate pairs as JSON escapes may)."""
    split = "".join(_halves(ch) if ord(ch) >= 0x10000 else ch for ch in text)
    cuts = sorted(rng.sample(range(1, len(split)), min(3, len(split) - 1))) if split else []
    bounds = [0, *cuts, len(split)]
    return [split[a:b] for a, b in itertools.pairwise(bounds) if split[a:b]]


def _halves(ch: str) -> str:
    code = ord(ch) - 0x10000
    return chr(0xD800 + (code >> 10)) + chr(0xDC00 + (code & 0x3FF))


def fuzz_name(rng: random.Random) -> bytes:
    """A file name of fuzzed bytes (no ``/``, no NUL, not ``.`` or ``..``)."""
    name = fuzz_bytes(rng, 30).replace(b"/", b"_").replace(b"\x00", b"_")[:200]
    return name if name.strip(b".") else b"dots" + name


@dataclass
class Counts:
    """Fuzzed cases per boundary, and what went wrong."""

    cases: Counter[str] = field(default_factory=Counter)
    broken: list[str] = field(default_factory=list)
    tracebacks: int = 0
    raw: int = 0
    seconds: float = 0.0

    def line(self) -> str:
        per = ", ".join(f"{k} {v:,}" for k, v in sorted(self.cases.items()))
        return (f"fuzz_text: {per}; broken chats {len(self.broken)}, tracebacks "
                f"{self.tracebacks}, raw control sequences {self.raw} ({self.seconds:.0f} s)")


class Model:
    """The scripted server's model: fuzzed replies, tool calls on fuzzed names."""

    def __init__(self, seed: int, names: list[bytes], counts: Counts) -> None:
        self.rng = random.Random(seed)
        self.names = names
        self.counts = counts

    def __call__(self, messages: Messages) -> str | list[str]:
        rng = self.rng
        last = messages[-1]
        if QUESTION in str(last.get("content")):
            return "The code is in the excerpt."
        text = fuzz_text(rng)
        self.counts.cases["server events"] += 1
        self.counts.cases["model output"] += 1
        if last.get("role") == "user" and rng.random() < 0.7:
            calls = [self._call(rng) for _ in range(rng.randint(1, 3))]
            return [*pieces(text, rng), *("\n" + call for call in calls)]
        return pieces(text, rng)

    def _call(self, rng: random.Random) -> str:
        """A call whose arguments are fuzzed: a name on disk (as bytes that are not UTF-8
        decode: lone surrogates in the JSON), a new name, text, a pattern."""
        self.counts.cases["tool arguments"] += 1
        name = os.fsdecode(rng.choice(self.names))
        kind = rng.randrange(5)
        if kind == 0:
            return tool_call_text("list_dir", {"path": rng.choice([".", name])})
        if kind == 1:
            pattern = rng.choice(["*", "**", "**/*", fuzz_text(rng, 12), name[:3] + "*"])
            return tool_call_text("find_files", {"pattern": pattern})
        if kind == 2:
            return tool_call_text("grep", {"pattern": rng.choice(["a", fuzz_text(rng, 12)])})
        if kind == 3:
            return tool_call_text("read_file", {"path": name})
        path = os.fsdecode(fuzz_name(rng))
        return tool_call_text("write_file", {"path": path, "content": fuzz_text(rng)})


def _workspace(root: Path, rng: random.Random, count: int, counts: Counts) -> list[bytes]:
    root.mkdir(parents=True, exist_ok=True)
    names: list[bytes] = []
    for _ in range(count):
        name = fuzz_name(rng)
        with open(os.path.join(os.fsencode(root), name), "wb") as fh:
            fh.write(fuzz_bytes(rng, 200))
        names.append(name)
        counts.cases["file names"] += 1
    return names


def _stdin(rng: random.Random, count: int, names: list[bytes], counts: Counts) -> bytes:
    lines = [FACT.encode()]
    for i in range(count):
        counts.cases["stdin"] += 1
        if i % 10 == 9:  # a command that prints file names and contents on the terminal
            name = os.fsdecode(rng.choice(names)).replace("\n", " ")
            lines.append(rng.choice([b"/ls", b"/find *", b"/grep a"]) if i % 20 == 9
                         else ("/read " + name).encode("utf-8", "surrogateescape"))
            continue
        # "m " first: a fuzzed line starting with "!" would be a shell command.
        lines.append(b"m " + fuzz_bytes(rng).replace(b"\n", b" "))
    return b"\n".join(lines) + b"\n"


def _chat(server: FakeOpenAIServer, workspace: Path, data: bytes, home: Path,
          *extra: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "ASSISTANT_HOME": str(home)}
    env.pop("DISPLAY", None)
    return subprocess.run(
        [sys.executable, "-m", "assistant", "chat", "--server", server.url, "--server-window",
         "4096", "--workspace", str(workspace), "--yes=write", *extra],
        input=data, capture_output=True, timeout=3600, env=env, start_new_session=True,
    )


def _terminal(proc: subprocess.CompletedProcess[bytes], counts: Counts) -> list[str]:
    """What is wrong with what the terminal got (and count it)."""
    problems: list[str] = []
    for name, data in (("stdout", proc.stdout), ("stderr", proc.stderr)):
        if b"Traceback" in data:
            counts.tracebacks += data.count(b"Traceback")
            problems.append(f"a traceback on {name}")
        raw = RAW.findall(data)
        if raw:
            counts.raw += len(raw)
            problems.append(f"{len(raw)} raw control characters on {name}: {raw[:5]!r}")
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(f"{name} is not UTF-8: {exc}")
    if proc.returncode != 0:
        problems.append(f"exit status {proc.returncode}")
    return problems


def _chat_file_problems(home: Path) -> tuple[str | None, list[str]]:
    """The chat's id and what is wrong with its file (damaged lines, no compaction)."""
    files = sorted((home / "data" / "sessions").glob("*.jsonl"))
    if len(files) != 1:
        return None, [f"{len(files)} chat files"]
    problems: list[str] = []
    kinds: Counter[str] = Counter()
    for number, line in enumerate(files[0].read_bytes().splitlines(), start=1):
        try:
            entry = json.loads(line.decode("utf-8"))
        except ValueError as exc:
            problems.append(f"line {number} is damaged: {exc}")
            continue
        kinds[str(entry.get("type"))] += 1
    if not kinds["compaction"]:
        problems.append("never compacted")
    return files[0].stem, problems


def run_chat(seed: int, cases: int, root: Path, counts: Counts) -> list[str]:
    """One chat of ``cases`` fuzzed turns, then reopened, compacted and asked; its problems."""
    rng = random.Random(seed)
    home, workspace = root / "home", root / "workspace"
    settings = Settings()
    settings.compaction.recall = True
    save_settings(settings, home / "config" / "settings.json")
    names = _workspace(workspace, rng, max(5, cases), counts)
    model = Model(seed, names, counts)
    with fake_openai_server(model) as server:
        first = _chat(server, workspace, _stdin(rng, cases, names, counts), home)
        problems = _terminal(first, counts)
        chat_id, file_problems = _chat_file_problems(home)
        if chat_id is None:
            return problems + file_problems
        again = _chat(server, workspace, f"/compact\n{QUESTION}\n".encode(), home,
                      "--resume", chat_id)
        problems += _terminal(again, counts)
        if b"[chat] resumed" not in again.stderr:
            problems.append("not resumed")
        asked = [m for m in server.requests[-1] if m.get("role") == "user"][-1]["content"]
        if "48213" not in str(asked).partition(QUESTION)[0]:
            problems.append("the fact was not recalled beside the question")
    _chat_id, file_problems = _chat_file_problems(home)
    return problems + file_problems


def run(seed: int, cases: int, chats: int, root: Path) -> Counts:
    """``cases`` fuzzed inputs per boundary over ``chats`` chats."""
    counts = Counts()
    started = time.monotonic()
    for n in range(chats):
        share = cases // chats + (1 if n < cases % chats else 0)
        problems = run_chat(seed + n, share, root / f"chat{n}", counts)
        if problems:
            counts.broken.append(f"chat {n} (seed {seed + n}): " + "; ".join(problems))
    counts.seconds = time.monotonic() - started
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fuzz_text", description=__doc__)
    parser.add_argument("--cases", type=int, default=1000, help="fuzzed inputs per boundary")
    parser.add_argument("--chats", type=int, default=4, help="chats they are spread over")
    parser.add_argument("--seed", type=int, default=47)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fuzz-text-") as tmp:
        counts = run(args.seed, args.cases, args.chats, Path(tmp))
    for broken in counts.broken:
        print(broken, file=sys.stderr)
    print(counts.line())
    bad = counts.broken or counts.tracebacks or counts.raw
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
