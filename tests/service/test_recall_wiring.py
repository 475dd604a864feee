"""Recall switched on in the settings: the open chat's index is kept beside its chat file,
used before model calls, and deleted with the chat."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from assistant.config import Settings

from .conftest import Rig

Make = Callable[..., Rig]


def test_the_open_chats_index_is_used_and_goes_with_the_chat(
    make_rig: Make, tmp_path: Path
) -> None:
    settings = Settings(workspace=str(tmp_path / "workspace"))
    settings.compaction.recall = True
    rig = make_rig("Noted.", "It is 12345.", settings=settings)
    assert rig.service.submit("Our staging server port is 12345.")
    assert rig.service.submit("What is the staging server port?")
    chat_id = rig.service.chat.chat_id
    assert chat_id is not None
    path = rig.service.store.recall_path(chat_id)
    assert path.is_file()  # built from the chat file for the second call
    # The fact is in the prompt verbatim: nothing is added beside the question.
    assert rig.backend.calls[-1].messages[-1]["content"] == "What is the staging server port?"
    rig.service.new_chat()
    rig.service.delete_chat(chat_id)
    assert not path.exists()
