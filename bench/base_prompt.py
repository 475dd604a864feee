"""Which prompt form a base (not instruction-tuned) model answers in: oracle (i) by form.

For one workload's questions (W2 by default), oracle (i) of the answer benchmark (the
source passage alone, then the question: :func:`bench.answers.oracle_passage_messages`)
is asked of a model in several prompt forms, at temperature 0, and scored the way the
answer benchmark scores replies (:func:`bench.questions.accepted`):

* ``chat``: the GGUF's chat template (ChatML when it has none), through ``generate``
  (the app's prompt before :mod:`assistant.llm.transcript`);
* ``app``: what the app does now (the automatic prompt form, through ``generate``);
* ``plain``: ``PASSAGE\\n\\nQuestion: Q\\nAnswer:`` stopping at the end of the line;
* ``fewshot``: the same after two short, generic worked examples (not from the benchmark);
* ``turns``: Gemma's turn markers (``<start_of_turn>user`` ... ``<start_of_turn>model``)
  without a system part (the gemma-3-270m GGUF has no chat template of its own);
* ``transcript``: what the app shows a base model (:mod:`assistant.llm.transcript`): the
  system prompt, two worked ``User:``/``Assistant:`` exchanges, ``User: ...`` lines and
  ``Assistant:`` to continue, stopping at the next ``User:`` line;
* ``bare``: the transcript form without the worked exchanges.

Run ``python -m bench.base_prompt --model gemma-3-270m --threads 1`` (``--form`` to pick
forms, repeatable). It prints one line per form: accepted / asked, and each reply.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

from assistant.llm.base import GenerationOptions
from assistant.llm.llama_backend import LlamaBackend
from assistant.llm.template import ChatTemplate
from assistant.llm.transcript import (
    TRANSCRIPT_STOPS,
    TRANSCRIPT_TEMPLATE,
    WORKED_EXAMPLES,
    TranscriptTemplate,
)

from .answers import ANSWER_TOKENS, Transcript, oracle_passage_messages, workload_transcript
from .questions import Question, accepted, passage
from .workloads import generate

#: The few-shot form's examples: the transcript form's worked exchanges as (passage,
#: question, answer), so both forms teach with the same generic facts.
FEW_SHOT = tuple(
    (*said.split("\n\n", 1), answer) for said, answer in WORKED_EXAMPLES
)

Form = Callable[[LlamaBackend, Transcript, Question], str]


def _complete(backend: LlamaBackend, text: str, stop: tuple[str, ...]) -> str:
    """The model's continuation of ``text`` at temperature 0, up to ``stop``."""
    options = GenerationOptions(max_tokens=ANSWER_TOKENS, temperature=0.0, stop=stop)
    out = ""
    for event in backend.generate_tokens(backend.tokenize(text), options):
        if event.result is not None:
            out = event.result.text
    return out.strip()


def _bos(backend: LlamaBackend) -> str:
    return backend.template.bos_token


def _through_app(backend: LlamaBackend, t: Transcript, q: Question) -> str:
    messages = oracle_passage_messages(t, q)
    options = GenerationOptions(max_tokens=ANSWER_TOKENS, temperature=0.0)
    out = ""
    for event in backend.generate(messages, options):
        if event.result is not None:
            out = event.result.text
    return out.strip()


def form_chat(backend: LlamaBackend, t: Transcript, q: Question) -> str:
    """The model's chat template, whatever the automatic choice."""
    backend.use_prompt_form("chat")
    return _through_app(backend, t, q)


def form_app(backend: LlamaBackend, t: Transcript, q: Question) -> str:
    """What the app does with this model (its automatic prompt form)."""
    backend.use_prompt_form(None)
    return _through_app(backend, t, q)


def form_plain(backend: LlamaBackend, t: Transcript, q: Question) -> str:
    text = f"{_bos(backend)}{passage(t.messages, q)}\n\nQuestion: {q.question}\nAnswer:"
    return _complete(backend, text, ("\n",))


def form_fewshot(backend: LlamaBackend, t: Transcript, q: Question) -> str:
    shots = "".join(f"{p}\n\nQuestion: {qq}\nAnswer: {a}\n\n" for p, qq, a in FEW_SHOT)
    text = (f"{_bos(backend)}{shots}{passage(t.messages, q)}\n\n"
            f"Question: {q.question}\nAnswer:")
    return _complete(backend, text, ("\n",))


def form_turns(backend: LlamaBackend, t: Transcript, q: Question) -> str:
    """Gemma's turn markers, user turn only (the gemma-3-270m GGUF carries no chat template:
    the app's chat form for it was the ChatML fallback)."""
    msg = f"{passage(t.messages, q)}\n\n{q.question}"
    text = (f"{_bos(backend)}<start_of_turn>user\n{msg}<end_of_turn>\n"
            "<start_of_turn>model\n")
    return _complete(backend, text, ("<end_of_turn>",))


def form_transcript(backend: LlamaBackend, t: Transcript, q: Question) -> str:
    """The app's transcript form (:class:`TranscriptTemplate`: the worked examples first)."""
    template = TranscriptTemplate(bos_token=_bos(backend))
    text = template.render(oracle_passage_messages(t, q))
    return _complete(backend, text, template.stops)


def form_bare(backend: LlamaBackend, t: Transcript, q: Question) -> str:
    """The transcript form without the worked examples."""
    template = ChatTemplate(TRANSCRIPT_TEMPLATE, bos_token=_bos(backend))
    text = template.render(oracle_passage_messages(t, q))
    return _complete(backend, text, TRANSCRIPT_STOPS)


FORMS: dict[str, Form] = {
    "chat": form_chat,
    "app": form_app,
    "plain": form_plain,
    "fewshot": form_fewshot,
    "turns": form_turns,
    "transcript": form_transcript,
    "bare": form_bare,
}


def score(backend: LlamaBackend, t: Transcript, form: str) -> list[tuple[bool, str]]:
    """(accepted, reply) for each of ``t``'s questions asked in ``form``."""
    replies: list[tuple[bool, str]] = []
    for q in t.questions:
        reply = FORMS[form](backend, t, q)
        replies.append((accepted(reply, q.answers), reply))
    return replies


def run(model: str, forms: list[str], workload: str, questions: int, threads: int) -> None:
    t = workload_transcript(generate(workload, 0), limit=questions)
    backend = LlamaBackend.load(model, n_ctx=2048, threads=threads)
    try:
        for name in forms:
            start = time.perf_counter()
            replies = score(backend, t, name)
            got = sum(ok for ok, _ in replies)
            print(f"{model} {workload} form={name}: oracle (i) {got}/{len(replies)} "
                  f"({time.perf_counter() - start:.0f} s)", flush=True)
            for (ok, reply), q in zip(replies, t.questions, strict=True):
                print(f"  {'+' if ok else '-'} {q.question!r} -> {reply[:90]!r} "
                      f"(want {q.answers[0]!r})", flush=True)
    finally:
        backend.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.base_prompt", description=__doc__)
    p.add_argument("--model", default="gemma-3-270m")
    p.add_argument("--form", action="append", choices=sorted(FORMS))
    p.add_argument("--workload", default="W2")
    p.add_argument("--questions", type=int, default=12)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    run(args.model, args.form or list(FORMS), args.workload, args.questions, args.threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())



