"""Fuzzing hostile model replies and tool calls (issue 28): ``python -m bench.fuzz_replies``.

Every case is a reply a model (or a server speaking for one) could write, or a tool call a
chat file or an import could hold: arguments nested up to 100,000 levels deep, replies up
to 100 MB (a few very large cases, not thousands), unclosed tool-call tags and fences, bad
JSON, NULs, lone surrogates (what invalid UTF-8 decodes to), and random damage to valid
calls. Each one goes through everything that reads it:

1. the tool-call parser (:func:`assistant.llm.toolcall.parse_tool_calls`) and the text
   protocol's call block (:func:`assistant.llm.template.format_call_block`);
2. the agent loop with the scripted backend (its tokenizer as strict about UTF-8 as
   llama.cpp's): the reply answers a user message, its calls run (writes and commands are
   denied: no approver), and a second turn renders the whole chat again;
3. the chat template, ChatML and a native-tools template, over the chat as the model sees
   it (with the import path, :meth:`Message.from_openai`, for native calls);
4. the session store: the chat is saved, reopened, compared message by message, and
   continued.

A *crash* is any exception out of these (a ``ValueError`` from ``Message.from_openai`` is
its documented answer to a bad message, not a crash); a *loss* is a reopened chat that
differs from what was saved (a high and a low surrogate written side by side count as the
one character JSON reads them back as). The summary line gives both; the exit status is 1
when either is above 0.

    python -m bench.fuzz_replies --cases 10000 --seed 1
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

#: Nesting depths tried (the issue's probes failed from 5,000).
DEPTHS = (17, 300, 1_000, 5_000, 20_000, 100_000)
#: Sizes of the very large cases, in characters.
HUGE_SIZES = (10_000_000, 50_000_000, 100_000_000)
TOOLS = ("read_file", "list_dir", "find_files", "grep", "write_file", "edit_file", "run_command")

_NATIVE_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}"
    "{% if m.get('tool_calls') %}{% for c in m['tool_calls'] %}<tool_call>"
    "{{ c['function']['name'] }} {{ c['function']['arguments'] }}</tool_call>"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if tools %}{{ tools | length }} tools{% endif %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@dataclass
class Case:
    """One hostile input: a reply (as the model wrote it), or native calls (as a server or
    an import delivers them), and the user message it answers."""

    kind: str
    reply: str
    user: str = "Go on."
    #: OpenAI-format tool calls delivered beside the reply (the server / import path).
    native_calls: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Outcome:
    cases: int = 0
    crashes: list[str] = field(default_factory=list)
    losses: list[str] = field(default_factory=list)
    kinds: Counter[str] = field(default_factory=Counter)
    deepest: int = 0
    largest: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        return (
            f"{self.cases:,} cases ({len(self.kinds)} kinds, nesting up to {self.deepest:,} "
            f"levels, up to {self.largest / 1e6:,.0f} MB): {len(self.crashes)} crashes, "
            f"{len(self.losses)} chats changed by a save and reopen, in {self.seconds:.0f} s"
        )


# -- the cases --------------------------------------------------------------------------------
def _nest(depth: int, rng: random.Random) -> str:
    style = rng.choice(("object", "array", "mixed", "open"))
    if style == "object":
        return '{"a": ' * depth + "1" + "}" * depth
    if style == "array":
        return "[" * depth + "]" * depth
    if style == "mixed":
        return '{"a": [' * (depth // 2) + "0" + "]}" * (depth // 2)
    return "[" * depth  # never closed


def _call(name: str, arguments: str, rng: random.Random) -> str:
    body = '{"name": "' + name + '", "arguments": ' + arguments + "}"
    wrap = rng.choice(("fence", "tag", "function", "bare", "json_fence", "unclosed"))
    if wrap == "fence":
        return "```tool_call\n" + body + "\n```"
    if wrap == "tag":
        return "<tool_call>" + body + "</tool_call>"
    if wrap == "function":
        return f"<function={name}>" + arguments + "</function>"
    if wrap == "bare":
        return "Sure. " + body + " Done."
    if wrap == "json_fence":
        return "```json\n" + body + "\n```"
    return rng.choice(("```tool_call\n", "<tool_call>", f"<function={name}>")) + body[:-1]


def _valid_arguments(name: str, rng: random.Random) -> dict[str, Any]:
    return {
        "read_file": {"path": rng.choice(("a.txt", "../etc/passwd", "\udcff.txt", ""))},
        "list_dir": {"path": "."},
        "find_files": {"pattern": rng.choice(("*.py", "**/" * 50, "["))},
        "grep": {"pattern": rng.choice(("a+", "(a*)*b", "[", "x" * 3_000))},
        "write_file": {"path": "out.txt", "content": "hello"},
        "edit_file": {"path": "a.txt", "old_text": "a", "new_text": "b"},
        "run_command": {"command": "rm -rf /"},
    }[name]


def _mutate(text: str, rng: random.Random) -> str:
    chars = list(text)
    junk = ("\x00", "\ud800", "\udcff", "{", "}", "[", '"', "\\", "```", "<tool_call>", "\n")
    for _ in range(rng.randint(1, 8)):
        op = rng.random()
        pos = rng.randrange(len(chars) + 1)
        if op < 0.4 or not chars:
            chars.insert(pos, rng.choice(junk))
        elif op < 0.7:
            del chars[min(pos, len(chars) - 1)]
        else:
            chars[min(pos, len(chars) - 1)] = chr(rng.randrange(0x110000))
    return "".join(chars)


def _huge(size: int, rng: random.Random) -> str:
    """A reply of ``size`` characters. Words stay short (a newline every 1,000 brackets
    is still JSON whitespace): the scripted backend streams word by word, and a model
    stops at its reply limit, so a one-word reply would test the fake, not the app."""
    shape = rng.choice(("prose", "brackets", "call"))
    if shape == "prose":
        return ("All work and no play. " * (size // 22 + 1))[:size]
    if shape == "brackets":
        half = size // 2
        return ("[" * 999 + "\n") * (half // 1_000) + ("]" * 999 + "\n") * (half // 1_000)
    content = "x " * ((size - 80) // 2)
    return '```tool_call\n{"name": "write_file", "arguments": {"path": "a", "content": "' + (
        content + '"}}\n```'
    )


def make_case(rng: random.Random, index: int, huge: int | None = None) -> Case:
    """Case ``index`` from ``rng``; ``huge``: a reply (and user message) of that size."""
    if huge is not None:
        text = _huge(huge, rng)
        return Case("huge", text, user=text if rng.random() < 0.5 else "Go on.")
    name = rng.choice((*TOOLS, "no_such_tool", ""))
    kind = rng.choice(
        ("deep", "deep_string", "malformed", "mutated", "native", "native_deep", "text")
    )
    if kind == "deep":
        return Case(kind, _call(name, _nest(rng.choice(DEPTHS), rng), rng))
    if kind == "deep_string":  # arguments as a JSON string holding deep JSON
        return Case(kind, _call(name, json.dumps(_nest(rng.choice(DEPTHS), rng)), rng))
    if kind == "malformed":
        bad = rng.choice(
            (
                '{"path": "a.txt"',
                '{"path": "\\u12"}',
                '{"path": "\x00"}',
                '{"path": "\\ud800"}',
                "{'path': 'a'}",
                "null",
                '"just a string"',
                "[1, 2, 3]",
                "{" * 50,
                "}" * 50,
                '{"a": 1}}}}',
                "",
            )
        )
        return Case(kind, _call(name, bad, rng) + rng.choice(("", "```", "</tool_call>")))
    if kind == "mutated":
        valid = json.dumps(_valid_arguments(rng.choice(TOOLS), rng))
        return Case(kind, _mutate(_call(name or "read_file", valid, rng), rng))
    if kind in ("native", "native_deep"):
        args: Any
        if kind == "native_deep":
            depth = rng.choice(DEPTHS)
            args = _nest(depth, rng) if rng.random() < 0.7 else _nested_value(min(depth, 900))
        else:
            args = rng.choice(
                (json.dumps(_valid_arguments(rng.choice(TOOLS), rng)), "{", None, 7, [1], "")
            )
        fn = {"name": name, "arguments": args}
        call = {"id": f"c{index}", "type": "function", "function": fn}
        return Case(kind, rng.choice(("", "Calling it.", "\x00\ud800")), native_calls=[call])
    noise = "".join(chr(rng.randrange(0x110000)) for _ in range(rng.randint(0, 200)))
    return Case("text", noise, user=_mutate("Read a.txt please", rng))


def _nested_value(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


def cases(seed: int, count: int, huge: int) -> Iterator[Case]:
    """``count`` cases from ``seed``; the last ``huge`` of them are the very large ones
    (sizes from :data:`HUGE_SIZES`, in turn)."""
    rng = random.Random(seed)
    for i in range(count - huge):
        yield make_case(rng, i)
    for i in range(huge):
        yield make_case(rng, count - huge + i, HUGE_SIZES[i % len(HUGE_SIZES)])


# -- running one case ---------------------------------------------------------------------
class Runner:
    """Runs cases against one store and workspace (the agent is fresh for every case)."""

    def __init__(self, home: Path) -> None:
        from assistant.config import Settings
        from assistant.llm.template import ChatTemplate
        from assistant.sessions import SessionStore
        from assistant.tools.registry import ToolRegistry

        self.workspace = home / "workspace"
        self.workspace.mkdir(parents=True, exist_ok=True)
        (self.workspace / "a.txt").write_text("alpha\nbeta\n", encoding="utf-8")
        self.settings = Settings(workspace=str(self.workspace))
        self.store = SessionStore()
        self.chatml = ChatTemplate(None)
        self.native = ChatTemplate(_NATIVE_TEMPLATE, origin="fuzz")
        self.backend = _strict_backend()
        self.registry = ToolRegistry.default()

    def close(self) -> None:
        self.store.close_all()

    def run(self, case: Case) -> str | None:
        """None when every stage held; else what was lost (crashes raise)."""
        from assistant.conversation import Message
        from assistant.llm.template import format_call_block
        from assistant.llm.toolcall import parse_tool_calls

        parsed = parse_tool_calls(case.reply)
        for p in parsed.calls:
            format_call_block(p.call.name, p.call.arguments_json())
        with self.store.create() as chat:
            agent = self._agent(case.reply)
            agent.chat(chat.conversation, case.user, None)
            if case.native_calls:
                data = {"role": "assistant", "content": case.reply, "tool_calls": case.native_calls}
                try:
                    msg = Message.from_openai(data)
                except ValueError:
                    pass  # refused with a reason: what an import reports
                else:
                    chat.conversation.append(msg)
            agent.chat(chat.conversation, "And now?", None)  # renders everything again
            shown = [m.to_openai() for m in chat.conversation.messages]
            self.chatml.render(shown)
            self.native.render(shown, agent.registry.schemas())
            saved = [_json_equal(m.model_dump()) for m in chat.conversation.messages]
            chat_id = chat.chat_id
        with self.store.open(chat_id) as chat:
            again = [_json_equal(m.model_dump()) for m in chat.conversation.messages]
            if again != saved:
                return f"{case.kind}: the reopened chat differs from the saved one"
            self._agent("Still here.").chat(chat.conversation, "Still there?", None)
        self.store.delete(chat_id)
        return None

    def _agent(self, reply: str) -> Any:
        """A fresh agent and controller on the shared backend, whose next replies are
        ``reply`` then "Done."."""
        from assistant.agent.loop import Agent
        from assistant.compaction.controller import ContextController

        backend = self.backend
        backend.replies = [reply, "Done."]
        backend.calls.clear()
        backend.reset_kv_cache()
        settings = self.settings
        controller = ContextController(
            backend, lambda: settings.effective_policy(backend.info.trained_context)
        )
        agent = Agent(backend, controller, self.registry, lambda: settings, None, _drop)
        controller.on_event = agent.on_context_event
        return agent


def _strict_backend() -> Any:
    """The scripted backend, encoding text as llama.cpp's tokenizer does (strict UTF-8: a
    lone surrogate that reaches it raises, as it would with a real model)."""
    from tests.fakes.scripted import ScriptedBackend

    class StrictBackend(ScriptedBackend):
        # Every prompt and every text the app counts (the fake's own tokenizing of the
        # reply it streams stands for the model's output, which is never surrogates).
        def render_prompt(
            self, messages: Any, tools: Sequence[dict[str, Any]] | None = None
        ) -> str:
            text: str = super().render_prompt(messages, tools)
            text.encode("utf-8")
            return text

        def count(self, text: str) -> int:
            text.encode("utf-8")
            return int(super().count(text))

    return StrictBackend()


def _json_equal(value: Any) -> Any:
    """``value`` as JSON reads it back: a high and a low surrogate side by side (two
    separate escapes, as a server may send them) are one character in JSON."""
    if isinstance(value, str):
        if value.isascii():
            return value
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")
    if isinstance(value, dict):
        return {_json_equal(k): _json_equal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_equal(v) for v in value]
    return value


def _drop(_event: object) -> None:
    pass


def _no_fsync(_fd: Any) -> None:
    pass


def run(
    seed: int,
    count: int,
    huge: int,
    home: Path,
    progress: Callable[[str], None] | None = None,
) -> Outcome:
    """Run ``count`` cases (``huge`` of them very large) and count crashes and losses."""
    out = Outcome()
    runner = Runner(home)
    start = time.perf_counter()
    try:
        for i, case in enumerate(cases(seed, count, huge)):
            out.cases += 1
            out.kinds[case.kind] += 1
            out.largest = max(out.largest, len(case.reply), len(case.user))
            out.deepest = max(out.deepest, _depth_hint(case))
            try:
                lost = runner.run(case)
            except Exception as exc:  # the point: nothing may escape
                detail = "".join(traceback.format_exception_only(exc)).strip()
                out.crashes.append(f"case {i} ({case.kind}): {detail[:300]}")
            else:
                if lost is not None:
                    out.losses.append(f"case {i}: {lost}")
            if progress is not None and (i + 1) % 500 == 0:
                progress(f"{i + 1:,} cases, {len(out.crashes)} crashes")
    finally:
        runner.close()
        out.seconds = time.perf_counter() - start
    return out


def _depth_hint(case: Case) -> int:
    from assistant.jsonlimits import text_depth

    texts = [case.reply[:1_000_000]]
    texts += [str(c["function"].get("arguments"))[:1_000_000] for c in case.native_calls]
    deepest = max(text_depth(t) for t in texts)
    return deepest


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fuzz_replies", description=__doc__)
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--huge", type=int, default=3, help="very large cases (10-100 MB)")
    args = parser.parse_args(argv)
    import os

    # The chats are saved and reopened through the real store, but without waiting for
    # the disk: durability has its own crash-state test, and fsyncs would be most of the
    # time here.
    with (
        mock.patch("os.fsync", _no_fsync),
        tempfile.TemporaryDirectory(prefix="fuzz-replies-") as tmp,
    ):
        os.environ["ASSISTANT_HOME"] = str(Path(tmp) / "home")
        out = run(args.seed, args.cases, min(args.huge, args.cases), Path(tmp),
                  lambda line: print(line, file=sys.stderr, flush=True))
    for line in [*out.crashes[:20], *out.losses[:20]]:
        print(line)
    print(out.summary())
    return 1 if out.crashes or out.losses else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
