"""The fast loop's prompt variants (bench/end_variants.py): what each one shows the model,
so the counts in docs/ANSWERS.md are of the prompts they name."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from assistant.compaction.recall import Excerpt, RecallBlock
from assistant.conversation import Conversation, Message
from bench.end_variants import VARIANTS

QUESTION = "How many lines does bash-executor.ts have?"
LISTING = "\n".join(f"{100 + i} src/core/file{i}.ts" for i in range(150))
SOURCE = LISTING + "\n177 src/core/bash-executor.ts\n" + LISTING


def _chat() -> tuple[Conversation, list[dict[str, Any]], Any, Any]:
    conv = Conversation()
    for role, text in [
        ("user", "Count the lines of the new files."),
        ("tool", SOURCE),
        ("assistant", "Done: the counts are above."),
        ("user", "Which one is longest, and the other one?"),
        ("assistant", "agent-session.ts is the longest."),
        ("user", QUESTION),
    ]:
        conv.append(Message(role=role, content=text, tool_call_id="c1" if role == "tool" else None))
    tool_id = conv.messages[1].id
    excerpt = Excerpt(tool_id, "turn 1, bash wc -l", "177 src/core/bash-executor.ts")
    block = RecallBlock("", (excerpt,), 20, conv.messages[-1].id)
    heading = "Earlier in this chat (excerpts that may help with my message below):"
    msgs = [{"role": "system", "content": "You are a test assistant."},
            {"role": "user", "content": "[Context summary]\nThe user counts lines."},
            *[{"role": m.role, "content": m.content} for m in conv.messages[:-1]],
            {"role": "user", "content": f"{heading}\n- (turn 1, bash wc -l) 177 src/core/"
                                        f"bash-executor.ts\n\n{QUESTION}"}]
    req = SimpleNamespace(recall=block)
    ctl = SimpleNamespace(counter=SimpleNamespace(text=lambda t: len(t) // 4 + 1))
    return conv, msgs, req, ctl


def _shape(name: str) -> list[dict[str, Any]]:
    conv, msgs, req, ctl = _chat()
    return VARIANTS[name][1](msgs, req, ctl, conv)


def test_oracle_form_is_plain_passages_then_the_question() -> None:
    last = _shape("oracle-form")[-1]["content"]
    assert last == f"(turn 1, bash wc -l)\n177 src/core/bash-executor.ts\n\n{QUESTION}"
    assert _shape("oracle-bare")[-1]["content"] == f"177 src/core/bash-executor.ts\n\n{QUESTION}"


def test_wider_shows_about_800_characters_around_the_excerpt() -> None:
    last = _shape("wider")[-1]["content"]
    passage = last.split("\n", 1)[1].rsplit("\n\n", 1)[0]
    assert "177 src/core/bash-executor.ts" in passage
    assert 700 <= len(passage) <= 800
    assert passage in SOURCE


def test_focus_keeps_the_latest_exchange_and_drops_the_rest() -> None:
    shown = _shape("focus-0")
    contents = [str(m["content"]) for m in shown]
    assert shown[0]["role"] == "system"
    assert contents[1:3] == ["Which one is longest, and the other one?",
                             "agent-session.ts is the longest."]
    assert not any("[Context summary]" in c or c == SOURCE for c in contents)
    assert QUESTION in contents[-1]
    kept = [str(m["content"]) for m in _shape("focus-800-summary")]
    assert kept[1].startswith("[Context summary]") and SOURCE not in kept


def test_without_excerpts_every_variant_leaves_the_prompt_alone() -> None:
    conv, msgs, _req, ctl = _chat()
    for name in ("oracle-form", "wider", "focus-0", "focus-0+oracle-form"):
        before = [dict(m) for m in msgs]
        assert VARIANTS[name][1]([dict(m) for m in msgs], SimpleNamespace(recall=None),
                                 ctl, conv) == before


def test_hits_says_whether_recall_s_block_holds_each_answer() -> None:
    """``--hits``: retrieval alone, no model: each question through the app's ``prepare``;
    a miss is printed with what came back."""
    from bench.answers import Transcript
    from bench.end_variants import recall_hits
    from bench.questions import Question
    from tests.fakes.scripted import ScriptedBackend

    conv = Conversation()
    conv.append(Message(role="user", content="Our staging server port is 12345."))
    conv.append(Message(role="assistant", content="Noted."))
    for i in range(40):
        conv.append(Message(role="user", content=f"Tell me about the history of tea {i}. " * 8))
        conv.append(Message(role="assistant", content="Tea was first grown in China. " * 15))
    questions = [
        Question("q1", "number", "Which port does the staging server use?", ("12345",), 0),
        Question("q2", "name", "Which volcano did I climb?", ("Etna",), 0),
    ]
    t = Transcript("chat", "workload", "local", "You are a test assistant.",
                   list(conv.messages), questions, 2_048)
    hits, asked, lines = recall_hits(t, conv, len(conv.messages), ScriptedBackend())
    assert (hits, asked) == (1, 2)
    assert lines[0].startswith("  q1 HIT ")
    assert lines[1].startswith("  q2 miss ") and lines[2].strip() == "(nothing)"
    assert lines[-1].startswith("  blocks: 0.50 excerpts")
