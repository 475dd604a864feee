"""Tables of the answer benchmark (:mod:`bench.answers`): counts and the ratio to oracle (i).

Rows are added up per transcript, model, variant and ask point; the ratio is the answers
accepted through the app's prompt over the answers oracle (i) (the source passage alone)
got on the same questions with the same model. Oracle (ii) (the whole uncompacted history)
counts only the questions whose history fit the model's window ("n/a" when none did).
:func:`versus_rolling` sets the app's best variant per transcript and model beside the
rolling window (the desktop apps' baseline), as a ratio and as accepted counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from .answers import Asked, TranscriptRun
from .rolling import ROLLING_WINDOW

POINT_ORDER = {"0": 0, "1": 1, "2": 2, "end": 3}


@dataclass
class Tally:
    asked: int = 0
    correct: int = 0
    oracle_i: int = 0
    oracle_ii: int = 0
    oracle_ii_asked: int = 0

    def add(self, row: Asked) -> None:
        self.asked += 1
        self.correct += row.correct
        self.oracle_i += row.oracle_i
        if row.oracle_ii is not None:
            self.oracle_ii_asked += 1
            self.oracle_ii += row.oracle_ii

    @property
    def ratio(self) -> float | None:
        return self.correct / self.oracle_i if self.oracle_i else None


def run_to_json(run: TranscriptRun) -> dict[str, Any]:
    return asdict(run)


def run_from_json(data: dict[str, Any]) -> TranscriptRun:
    rows = [Asked(**r) for r in data.get("rows", [])]
    fields = {k: v for k, v in data.items() if k != "rows"}
    return TranscriptRun(**fields, rows=rows)


def _point_name(label: str, compactions: int) -> str:
    if label == "end":
        return f"end ({'3+' if compactions >= 3 else compactions})"
    return f"after {label}"


def _ratio(t: Tally) -> str:
    return "n/a" if t.ratio is None else f"{t.ratio:.2f}"


def _ii(t: Tally) -> str:
    return f"{t.oracle_ii}/{t.oracle_ii_asked}" if t.oracle_ii_asked else "n/a"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def overall(runs: Sequence[TranscriptRun]) -> dict[tuple[str, str, str], Tally]:
    """(model, variant, "before"/"after") -> tally: before any compaction, after one or more."""
    out: dict[tuple[str, str, str], Tally] = {}
    for run in runs:
        for row in run.rows:
            when = "after" if row.compactions > 0 else "before"
            out.setdefault((row.model, row.strategy, when), Tally()).add(row)
    return out


def _fraction(a: int, b: int) -> str:
    return f"{a / b:.2f}" if b else "n/a"


def versus_rolling(runs: Sequence[TranscriptRun]) -> list[list[str]]:
    """Per transcript and model: the app's best variant (most answers accepted; the first
    run on a tie) against the rolling window, over every ask and over the asks after one or
    more compactions: accepted counts, app / rolling, and each one's ratio to oracle (i)."""
    out: list[list[str]] = []
    for run in runs:
        for when, keep in (("all", lambda r: True), ("after", lambda r: r.compactions > 0)):
            tallies: dict[str, Tally] = {}
            for row in run.rows:
                if keep(row):
                    tallies.setdefault(row.strategy, Tally()).add(row)
            rolling = tallies.pop(ROLLING_WINDOW, None)
            if rolling is None or not tallies:
                continue
            name, best = max(tallies.items(), key=lambda kv: kv[1].correct)
            out.append([
                run.source, run.model, when, name, f"{best.correct}/{best.asked}",
                f"{rolling.correct}/{rolling.asked}", _fraction(best.correct, rolling.correct),
                f"{best.oracle_i}/{best.asked}", _ratio(best), _ratio(rolling),
            ])
    return out


def section(runs: Sequence[TranscriptRun], *, heading: str = "##") -> str:
    """The markdown section: per model and variant, then per transcript and ask point."""
    if not runs:
        return ""
    parts = [f"{heading} Answers: what the model can still answer"]
    oracle_rows = []
    for run in runs:
        firsts: dict[str, bool] = {}
        for row in run.rows:
            firsts.setdefault(row.question, row.oracle_i)
        oracle_rows.append([run.source, run.model, str(run.questions),
                            f"{sum(firsts.values())}/{len(firsts)}",
                            ", ".join(f"{k}: {v}" for k, v in run.compactions.items())])
    parts.append(
        "Oracle (i) per transcript and model (the source passage alone with each question) "
        "and the compactions each variant made over the whole replay:"
    )
    parts.append(_table(["transcript", "model", "questions", "oracle (i)", "compactions"],
                        oracle_rows))
    totals = overall(runs)
    rows = [
        [model, variant, when, f"{t.correct}/{t.asked}", f"{t.oracle_i}/{t.asked}", _ratio(t),
         _ii(t)]
        for (model, variant, when), t in sorted(totals.items())
    ]
    parts.append("All transcripts together (every ask, \"after\": one or more compactions "
                 "before the question):")
    parts.append(_table(["model", "variant", "compactions", "answered", "oracle (i)",
                         "ratio to (i)", "oracle (ii)"], rows))
    against = versus_rolling(runs)
    if against:
        parts.append("The app's best variant against the rolling window (the newest messages "
                     "that fit the same window and reserve; asks \"after\": one or more "
                     "compactions before the question):")
        parts.append(_table(["transcript", "model", "asks", "app's best", "app", "rolling",
                             "app / rolling", "oracle (i)", "app / (i)", "rolling / (i)"],
                            against))
    detail: dict[tuple[str, str, str, str, int], Tally] = {}
    for run in runs:
        for row in run.rows:
            key = (run.source, row.model, row.strategy, row.point, row.compactions)
            detail.setdefault(key, Tally()).add(row)
    ordered = sorted(detail.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2],
                                                     POINT_ORDER.get(kv[0][3], 9)))
    rows = [
        [src, model, variant, _point_name(point, n), f"{t.correct}/{t.asked}",
         f"{t.oracle_i}/{t.asked}", _ratio(t), _ii(t)]
        for (src, model, variant, point, n), t in ordered
    ]
    parts.append("Per transcript and ask point:")
    parts.append(_table(["transcript", "model", "variant", "point", "answered", "oracle (i)",
                         "ratio to (i)", "oracle (ii)"], rows))
    return "\n\n".join(parts)
