"""``offline-assistant --smoke-test PROMPT``: load the model, answer once, print, exit.

``make package-test`` runs it on the built app to prove the bundle finds its model, llama.cpp,
tokenizer data and Qt plugin offline (exit 1 with a message when the model is missing).
It starts Qt, so it sits beside ``app.py``, not in ``cli/``."""

from __future__ import annotations

import argparse
import os
import sys

from assistant.config import load_settings
from assistant.conversation import Conversation
from assistant.engine import build_engine
from assistant.llm.base import CancelToken, ModelLoadError


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="offline-assistant --smoke-test")
    parser.add_argument("--smoke-test", required=True, metavar="PROMPT")
    parser.add_argument("--model", help="registered model name or GGUF path")
    args, _ = parser.parse_known_args(argv)
    settings = load_settings().settings
    if args.model:
        settings.model = args.model
    from assistant.llm.llama_backend import LlamaBackend

    try:
        backend = LlamaBackend.load(settings.model, n_ctx=4096, threads=settings.sampling.threads)
    except ModelLoadError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    # Start Qt too: a frozen build must find its platform plugin (offscreen in tests).
    from assistant.ui.platform_check import qt_platform_name

    print(f"qt platform: {qt_platform_name()}", file=sys.stderr)
    settings.tool_approval = "ask"
    settings.sampling.max_reply_tokens = 64
    engine = build_engine(backend, lambda: settings, None, lambda ev: None)
    conv = Conversation()
    engine.agent.chat(conv, args.smoke_test, CancelToken())
    backend.close()
    reply = [m.content for m in conv.messages if m.role == "assistant"]
    if not reply or not reply[-1].strip():
        print("error: the model produced no reply", file=sys.stderr)
        return 1
    print(reply[-1].strip())
    return 0
