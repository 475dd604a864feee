"""A chat with damaged lines through the session service (both faces): it resumes
read-only, input is refused and given back, /export still works, repair_chat continues in
a repaired copy; settings from the file are checked once the model has loaded (issue 18,
items 4 and 7)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from assistant.config import Settings
from assistant.conversation import Message
from assistant.service.chats import chat_lines
from assistant.sessions.store import SessionStore

from .conftest import Rig

Make = Callable[..., Rig]


def _damaged(store: SessionStore) -> tuple[str, bytes]:
    with store.create(title="Garden") as chat:
        for i in range(3):
            chat.conversation.append(Message(role="user", content=f"q{i}"))
            chat.conversation.append(Message(role="assistant", content=f"a{i}"))
        chat_id = chat.chat_id
    path = store.path_of(chat_id)
    lines = path.read_bytes().split(b"\n")
    lines[2] = lines[2][:-5]
    data = b"\n".join(lines)
    path.write_bytes(data)
    return chat_id, data


def test_resume_read_only_refuse_export_repair(make_rig: Make, tmp_path: Path) -> None:
    store = SessionStore()
    chat_id, data = _damaged(store)
    rig = make_rig("Continued.", store=store)
    service = rig.service
    assert "(damaged: opens read-only" in chat_lines(service.chat.summaries())[0]
    assert service.resume(chat_id)
    assert service.chat.handle is not None and service.chat.handle.read_only is not None
    assert len(service.chat.conversation.messages) == 5  # one damaged line, the rest shown
    assert any("line 3" in n for n in rig.notices("warning"))

    assert service.submit("more please") is False  # the face gives the text back
    refused = rig.notices("warning")[-1]
    assert refused.startswith("Not sent: This chat has damaged lines")
    assert f"python -m assistant repair {chat_id}" in refused
    assert rig.backend.calls == []
    out = tmp_path / "garden.md"
    assert service.submit(f"/export {out}") is True
    assert "a2" in out.read_text(encoding="utf-8")
    assert store.path_of(chat_id).read_bytes() == data

    copy_id = service.repair_chat()
    assert copy_id is not None and service.chat.chat_id == copy_id
    assert service.chat.handle is not None and service.chat.handle.read_only is None
    assert service.submit("more please") is True
    rig.idle()
    assert [m.content for m in service.chat.conversation.messages][-2:] == [
        "more please",
        "Continued.",
    ]
    assert store.path_of(chat_id).read_bytes() == data


def test_a_system_prompt_too_large_for_the_model_is_reported_on_load(make_rig: Make) -> None:
    rig = make_rig(settings=Settings(system_prompt="Cite every file you used. " * 8_000))
    errors = rig.notices("error")
    assert len(errors) == 1
    assert errors[0].startswith("System prompt: it is ")
    assert errors[0].endswith("Change it in Settings (Ctrl+,).")
