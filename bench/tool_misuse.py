"""Tool calls where no file is involved (issue 45): a model offered the tools is asked a
general question ("What is the capital of France?") again and again at the app's sampling
settings, and each first reply is checked for a tool call.

The model is loaded once, as the app loads it, and its sampler's random state runs on from
reply to reply as in a chat. The system prompt is the app's (with :data:`~assistant.engine.
TOOL_NOTE` after it, as ``build_engine`` gives it to a model offered the tools, or without it
with ``--without-note``). Each reply is cut at ``--max-tokens``: the first few tokens show
whether it opens a call (``<tool_call>``, a ``"name"`` key, or a parsed call).

``python -m bench.tool_misuse --model qwen2.5-coder-1.5b-instruct --tries 8`` (about 1-2
minutes a try on a loaded 2-core machine, most of it the first prompt).
"""

from __future__ import annotations

import argparse
import time

from assistant.config import load_settings
from assistant.engine import with_tool_note
from assistant.llm.base import GenerationOptions
from assistant.llm.llama_backend import LlamaBackend
from assistant.llm.registry import registered_context
from assistant.llm.toolcall import parse_tool_calls
from assistant.tools.registry import ToolRegistry

QUESTION = "What is the capital of France?"


def opens_a_call(text: str) -> bool:
    return bool(parse_tool_calls(text).calls) or "<tool_call>" in text or '"name"' in text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tool_misuse")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-instruct")
    parser.add_argument("--tries", type=int, default=8)
    parser.add_argument("--question", default=QUESTION)
    parser.add_argument("--max-tokens", type=int, default=10)
    parser.add_argument("--without-note", action="store_true",
                        help="the system prompt alone, without TOOL_NOTE")
    args = parser.parse_args(argv)
    base = load_settings().settings
    settings = base if args.without_note else with_tool_note(lambda: base)()
    window = settings.effective_policy(registered_context(args.model)).window
    backend = LlamaBackend.load(args.model, n_ctx=window, threads=settings.sampling.threads)
    tools = ToolRegistry.default().schemas()
    messages = [{"role": "system", "content": settings.system_prompt},
                {"role": "user", "content": args.question}]
    options = GenerationOptions(max_tokens=args.max_tokens,
                                temperature=settings.sampling.temperature,
                                top_p=settings.sampling.top_p)
    calls = 0
    try:
        for n in range(1, args.tries + 1):
            started = time.perf_counter()
            text = "".join(e.delta for e in backend.generate(messages, options, tools=tools))
            call = opens_a_call(text)
            calls += call
            print(f"{n}: {'tool call' if call else 'answer'} ({time.perf_counter() - started:.0f} "
                  f"s): {text!r}", flush=True)
    finally:
        backend.close()
    note = "without TOOL_NOTE" if args.without_note else "with TOOL_NOTE"
    print(f"{args.model}, {note}: a tool call {calls} times in {args.tries} "
          f"(temperature {settings.sampling.temperature})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
