"""The slash-command completion popup and the app commands it leads to."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from assistant.agent.commands import COMMANDS
from assistant.ui.notices import NoticeWidget
from assistant.ui.theme import mono_font


def test_slash_shows_every_command(make_window) -> None:
    h = make_window()
    h.qtbot.keyClicks(h.window.input, "/")
    completer = h.window.input.completer
    h.qtbot.waitUntil(lambda: completer.popup_visible)
    assert completer.matches() == [c.command for c in COMMANDS if c.command.startswith("/")]
    for name in (
        "/help",
        "/clear",
        "/compact",
        "/model",
        "/mode",
        "/resume",
        "/export",
        "/read",
        "/ls",
        "/find",
        "/grep",
    ):
        assert name in completer.matches()


def test_prefix_narrows_and_enter_inserts(make_window) -> None:
    h = make_window()
    h.qtbot.keyClicks(h.window.input, "/co")
    completer = h.window.input.completer
    assert completer.matches() == ["/compact"]
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_Return)
    assert h.window.input.toPlainText() == "/compact "
    assert not completer.popup_visible
    assert not h.controller.jobs.busy  # Enter completed, it did not send


def test_arrow_keys_choose_and_tab_inserts(make_window) -> None:
    h = make_window()
    h.qtbot.keyClicks(h.window.input, "/m")
    assert h.window.input.completer.matches() == ["/model", "/mode"]
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_Down)
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_Tab)
    assert h.window.input.toPlainText() == "/mode "


def test_bang_offers_shell_command(make_window) -> None:
    h = make_window()
    h.qtbot.keyClicks(h.window.input, "!")
    assert h.window.input.completer.matches() == ["!"]
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_Escape)
    assert not h.window.input.completer.popup_visible
    assert h.window.input.toPlainText() == "!"


def test_popup_hides_after_a_space(make_window) -> None:
    h = make_window()
    h.qtbot.keyClicks(h.window.input, "/read notes.md")
    assert not h.window.input.completer.popup_visible


def _notices(h) -> list[NoticeWidget]:  # type: ignore[no-untyped-def]
    return [w for w in h.window.chat_view.entries() if isinstance(w, NoticeWidget)]


def test_help_command_shows_commands(make_window) -> None:
    h = make_window()
    h.qtbot.keyClicks(h.window.input, "/help")
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_Escape)  # close the popup
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_Return)
    [notice] = _notices(h)
    assert "/compact" in notice.text and "Ctrl+K" in notice.text
    # /help's rows come as rows: the commands are shown in a fixed-width font, a column of
    # their own; a notice that only looks like columns is not.
    assert all(u.font().family() == mono_font().family() for u, _d in notice.cells)
    h.window.show_notice("info", "\n".join(["  a  b", "  c  d", "  e  f"]))
    assert not _notices(h)[-1].cells
    assert _notices(h)[-1].label.font().family() != mono_font().family()
    for spec in COMMANDS:
        assert spec.usage in notice.text and spec.description in notice.text


def test_mode_command_switches_and_saves(make_window) -> None:
    from assistant.config import load_settings

    h = make_window()
    h.controller.submit("/mode standard")
    assert h.controller.settings.mode == "standard"
    assert load_settings().settings.mode == "standard"
    assert "standard:" in _notices(h)[-1].text
    assert h.window.mode_label.text() == "Standard mode"


def test_ls_and_read_commands_show_tool_cards(make_window, tmp_path: Path) -> None:
    h = make_window()
    workspace = h.controller.settings.workspace_path()
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "notes.md").write_text("remember the milk\n", encoding="utf-8")
    h.type_and_send("/read notes.md")
    h.wait_idle()
    cards = list(h.window.chat_view.cards.values())
    assert cards and cards[-1].call.name == "read_file"
    assert cards[-1].result is not None and "remember the milk" in cards[-1].result.content
    assert h.backend.calls == []  # a user tool does not start a model reply


def test_export_command_writes_markdown(make_window, tmp_path: Path) -> None:
    h = make_window()
    h.type_and_send("Hello export")
    h.wait_idle()
    target = tmp_path / "chat.md"
    h.controller.submit(f"/export {target}")
    assert "Hello export" in target.read_text(encoding="utf-8")


def test_unknown_command_is_an_error_notice(make_window) -> None:
    h = make_window()
    h.controller.submit("/frobnicate")
    h.wait_idle()
    assert _notices(h)[-1].level == "error"
