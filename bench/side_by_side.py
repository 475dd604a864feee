"""The app beside the engine users would pick instead (``python -m bench --side-by-side``).

The same workloads, one session, three ways, one after the other (never at the same time):

* **embedded**: the app's own engine (llama.cpp in this process) with the app's context
  policy (:mod:`assistant.compaction`), as every benchmark run does;
* **app -> llama-server**: the same policy driving llama.cpp's own ``llama-server`` through
  the app's server engine (:class:`~assistant.llm.openai_backend.ServerBackend`);
* **front cut -> llama-server --cache-reuse**: what chat front ends on ``llama-server``
  do (Open WebUI, LM Studio's rolling window, scripts): the whole history every time, the
  oldest messages cut when it no longer fits (:class:`~bench.strategies.FrontCut`), with
  the server's prompt cache and ``--cache-reuse`` keeping what it can of the cached text.

Each reports, per workload, time to first token, prompt tokens evaluated and evaluated again
(:func:`bench.metrics.summarize`; the summaries the policy writes are evaluated too and
shown apart), the peak resident memory of the process that holds the model (this process
for the embedded engine, the server process for the others; both read from ``VmHWM`` after
resetting it) and, last, the answers to the answer benchmark's questions asked at the end
of the workload's chat through the same context handling on the same engine
(:mod:`bench.end_answers`): what the context policy is worth.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from assistant.agent.controller_api import ContextManager
from assistant.config import Settings
from assistant.llm.base import LLMBackend, LLMError
from assistant.llm.openai_backend import ServerBackend, ServerConfig
from bench.local_server import LocalServer

from .answers import Transcript, app_window_cap, workload_transcript
from .end_answers import EndAnswers, ManagerFactory, ask_at_end, passage_answers
from .metrics import RunRecord, median, summarize
from .runner import RunOptions, run_workload
from .strategies import (
    AnswerStrategy,
    StrategyName,
    answer_controller,
    build_strategy,
    uses_recall,
)
from .workloads import Workload

#: llama-server's --cache-reuse chunk size for the front-cut baseline (tokens; llama.cpp's
#: server docs use 256 as the example value).
CACHE_REUSE = 256
#: The policy the questions are asked through: the code-written record with recall (as the
#: app ships: ``CompactionSwitches.recall``). The workload runs use the app's model
#: summarizer; in the quick windows its summaries are rejected and the app falls back to this
#: record anyway (bench/answer_suite.py), so asking through the model summarizer would cost
#: minutes for the same prompts.
APP_VARIANT: AnswerStrategy = "record+recall"

#: What the front-cut baseline sends llama-server besides temperature 0 and a seed: what the
#: app sent before its own sampler changed (issue 29), kept apart so the baseline never takes
#: the app's settings silently. llama.cpp's top-k and min-p defaults, and the repeat
#: penalty 1.1 over the last 64 tokens that LM Studio and Ollama set by default
#: (llama-server's own default, which a front end sending no sampler gets, is 1.0).
FRONT_END_SAMPLER: dict[str, Any] = {"top_k": 40, "min_p": 0.05, "repeat_penalty": 1.1}

EMBEDDED = "embedded engine, app policy"
SERVER_POLICY = "llama-server, app policy"
SERVER_FRONT_CUT = f"llama-server --cache-reuse {CACHE_REUSE}, front cut"


def embedded_reuse_label(min_chunk: int) -> str:
    """The row of the embedded engine with its chunk reuse on (``--chunk-reuse``)."""
    return f"{EMBEDDED}, chunk reuse {min_chunk}"


def server_reuse_label(min_chunk: int) -> str:
    """The row of the app's policy on llama-server sending ``n_cache_reuse``."""
    return f"{SERVER_POLICY}, n_cache_reuse {min_chunk}"


@dataclass
class EngineRow:
    """One way of running one workload, summarized."""

    workload: str
    label: str
    strategy: str
    ttft_median_s: float | None
    ttft_p95_s: float | None
    #: Prompt tokens the chat calls evaluated, and of them those evaluated again.
    evaluated: int
    reevaluated: int
    reeval_share: float | None
    #: Prompt tokens the summarizer's calls evaluated (the policy only).
    summary_evaluated: int
    peak_rss_mb: float
    overflowed: int
    wall_s: float
    cuts: int
    #: The answer benchmark's questions at the end: answered correctly, asked, not askable.
    answered: int
    asked: int
    not_asked: int = 0
    #: Median prompt of the questions (tokens): how much history they were asked with.
    question_prompt: float | None = None
    #: The same questions with the source passage alone (oracle (i); the embedded row).
    passage_answered: int | None = None
    #: Prompt tokens the read-ahead evaluated before the sends (untimed: while typing).
    ahead_evaluated: int = 0
    #: The workload's replies and the end questions' replies (to compare two rows).
    replies: list[str] = field(default_factory=list, repr=False)
    answer_replies: dict[str, str] = field(default_factory=dict, repr=False)
    #: A read-ahead row: the replies the same as its row without read-ahead, e.g.
    #: "replies 8/8, answers 12/12".
    same_as_without: str = ""


def _hwm_mb(pid: int | str) -> float:
    """Peak resident memory of a process (``VmHWM``), MiB; 0 if it cannot be read."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _reset_hwm(pid: int | str) -> None:
    """Start ``VmHWM`` again from the current resident size (Linux ``clear_refs`` 5)."""
    with contextlib.suppress(OSError), open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


def make_row(label: str, run: RunRecord, answers: EndAnswers, peak_mb: float) -> EngineRow:
    """One table row from a workload run and the answers asked after it."""
    s = summarize(run)
    return EngineRow(
        workload=run.workload, label=label, strategy=run.strategy,
        ttft_median_s=s.ttft_median_s, ttft_p95_s=s.ttft_p95_s,
        evaluated=s.prefill_evaluated, reevaluated=s.reevaluated,
        reeval_share=s.reeval_share, summary_evaluated=s.summary_prefill,
        peak_rss_mb=peak_mb, overflowed=s.overflowed_calls, wall_s=run.wall_s,
        cuts=len(run.compactions), answered=answers.correct, asked=answers.asked,
        not_asked=answers.failed,
        question_prompt=median([float(n) for n in answers.prompt_tokens]),
        ahead_evaluated=run.ahead_evaluated, replies=run.replies,
        answer_replies=dict(answers.replies),
    )


#: The label of a row read ahead (``--read-ahead``) after the row it repeats.
AHEAD = ", read ahead"


def same_replies(without: EngineRow, ahead: EngineRow) -> str:
    """How many of ``ahead``'s workload replies and end answers are ``without``'s."""
    same = sum(a == b for a, b in zip(ahead.replies, without.replies, strict=False))
    answers = sum(ahead.answer_replies.get(k) == v for k, v in without.answer_replies.items())
    return (f"replies {same}/{len(without.replies)}, "
            f"answers {answers}/{len(without.answer_replies)}")


def window_for(wl: Workload) -> int:
    """The window the workload runs in (the mode's, capped as the benchmark caps it)."""
    n_ctx = Settings(mode=wl.mode).policy().window
    return min(n_ctx, wl.window_cap) if wl.window_cap is not None else n_ctx


def manager_factory(strategy: StrategyName, transcript: Transcript) -> ManagerFactory:
    """How questions are prepared for ``strategy``: the app's policy as it ships
    (:data:`APP_VARIANT`), or the front ends' cut."""
    settings = Settings(mode=transcript.mode)

    def make(backend: LLMBackend) -> ContextManager:
        if strategy == "policy":
            return answer_controller(APP_VARIANT, backend, settings)
        return build_strategy(strategy, backend, settings).inner

    return make


def measure(
    backend: LLMBackend, wl: Workload, transcript: Transcript, strategy: StrategyName,
    label: str, options: RunOptions, pid: int | str,
    progress: Callable[[str], None],
) -> EngineRow:
    """The workload, then the questions, on one engine; peak memory of process ``pid``.
    The policy runs as the app ships it: with recall (:data:`APP_VARIANT`) and its prompts
    within ``transcript.window_cap`` (see :func:`policy_transcript`)."""
    _reset_hwm(pid)
    policy = strategy == "policy"
    run_rec = run_workload(backend, wl, strategy, options=options,
                           model_label=f"{backend.info.name} ({label})",
                           recall=policy and uses_recall(APP_VARIANT),
                           window_cap=transcript.window_cap if policy else None)
    answers = (ask_at_end(backend, transcript, manager_factory(strategy, transcript),
                          progress=progress) if transcript.questions else EndAnswers())
    row = make_row(label, run_rec, answers, _hwm_mb(pid))
    progress(f"side by side: {row}")
    return row


def policy_transcript(backend: LLMBackend, transcript: Transcript) -> Transcript:
    """``transcript`` with the window the app keeps its prompts within on ``backend``'s
    model: the quick workload's window, else the measured effective context when it is
    below the window (:func:`bench.answers.app_window_cap`, as the app's engine does). The
    front ends' cut fills the server's whole window instead."""
    return replace(transcript, window_cap=app_window_cap(backend, transcript))


def run(
    model: str,
    workloads: Sequence[Workload],
    options: RunOptions,
    *,
    llama_server: str,
    threads: int = 0,
    log_dir: Path,
    questions: int | None = None,
    progress: Callable[[str], None] | None = None,
    errors: list[str] | None = None,
    wait_s: float = 0.0,
    chunk_reuse: int = 0,
    server_reuse: int | None = None,
    read_ahead: bool = False,
) -> list[EngineRow]:
    """The three runs of each workload on ``model`` (a registry name or a GGUF path), and
    up to ``questions`` of its answer-benchmark questions (None: all) after each. A run
    that fails is left out and described in ``errors``. ``wait_s``: how long the server
    runs wait for the binary to appear (``make llama-server`` building it meanwhile).
    ``chunk_reuse`` (tokens, 0: none) adds a run of the embedded engine with its chunk reuse
    on (the setting, off by default: the cached text after a compaction's record or a
    recall block is moved instead of evaluated again; approximate), and one of the policy
    on llama-server with ``n_cache_reuse`` in its requests (the server only skips removed
    text: it keeps what followed a recall block, not what follows a record), sending
    ``server_reuse`` (None: ``chunk_reuse``; the app sends a smaller size than the embedded
    engine moves, ``performance.server_chunk_reuse_min``).
    ``read_ahead`` repeats the last embedded run and the last policy run on llama-server
    with the read-ahead (``RunOptions.read_ahead``: each message less its last word read
    ahead, untimed, before the timed send).
    The workload runs ask no end-of-run questions of their own (``options.ask_questions``
    is ignored): the answer benchmark's questions are asked instead."""
    errors = errors if errors is not None else []
    from assistant.llm.llama_backend import LlamaBackend
    from assistant.llm.registry import resolve_model

    path, _entry = resolve_model(model)
    threads = threads or min(2, os.cpu_count() or 1)
    say = progress or (lambda _t: None)
    opts = replace(options, ask_questions=False)
    ahead_opts = replace(opts, read_ahead=True)
    rows: list[EngineRow] = []
    deadline = time.monotonic() + wait_s
    for wl in workloads:
        n_ctx = window_for(wl)
        transcript = workload_transcript(wl, limit=questions)
        app_transcript: Transcript | None = None
        say(f"side by side: {wl.name} on {path.name}, window {n_ctx}, "
            f"{len(transcript.questions)} questions: {EMBEDDED} ...")
        try:
            backend = LlamaBackend.load(str(path), n_ctx=n_ctx, threads=threads,
                                        calibrate=True)
            try:
                app_transcript = policy_transcript(backend, transcript)
                rows.append(measure(backend, wl, app_transcript, "policy", EMBEDDED, opts,
                                    "self", say))
                rows[-1].passage_answered = passage_answers(backend, transcript)
                if chunk_reuse and backend.chunk_reuse_blocker is None:
                    backend.reset_kv_cache()
                    backend.tune_chunk_reuse(chunk_reuse)
                    rows.append(measure(backend, wl, app_transcript, "policy",
                                        embedded_reuse_label(chunk_reuse), opts, "self", say))
                if read_ahead:
                    backend.reset_kv_cache()
                    base = rows[-1]
                    rows.append(measure(backend, wl, app_transcript, "policy",
                                        base.label + AHEAD, ahead_opts, "self", say))
                    rows[-1].same_as_without = same_replies(base, rows[-1])
            finally:
                backend.close()
        except LLMError as exc:
            say(f"side by side: {EMBEDDED} failed: {exc}")
            errors.append(f"{wl.name}, {EMBEDDED}: {exc}")

        while not Path(llama_server).is_file() and time.monotonic() < deadline:
            say(f"side by side: waiting for {llama_server} (make llama-server) ...")
            time.sleep(min(30.0, max(0.0, deadline - time.monotonic())))
        # The front ends' way first: beside the embedded run it is the comparison users make.
        reuse = ("--cache-reuse", str(CACHE_REUSE))
        plans: list[tuple[str, StrategyName, tuple[str, ...], int]] = [
            (SERVER_FRONT_CUT, "front-cut", reuse, 0),
            (SERVER_POLICY, "policy", (), 0),
        ]
        if chunk_reuse:
            n_server = server_reuse or chunk_reuse
            plans.append((server_reuse_label(n_server), "policy", (), n_server))
        if read_ahead:
            plans.append((plans[-1][0] + AHEAD, "policy", (), plans[-1][3]))
        for label, strategy, extra, n_reuse in plans:
            say(f"side by side: {wl.name}: {label} ...")
            log = log_dir / f"llama-server-{wl.name}-{strategy}.log"
            try:
                with LocalServer(path, n_ctx=n_ctx, threads=threads, log_path=log,
                                 llama_server_bin=llama_server, extra_args=extra) as server:
                    server_backend = ServerBackend.connect(
                        ServerConfig(server.url, window=n_ctx, timeout_s=600, seed=0,
                                     cache_reuse=n_reuse,
                                     sampler=FRONT_END_SAMPLER if strategy == "front-cut"
                                     else None)
                    )
                    try:
                        assert server.pid is not None
                        asked = transcript
                        if strategy == "policy":
                            app_transcript = app_transcript or policy_transcript(
                                server_backend, transcript)
                            asked = app_transcript
                        ahead = label.endswith(AHEAD)
                        rows.append(measure(server_backend, wl, asked, strategy, label,
                                            ahead_opts if ahead else opts, server.pid, say))
                        without = next((r for r in rows if ahead and r.workload == wl.name
                                        and r.label == label.removesuffix(AHEAD)), None)
                        if without is not None:
                            rows[-1].same_as_without = same_replies(without, rows[-1])
                    finally:
                        server_backend.close()
            except (LLMError, OSError) as exc:  # the rows so far count; the table says so
                say(f"side by side: {label} failed: {exc}")
                errors.append(f"{wl.name}, {label}: {exc} (log: {log})")
    return rows


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _answers(r: EngineRow) -> str:
    if not r.asked:
        return "-"
    text = f"{r.answered}/{r.asked}"
    return text + (f" ({r.not_asked} not askable)" if r.not_asked else "")


def worth(rows: Sequence[EngineRow]) -> list[str]:
    """Per workload, the app's policy against the front cut, both on llama-server."""
    out: list[str] = []
    for wl in dict.fromkeys(r.workload for r in rows):
        by = {r.label: r for r in rows if r.workload == wl}
        policy, cut = by.get(SERVER_POLICY), by.get(SERVER_FRONT_CUT)
        if policy is None or cut is None or not policy.asked or not cut.asked:
            continue
        gain = policy.answered / policy.asked - cut.answered / cut.asked
        ceiling = next((r.passage_answered for r in rows if r.workload == wl
                        and r.passage_answered is not None), None)
        out.append(
            f"- {wl}: on llama-server the app's policy answered {_answers(policy)} "
            f"({gain:+.0%} against the front cut's {_answers(cut)}), first token median "
            f"{_s(policy.ttft_median_s)} s against {_s(cut.ttft_median_s)} s, "
            f"{policy.evaluated + policy.summary_evaluated:,} prompt tokens evaluated "
            f"(summaries included) against {cut.evaluated:,}."
            + (f" Given each question's source passage alone, the model answers "
               f"{ceiling}/{policy.asked}." if ceiling is not None else "")
        )
    return out


def render(rows: Sequence[EngineRow], workloads: Sequence[Workload], command: str,
           errors: Sequence[str] = (), *, when: str = "", model: str = "") -> str:
    """The side-by-side table (markdown), what the policy is worth, and what failed.
    ``when`` (a date) and ``model`` are said when given."""
    windows = ", ".join(
        f"{wl.name} {wl.mode} mode, window {window_for(wl):,}" for wl in workloads
    )
    ran = f"Run {when}" + (f" with {model}" if model else "") + ": " if when else ""
    lines = [
        f"{ran}`{command}` ({windows}): the same model and threads, one run after the other. "
        "Evaluated again: prompt tokens the chat calls had evaluated before (the text after "
        "a cut or a summary that the cache could not keep); the policy's summaries are "
        "evaluated too (own column). Peak memory: the process holding the model (this one, "
        "Python included, or the server). Answers: the answer benchmark's questions "
        "(bench/questions.py) asked at the end of the workload's transcript through the same "
        "context handling on the same engine (bench/end_answers.py).",
        "",
        "| workload | engine and context | TTFT median / p95 s | prompt tokens evaluated | "
        "evaluated again | summary tokens evaluated | read ahead (untimed) | cuts or "
        "compactions | overflowed calls | peak RSS MiB | wall s | answers at the end |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        share = f" ({r.reeval_share:.1%})" if r.reeval_share is not None else ""
        lines.append(
            f"| {r.workload} | {r.label} | {_s(r.ttft_median_s)} / {_s(r.ttft_p95_s)} | "
            f"{r.evaluated:,} | {r.reevaluated:,}{share} | {r.summary_evaluated:,} | "
            f"{r.ahead_evaluated:,} | {r.cuts} | {r.overflowed} | {r.peak_rss_mb:,.0f} | "
            f"{r.wall_s:,.0f} | {_answers(r)} |"
        )
    ahead = [f"- {r.workload}, {r.label}: {r.same_as_without} the same as without it."
             for r in rows if r.same_as_without]
    if ahead:
        lines += ["", "Read ahead: before each timed send, the message less its last word was "
                  "read ahead (untimed: the user is still typing; its tokens are the read ahead "
                  "column). Replies the same as the row without read-ahead:", "", *ahead]
    said = worth(rows)
    if said:
        lines += ["", "What the context policy is worth to a llama-server user:", "", *said]
    lines += [f"\nNot measured: {e}" for e in errors]
    return "\n".join(lines) + "\n"


#: The lines that enclose the table in a report (``--side-by-side --report PATH``).
BEGIN = "<!-- side-by-side: python -m bench --side-by-side --report rewrites this part -->"
END = "<!-- /side-by-side -->"
#: The heading a report without the markers gets, with the table under it.
HEADING = "## Engines side by side (issue 29)"


def insert_section(document: str, table: str) -> str:
    """``document`` with ``table`` between :data:`BEGIN` and :data:`END` (the old table
    there replaced); appended under :data:`HEADING` when the markers are not there."""
    block = f"{BEGIN}\n{table.rstrip()}\n{END}"
    start, end = document.find(BEGIN), document.find(END)
    if 0 <= start < end:
        return document[:start] + block + document[end + len(END):]
    return document.rstrip() + f"\n\n{HEADING}\n\n{block}\n"


def to_json(rows: Sequence[EngineRow]) -> list[dict[str, Any]]:
    return [asdict(r) for r in rows]
