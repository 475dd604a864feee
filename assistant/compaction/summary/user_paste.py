"""Pasted output in a user message, recognised by the shape of its lines (never its words).
More in docs/COMPACTION.md."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

#: Shapes of program output (as opposed to code or quoted prose): shown in the record as one
#: short labelled excerpt (:func:`excerpt`) when longer than :data:`EXCERPT_LINES`.
OUTPUT_SHAPES: frozenset[str] = frozenset(
    {"listing", "log", "table", "stack trace", "diff", "JSON"}
)
#: A pasted block of output longer than this many lines is shown as an excerpt.
EXCERPT_LINES = 6
#: Characters of each line an excerpt shows.
EXCERPT_CHARS = 100

_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # ls -l, find -ls, tree: permissions and a link count, a "total" line, tree branches
    ("listing", re.compile(r"^\s*([dlcbps-][rwxsStT-]{9}[@+.]?\s+\d+\s|total \d+\s*$|"
                           r"[│├└|`]\s*(──|--)\s)")),
    ("diff", re.compile(r"^(diff --git |index [0-9a-f]{7,}\.\.|--- (a/|/dev/null)|"
                        r"\+\+\+ (b/|/dev/null)|@@ -\d+(,\d+)? \+\d+)")),
    ("stack trace", re.compile(r"^\s*(Traceback \(most recent call last\)|File \".+\", line \d+|"
                               r"at [\w.$<>/]+ ?\(.*\)\s*$|[\w.]+(Error|Exception)(:|$)|"
                               r"Caused by: |\.\.\. \d+ more$|panicked at )")),
    ("log", re.compile(r"^\s*(\[?\d{4}-\d{2}-\d{2}[ T]\d|\[?\d{1,2}:\d{2}:\d{2}|"
                       r"\[?(TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|FATAL|CRITICAL)\]?"
                       r"[:\s]|\$ |>>> |PS [A-Z]:\\|[\w.-]+@[\w.-]+:\S*[$#] |"
                       r"[\w.-]+@[\w.-]+ [^\s%$#]+ [%$#](?: |$))")),
    ("table", re.compile(r"^\s*(\|.*\|\s*$|\+[-=+]{3,}\+\s*$|[-=]{3,}(\s+[-=]{3,})+\s*$)")),
    ("JSON", re.compile(r"^\s*([{\[]\s*$|[}\]],?\s*$|\"[^\"\n]{1,60}\"\s*:\s*\S|"
                        r"(-?\d+(\.\d+)?|true|false|null|\"[^\"]*\"),\s*$)")),
)
#: Columns of a command's output: fields apart by two spaces or a tab.
_WIDE_GAP = re.compile(r"\S(?: {2,}|\t)\s*(?=\S)")
#: A line that ends a sentence of words ("Thanks.") is prose, however it is spaced.
_PROSE_END = re.compile(r"[A-Za-z]{2,}[.?!]$")
#: A shell prompt with its command: bash "me@host:~/src$ make", zsh "me@host src % make".
_PROMPT = re.compile(r"^\s*[\w.-]+@[\w.-]+(?::\S*[$#]| [^\s%$#]+ [%$#])(?: |$)")
#: The user's own sentence: four words or more ending with a full stop, "?" or "!".
_SENTENCE = re.compile(r"(?:[A-Za-z][\w',]*\s+){3,}[A-Za-z][\w']*[.?!]\s*$")
#: A diff's body after its header: added, removed and context lines.
_DIFF_BODY = re.compile(r"^([+-](?![+-]{2} )|\s)")


#: Words typed after a fence closed in the middle of a line: "Books.plist ``` When I ...".
_AFTER_FENCE = re.compile(r"```\s*(?:[A-Za-z][\w',]*\s+){3,}")


def line_shape(line: str) -> str | None:
    """The output shape ``line`` has by itself (listing, diff, stack trace, log, table,
    JSON), or None: a line whose fence closes before a sentence is the user's own words."""
    if _AFTER_FENCE.search(line):
        return None
    for shape, pattern in _SHAPES:
        if pattern.match(line):
            return shape
    return None


def columns(line: str) -> bool:
    """Whether ``line`` is a row of columns (``ps``, ``df``, ``docker ps`` output)."""
    if _PROSE_END.search(line.rstrip()) or _AFTER_FENCE.search(line):
        return False
    return len(_WIDE_GAP.findall(line.strip())) >= 2


def output_lines(lines: Sequence[str]) -> list[str | None]:
    """Each line's output shape in the context of its neighbours: a run of two or more rows
    of columns is a table; the lines after a diff header are the diff's body."""
    shapes = [line_shape(line) for line in lines]
    cols = [columns(line) for line in lines]
    for k, is_row in enumerate(cols):
        if shapes[k] is None and is_row and (
            (k and cols[k - 1]) or (k + 1 < len(cols) and cols[k + 1])
        ):
            shapes[k] = "table"
    for k in range(1, len(lines)):
        diff_body = shapes[k - 1] == "diff" and _DIFF_BODY.match(lines[k]) and lines[k].strip()
        if shapes[k] is None and diff_body:
            shapes[k] = "diff"
    _shell_output(lines, shapes)
    return shapes


def _shell_output(lines: Sequence[str], shapes: list[str | None]) -> None:
    """A pasted shell session: the lines between two prompt lines ("me@host dir % ls") are
    the first command's output; after the last prompt, lines up to a blank one or the
    user's own sentence ("No Books.plist", "zsh: no matches found: ...")."""
    prompts = [k for k, line in enumerate(lines) if _PROMPT.match(line)]
    for a, b in zip(prompts, [*prompts[1:], len(lines)], strict=False):
        for k in range(a + 1, b):
            if b == len(lines) and (not lines[k].strip() or _AFTER_FENCE.search(lines[k])
                                    or _SENTENCE.search(lines[k])):
                break
            if shapes[k] is None and lines[k].strip():
                shapes[k] = "log"


def block_shape(lines: Sequence[str], shapes: Sequence[str | None]) -> str:
    """What a pasted block is: its most common output shape, else "code" or "text"."""
    found = Counter(s for s in shapes if s is not None)
    if found:
        return found.most_common(1)[0][0]
    body = [line for line in lines if line.strip() and not line.lstrip().startswith(("```", "~~~"))]
    if body and all(line.lstrip().startswith(">") for line in body):
        return "quote"
    return "code"


def excerpt(text: str, shape: str) -> str:
    """``text`` (a pasted block of ``shape``) as one short labelled excerpt: its first two
    lines and its last, each cut to :data:`EXCERPT_CHARS` characters."""
    body = [line for line in text.split("\n")
            if line.strip() and not line.lstrip().startswith(("```", "~~~"))]
    total = len(text.split("\n"))
    label = f"[pasted {shape}, {total:,} lines; excerpt:]"
    if len(body) <= 3:
        return "\n".join([label, *(_cut(line) for line in body)])
    middle = f"[... {len(body) - 3:,} more lines ...]"
    return "\n".join([label, _cut(body[0]), _cut(body[1]), middle, _cut(body[-1])])


def _cut(line: str) -> str:
    line = line.rstrip()
    return line if len(line) <= EXCERPT_CHARS else line[: EXCERPT_CHARS - 3] + "..."
