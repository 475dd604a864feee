"""Replay a saved transcript through the context pipeline (``python -m assistant replay``);
the input, output and options: docs/ARCHITECTURE.md ("Replay")."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from assistant.compaction.controller import ContextController, ContextTooLargeError
from assistant.compaction.file_tracking import FileOps, extract_file_ops
from assistant.compaction.request import CallRequest
from assistant.compaction.summary import ExtractiveSummarizer, ModelSummarizer, Summarizer
from assistant.compaction.tokens import CountingBackend, TokenCounter
from assistant.compaction.transcript import TranscriptError, load_transcript
from assistant.config import (
    DEFAULT_SYSTEM_PROMPT,
    MODE_NAMES,
    EffectivePolicy,
    Mode,
    Settings,
    load_settings,
)
from assistant.conversation import Conversation, Message
from assistant.llm.base import GenerationOptions, LLMBackend, LLMError, PromptCounter
from assistant.textsafe import clean_text, terminal_text

EXIT_USAGE = 2


def _load_model(path: str, n_ctx: int) -> LLMBackend:
    module = importlib.import_module("assistant.llm.llama_backend")
    backend: LLMBackend = module.LlamaBackend.load(path, n_ctx=n_ctx)
    return backend


def _model_path(choice: str) -> str:
    if choice != "embedded":
        return choice
    # The model the window uses (the settings'), so a replay answers as the window would.
    registry = importlib.import_module("assistant.llm.registry")
    return str(registry.resolve_model(load_settings().settings.model)[0])


def resolve_policy(mode: Mode, window: int | None, trained: int | None) -> EffectivePolicy:
    """The mode's default policy, its window overridden by ``--window`` when given."""
    settings = Settings(mode=mode)
    policy = settings.policy()
    if window is not None and window > policy.window:
        policy = policy.model_copy(update={"window": window})
    eff = policy.effective(settings.mode, trained)
    if window is not None and window < eff.window:
        eff = policy.effective(settings.mode, window)
    return eff


def _make_backend(args: argparse.Namespace) -> tuple[PromptCounter, bool]:
    """(backend, whether it can write summaries)."""
    wanted = args.window or Settings(mode=args.mode).policy().window
    if args.summarizer == "extractive":
        if args.model or args.ask:
            return _load_model(_model_path(args.model or "embedded"), wanted), False
        return CountingBackend(window=wanted), False
    return _load_model(_model_path(args.summarizer), wanted), True


ANSWER_TOKENS = 64


def ask_questions(
    conv: Conversation,
    questions: Sequence[str],
    *,
    backend: LLMBackend,
    make_controller: Callable[[], ContextController],
    system_prompt: str,
) -> list[dict[str, Any]]:
    """Each question against a copy of the final context, answered at temperature 0."""
    answers: list[dict[str, Any]] = []
    options = GenerationOptions(max_tokens=ANSWER_TOKENS, temperature=0.0)
    for question in questions:
        copy = conv.model_copy(deep=True)
        copy.append(Message(role="user", content=question))
        req = make_controller().prepare(CallRequest(copy, system_prompt))
        text = ""
        tokens = req.prompt_tokens
        try:
            for event in backend.generate(req.messages, options, prompt=req.prompt):
                text += event.delta
                if event.result is not None:
                    text = event.result.text or text
                    tokens = event.result.prompt_tokens
        except LLMError as exc:
            text = f"[error: {exc}]"
        answers.append({"question": question, "reply": text.strip(), "prompt_tokens": tokens})
    return answers


def replay(
    messages: Sequence[Message],
    *,
    backend: PromptCounter,
    policy: EffectivePolicy,
    system_prompt: str,
    use_model: bool,
    out: TextIO,
    as_json: bool = True,
    prompts: bool = False,
    ask: Sequence[str] = (),
) -> dict[str, Any]:
    """Run the pipeline before every assistant message, one line per model call; ``ask``: the
    questions answered against the final context under ``"answers"``."""
    switches = Settings().switches()

    def make_controller() -> ContextController:
        counter = TokenCounter(backend)
        summarizer: Summarizer = (
            ModelSummarizer(backend, counter)
            if use_model and isinstance(backend, LLMBackend)
            else ExtractiveSummarizer(counter)
        )
        return ContextController(
            backend,
            lambda: policy,
            switches=lambda: switches,
            summarizer=summarizer,
            counter=counter,
        )

    controller = make_controller()
    conv = Conversation()
    call = 0
    for msg in messages:
        if msg.role == "assistant":
            call += 1
            req = controller.prepare(CallRequest(conv, system_prompt))
            overflow = req.prompt_tokens >= policy.window
            record = req.compaction
            if overflow:
                try:
                    req = controller.handle_overflow(CallRequest(conv, system_prompt))
                    record = req.compaction
                except (ContextTooLargeError, LLMError):
                    pass
            line: dict[str, Any] = {
                "call": call,
                "prompt_tokens": req.prompt_tokens,
                "window": policy.window,
                "pruned_tokens": req.pruned_tokens,
                "trimmed_tokens": sum(b - a for b, a in req.trimmed.values()),
                "compaction": None
                if record is None
                else {
                    "reason": str(record.reason),
                    "tokens_before": record.tokens_before,
                    "tokens_after": record.tokens_after,
                    "summarizer": record.summarizer,
                    "rejected": list(record.rejected),
                    "seconds": round(record.duration_s, 2),
                },
                "overflow": overflow,
            }
            if prompts:
                line["messages"] = req.messages
            _write(out, line, as_json)
        conv.append(msg.model_copy(deep=True))
    # What the next model call would send: the pipeline applied to the finished transcript.
    upcoming = controller.prepare(CallRequest(conv, system_prompt))
    last = conv.last_compaction
    files = extract_file_ops(
        conv.messages, FileOps(list(last.files_read), list(last.files_modified)) if last else None
    )
    final = {
        "final_context": upcoming.messages,
        "prompt_tokens": upcoming.prompt_tokens,
        "summary": last.summary if last else "",
        "files_read": files.read,
        "files_modified": files.modified,
        "summaries": {kind: sum(rec.summarizer == kind for rec in conv.compactions)
                      for kind in ("model", "extractive", "hook")},
        "rejected": [why for rec in conv.compactions for why in rec.rejected],
    }
    if ask:
        if not isinstance(backend, LLMBackend):
            raise ValueError("--ask needs a model that answers (--model)")
        final["answers"] = ask_questions(
            conv, ask, backend=backend, make_controller=make_controller,
            system_prompt=system_prompt,
        )
    _write(out, final, as_json)
    return final


def _write(out: TextIO, data: dict[str, Any], as_json: bool) -> None:
    """One line of JSON, or the lines a person reads (control characters shown as text)."""
    if as_json:
        line = json.dumps(data, ensure_ascii=False)
        if clean_text(line) != line:  # a lone surrogate: written as JSON's \udXXX escape
            line = json.dumps(data)
        out.write(line + "\n")
        return
    if "call" in data:
        comp = data["compaction"]
        note = (
            f"  compaction ({comp['reason']}): {comp['tokens_before']} -> {comp['tokens_after']}"
            f" by {comp['summarizer']} in {comp['seconds']:.1f} s"
            if comp
            else ""
        )
        pruned = f"  pruned {data['pruned_tokens']}" if data["pruned_tokens"] else ""
        cut = f"  cut {data['trimmed_tokens']}" if data["trimmed_tokens"] else ""
        flag = "  OVERFLOW" if data["overflow"] else ""
        _say(
            out,
            f"call {data['call']:>3}: {data['prompt_tokens']:>6} / {data['window']} tokens"
            f"{pruned}{cut}{note}{flag}\n"
        )
        for msg in data.get("messages", []):
            _say(out, f"    [{msg['role']}] {msg.get('content') or ''}\n")
    else:
        _say(
            out,
            f"final context (the next call): {len(data['final_context'])} messages, "
            f"{data['prompt_tokens']} tokens\n"
        )
        sums = data["summaries"]
        _say(
            out,
            f"summaries: model {sums['model']}, extractive {sums['extractive']}, "
            f"hook {sums['hook']}\n"
        )
        for why in data["rejected"]:
            _say(out, f"  model summary rejected: {why}\n")
        _say(out, f"files read: {', '.join(data['files_read']) or '-'}\n")
        _say(out, f"files modified: {', '.join(data['files_modified']) or '-'}\n")
        if data["summary"]:
            _say(out, "summary:\n" + data["summary"] + "\n")
        for qa in data.get("answers", []):
            _say(out, f"Q: {qa['question']}\nA: {qa['reply']}\n")


def _say(out: TextIO, text: str) -> None:
    """Write ``text`` for a terminal: a transcript's escape sequences shown, not obeyed."""
    out.write(terminal_text(text))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="assistant replay",
        description="Replay an OpenAI-format JSONL transcript through the context pipeline.",
    )
    parser.add_argument("file", type=Path, help="one OpenAI-format message per line")
    parser.add_argument("--mode", choices=MODE_NAMES, default=Mode.LOCAL.value)
    parser.add_argument("--window", type=int, default=None, help="context window override")
    parser.add_argument(
        "--summarizer",
        default="extractive",
        help="'embedded' (the default model), a GGUF path, or 'extractive' (no model)",
    )
    parser.add_argument(
        "--model", default=None,
        help="a registered model name or GGUF path: the tokenizer for --summarizer "
        "extractive and the model that answers --ask (default: the registered default)",
    )
    parser.add_argument(
        "--ask", action="append", default=[], metavar="QUESTION",
        help="ask QUESTION against the final context (repeatable); replies under "
        '"answers" in the final line',
    )
    parser.add_argument("--system-prompt", default=None, help="used when FILE has none")
    parser.add_argument("--json", action="store_true", help="JSON lines output")
    parser.add_argument(
        "--prompts", action="store_true", help="print the full messages of every model call"
    )
    return parser


def main(argv: list[str]) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.window is not None and args.window < 1_024:
        print("error: --window must be at least 1024", file=sys.stderr)
        return EXIT_USAGE
    try:
        system, messages = load_transcript(args.file)
    except TranscriptError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        backend, use_model = _make_backend(args)
    except (LLMError, ImportError, OSError, AttributeError) as exc:
        print(f"error: cannot load the model: {exc}", file=sys.stderr)
        return 1
    try:
        trained = backend.info.trained_context if not isinstance(backend, CountingBackend) else None
        policy = resolve_policy(args.mode, args.window, trained)
        replay(
            messages,
            backend=backend,
            policy=policy,
            system_prompt=system or args.system_prompt or DEFAULT_SYSTEM_PROMPT,
            use_model=use_model,
            out=sys.stdout,
            as_json=args.json,
            prompts=args.prompts,
            ask=[q for q in args.ask if q.strip()],
        )
    finally:
        if isinstance(backend, LLMBackend):
            backend.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
