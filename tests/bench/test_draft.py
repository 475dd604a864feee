"""The draft-model benchmark's prompts and table (bench/draft.py; the measurement itself
loads two real models: `python -m bench --draft MAIN:DRAFT`)."""

from __future__ import annotations

from bench import draft
from bench.workloads import ChatStep, generate


def test_each_prompt_is_a_w1_question_with_the_reads_before_it() -> None:
    prompts = draft.w1_prompts(2)
    asks = [s.text for s in generate("W1", 0, quick=True).steps if isinstance(s, ChatStep)]
    assert len(prompts) == 2
    for msgs, ask in zip(prompts, asks, strict=False):
        assert msgs[0]["role"] == "system" and msgs[-1] == {"role": "user", "content": ask}
        assert all(m["role"] in ("assistant", "tool") for m in msgs[1:-1])
    assert any(m["role"] == "tool" for m in prompts[0])  # the first question reads files


def test_the_table_gives_each_prompt_and_the_median_speedup() -> None:
    run = {"prompt": 0, "rates": {"plain": [2.0, 4.0], "flat": [3.0, 3.0], "draft": [6.0, 6.0]},
           "tokens": 40, "acceptance": 0.8, "identical": False, "same_tokens": 12}
    result = {"main": "m", "draft": "d", "rounds": 2, "max_tokens": 48, "runs": [run],
              "speedup_vs_plain": 2.0, "speedup_vs_flat": 2.0, "draft_load_s": 1.0,
              "rss_before_draft_mb": 100, "rss_after_draft_mb": 150}
    table = draft.render(result, "cmd")
    assert "| W1 #0 | 40 | 3.00 | 3.00 | 6.00 | 2.00x | 80% | no (first 12) |" in table
    assert "**2.0x**" in table and "100 MB -> 150 MB" in table
