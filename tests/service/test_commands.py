"""Slash commands, parsed once by the service, the same for every face."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from assistant import paths
from assistant.agent.commands import APP_COMMANDS, COMMANDS, HELP_ROWS, HELP_TEXT
from assistant.agent.events import Notice
from assistant.service.commands import AppCommands
from assistant.service.events import ChatPickerRequested, ExportPathNeeded, SettingsChanged

from .conftest import Rig

Make = Callable[..., Rig]


def test_help_includes_the_faces_own_help(make_rig: Make) -> None:
    rig = make_rig()
    assert rig.service.submit("/help")
    assert rig.notices("info") == [HELP_TEXT + "\n\nShortcuts: none here."]
    assert not rig.backend.calls


def test_an_unknown_command_is_refused_not_sent(make_rig: Make) -> None:
    rig = make_rig()
    assert not rig.service.submit("/frobnicate now")
    assert "Unknown command /frobnicate" in rig.notices("error")[0]
    assert not rig.backend.calls and rig.service.chat.chat_id is None


def test_double_slash_sends_the_line_as_a_message(make_rig: Make) -> None:
    rig = make_rig("sure")
    rig.service.submit("//read is a command")
    assert rig.service.chat.conversation.messages[0].content == "/read is a command"


def test_tool_commands_run_without_a_model_reply(make_rig: Make) -> None:
    rig = make_rig()
    workspace = rig.service.settings.workspace_path()
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "notes.txt").write_text("alpha\nbeta\n")
    rig.service.submit("/read notes.txt")
    roles = [m.role for m in rig.service.chat.conversation.messages]
    assert roles == ["assistant", "tool"]
    assert "alpha" in rig.service.chat.conversation.messages[1].content
    assert not rig.backend.calls


def test_mode_switches_and_describes_the_policy(make_rig: Make) -> None:
    rig = make_rig()
    rig.service.submit("/mode standard")
    assert rig.service.settings.mode == "standard"
    assert rig.of(SettingsChanged)[-1].settings.mode == "standard"
    assert rig.notices("info")[-1].startswith("Mode standard")
    rig.service.submit("/mode fast")
    assert rig.notices("error")[-1] == "Usage: /mode local or /mode standard"
    assert rig.service.settings.mode == "standard"


def test_model_shows_the_loaded_model_and_switches(make_rig: Make) -> None:
    rig = make_rig()
    rig.service.submit("/model")
    text = rig.notices("info")[-1]
    assert "scripted (trained on 8,192 tokens, window 8,192)" in text
    assert "smollm2-135m-instruct" in text  # the registered names
    rig.service.submit("/model other-model")
    assert rig.loads[-1] == "other-model"


def test_clear_starts_a_new_chat(make_rig: Make) -> None:
    rig = make_rig("ok")
    rig.service.submit("hello")
    assert rig.service.chat.chat_id is not None
    rig.service.submit("/clear")
    assert rig.service.chat.chat_id is None and rig.service.chat.conversation.messages == []
    assert len(rig.service.chat.summaries()) == 1


def test_resume_lists_then_opens(make_rig: Make) -> None:
    rig = make_rig("ok", "ok")
    rig.service.submit("Apples are red")
    apples = rig.service.chat.chat_id
    rig.service.submit("/clear")
    rig.service.submit("/resume")
    assert "Apples are red" in rig.notices("info")[-1]
    assert [c.id for c in rig.of(ChatPickerRequested)[-1].chats] == [apples]
    rig.service.submit("/resume last")
    assert rig.service.chat.chat_id == apples


def test_export_writes_markdown_or_json_and_asks_without_a_path(
    make_rig: Make, tmp_path: Path
) -> None:
    rig = make_rig("The capital is Paris.")
    rig.service.submit("/export")
    assert rig.notices("error")[-1] == "Nothing to export yet: this chat is empty."
    rig.service.submit("Capital of France?")
    rig.service.submit(f"/export {tmp_path / 'chat.md'}")
    assert "The capital is Paris." in (tmp_path / "chat.md").read_text()
    rig.service.submit(f"/export {tmp_path / 'chat.json'}")
    assert '"role": "assistant"' in (tmp_path / "chat.json").read_text()
    rig.service.submit("/export")
    suggested = rig.of(ExportPathNeeded)[-1].suggested
    assert suggested.name == "Capital of France.md"  # the chat's title
    assert suggested.parent == paths.documents_dir()


def test_every_app_command_of_the_table_is_dispatched_to_its_handler(
    make_rig: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 42: the table names every command once; each app command of it reaches its
    handler (``/compact`` is the model's job), with its argument."""
    rig = make_rig()
    handled = set(rig.service.commands.handlers())
    assert handled == set(APP_COMMANDS) - {"compact"}
    heard: list[tuple[str, str]] = []
    for name in handled:
        monkeypatch.setattr(AppCommands, name,
                            lambda _self, arg, name=name: heard.append((name, arg)))
    for spec in COMMANDS:
        if spec.name in handled:
            rig.service.submit(f"{spec.command} some argument")
    assert sorted(heard) == sorted((name, "some argument") for name in handled)


def test_help_gives_its_rows_one_per_command_of_the_table(make_rig: Make) -> None:
    rig = make_rig()
    rig.service.submit("/help")
    (notice,) = [n for n in rig.of(Notice) if n.rows]
    assert notice.rows == HELP_ROWS
    assert [row.usage for row in notice.rows] == [spec.usage for spec in COMMANDS]
    assert [row.description for row in notice.rows] == [spec.description for spec in COMMANDS]
