"""A chat's full-text index: incremental, survives restarts, rebuilt when damaged, deleted
with the chat; the chat file stays the source of truth."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from assistant.conversation import Message, ToolCall
from assistant.sessions import SessionStore
from assistant.sessions.recall_index import MemoryIndexes, RecallIndex
from assistant.sessions.recall_text import match_expression, query_terms


def _search(index: RecallIndex, question: str) -> list[str]:
    return [h.text for h in index.search(match_expression(query_terms(question)), limit=5)]


def _chat(store: SessionStore) -> tuple[str, Path]:
    with store.create() as chat:
        conv = chat.conversation
        conv.append(Message(role="user", content="Our staging server port is 12345."))
        conv.append(Message(role="assistant", content="Noted."))
        for i in range(5):
            conv.append(Message(role="user", content=f"Tell me about volcano {i}."))
            conv.append(Message(role="assistant", content=f"Volcano {i} is tall."))
        chat.recall_index()  # built from the chat file on first use
        return chat.chat_id, store.recall_path(chat.chat_id)


def test_the_index_is_built_beside_the_chat_and_finds_a_fact(store: SessionStore) -> None:
    chat_id, path = _chat(store)
    assert path.is_file() and path.parent.parent == store.root
    with store.open(chat_id) as chat:
        index = chat.recall_index()
        assert index.state == "opened" and index.count == 12
        assert _search(index, "What is the staging server port?")[0] == (
            "Our staging server port is 12345."
        )


def test_appends_are_indexed_incrementally_and_survive_a_restart(store: SessionStore) -> None:
    chat_id, _ = _chat(store)
    with store.open(chat_id) as chat:
        index = chat.recall_index()
        chat.conversation.append(Message(role="user", content="The budget is 4,200 euros."))
        assert index.sync(chat.conversation.messages) == 1  # only the new message
        assert index.sync(chat.conversation.messages) == 0
    with store.open(chat_id) as chat:
        index = chat.recall_index()
        assert index.state == "opened" and index.count == 13
        assert _search(index, "How big is the budget?") == ["The budget is 4,200 euros."]


def test_messages_appended_while_the_index_was_closed_are_added_on_open(
    store: SessionStore,
) -> None:
    chat_id, _ = _chat(store)
    with store.open(chat_id) as chat:  # the index is not opened in this session
        chat.conversation.append(Message(role="user", content="Release date: 14 March 2027."))
    with store.open(chat_id) as chat:
        index = chat.recall_index()
        assert index.count == 13
        assert _search(index, "release date") == ["Release date: 14 March 2027."]


def test_a_damaged_or_foreign_index_is_rebuilt_from_the_chat_file(store: SessionStore) -> None:
    chat_id, path = _chat(store)
    path.write_bytes(b"this is not a database" * 100)
    with store.open(chat_id) as chat:
        index = chat.recall_index()
        assert index.state.startswith("rebuilt")
        assert index.count == 12
        assert _search(index, "staging port")[0] == "Our staging server port is 12345."
    # A recorded count that does not match the rows (a torn write) is damage too.
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value='99' WHERE key='count'")
    conn.commit()
    conn.close()
    with store.open(chat_id) as chat:
        assert chat.recall_index().state.startswith("rebuilt")
    # An index of another chat's messages (ids this chat does not have) is rebuilt.
    other = RecallIndex(path.with_name("other.sqlite"))
    other.sync([Message(role="user", content="someone else's words")])
    other.close()
    path.unlink()
    path.with_name("other.sqlite").rename(path)
    with store.open(chat_id) as chat:
        index = chat.recall_index()
        assert index.state.startswith("rebuilt") and index.count == 12
        assert _search(index, "someone else words") == []


def test_a_missing_index_is_rebuilt_and_the_index_goes_with_the_chat(
    store: SessionStore,
) -> None:
    chat_id, path = _chat(store)
    path.unlink()
    with store.open(chat_id) as chat:
        assert chat.recall_index().count == 12
    assert path.is_file()
    store.delete(chat_id)
    assert not path.exists()
    store.restore(chat_id)  # back from the trash: indexed again when next used
    with store.open(chat_id) as chat:
        assert chat.recall_index().count == 12


def test_tool_outputs_are_passages_with_file_line_numbers() -> None:
    call = ToolCall(name="read_file", arguments={"path": "notes.txt"})
    body = "\n".join(f"line {i}: crate {i} code QX-{i:03d}" for i in range(1, 41))
    messages = [
        Message(role="assistant", tool_calls=[call]),
        Message(role="tool", tool_call_id=call.id, name="read_file",
                content="notes.txt (lines 11-50 of 80)\n" + body),
    ]
    index = RecallIndex(None)
    index.sync(messages)
    hits = index.search(match_expression(query_terms("code QX-007")), limit=3)
    top = hits[0]
    assert "QX-007" in top.text
    # Output line 7 of the body is file line 17: the header said the read began at 11.
    assert top.first <= 17 <= top.last and top.last - top.first < 6
    index.close()


def test_memory_indexes_are_one_per_conversation() -> None:
    from assistant.conversation import Conversation

    indexes = MemoryIndexes()
    a, b = Conversation(), Conversation()
    assert indexes.get(a) is indexes.get(a)
    assert indexes.get(a) is not indexes.get(b)


def test_tool_calls_are_indexed_with_their_target_on_every_passage() -> None:
    """The command run and the file written are facts found only in the call's arguments."""
    index = RecallIndex(None)
    commit = ToolCall(name="run_command",
                      arguments={"command": 'git commit -m "Add refactoring plan"'})
    body = "\n".join(f"line {i}: nothing to see" for i in range(1, 9)) + "\nexport MODE = 'rpc'"
    write = ToolCall(name="write_file", arguments={"path": "src/rpc-mode.ts", "content": body})
    index.sync([
        Message(role="user", content="Save the plan, then write the rpc file."),
        Message(role="assistant", content="Done.", tool_calls=[commit, write]),
    ])
    hits = index.search(match_expression(query_terms("Which commit message was used?")), limit=5)
    assert [(h.role, h.text) for h in hits] == [
        ("call", 'run_command git commit -m "Add refactoring plan"')
    ]
    hits = index.search(match_expression(query_terms("Which mode is exported?")), limit=5)
    assert hits[0].role == "call"
    assert hits[0].text.startswith("write_file src/rpc-mode.ts\n")  # the path on every part
    assert "export MODE" in hits[0].text and hits[0].first > 1


def test_an_index_of_an_older_schema_is_rebuilt_with_exact_line_numbers(
    store: SessionStore,
) -> None:
    """Schema 3 numbers a passage without the blank lines at its edges; an index written by
    an older version is rebuilt from the chat file when opened, not read as it is."""
    chat_id, path = _chat(store)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value='2' WHERE key='schema'")
    conn.commit()
    conn.close()
    with store.open(chat_id) as chat:
        index = chat.recall_index()
        assert index.state == "rebuilt: schema 2, expected 3"
        assert index.count == 12
        assert _search(index, "staging port")[0] == "Our staging server port is 12345."


def test_a_passage_is_numbered_without_its_blank_edge_lines() -> None:
    call = ToolCall(name="run_command", arguments={"command": "cd /srv/app && git commit"})
    messages = [
        Message(role="assistant", tool_calls=[call]),
        Message(role="tool", tool_call_id=call.id, name="run_command",
                content="\n\n[main 94ff0b0] Add the bash executor\n 3 files changed\n\n"),
    ]
    index = RecallIndex(None)
    index.sync(messages)
    hit = index.search(match_expression(["94ff0b0"]), limit=1)[0]
    assert (hit.first, hit.last) == (3, 4)
    assert hit.text.split("\n") == ["[main 94ff0b0] Add the bash executor", " 3 files changed"]
    assert hit.source.startswith("run_command cd /srv/app && git commit")
    index.close()


def test_a_common_command_s_output_is_found_by_what_it_is_about() -> None:
    """``wc -l``'s output says "lines" nowhere; "How many lines ..." finds it."""
    call = ToolCall(name="run_command", arguments={"command": "wc -l src/a.py src/b.py"})
    messages = [
        Message(role="assistant", tool_calls=[call]),
        Message(role="tool", tool_call_id=call.id, name="run_command",
                content="  120 src/a.py\n   80 src/b.py\n  200 total"),
    ]
    index = RecallIndex(None)
    index.sync(messages)
    assert [h.text.split("\n")[0] for h in index.search('"lines"', limit=2)] == ["  120 src/a.py"]
    index.close()
