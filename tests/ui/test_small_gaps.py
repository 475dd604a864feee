"""The smaller gaps of issue 43 (item 8), driven as a user would: a reply cut at the length
limit says so and offers Continue; a question stopped before its reply offers Retry; the
model is named the same while it loads as once it is ready; the Help menu; wording."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QLabel

from assistant.config import Sampling, Settings
from assistant.llm.registry import load_registry
from assistant.service.status import Phase
from assistant.ui.parts import sentence
from assistant.ui.window_dialogs import ChatOptionsDialog
from tests.fakes.scripted import ScriptedBackend

LONG = " ".join(f"word{i}" for i in range(60))


def _last(h):  # type: ignore[no-untyped-def]
    return list(h.window.chat_view.message_widgets.values())[-1]


def test_a_reply_cut_at_the_length_limit_says_so_and_continue_writes_more(
    make_window, artifacts_dir: Path
) -> None:
    settings = Settings(sampling=Sampling(max_reply_tokens=16))
    h = make_window(backend=ScriptedBackend([LONG]), settings=settings)
    h.type_and_send("Tell me a long story")
    h.wait_idle()
    reply = _last(h)
    assert reply.message.figures is not None and reply.message.figures.cut_off
    h.qtbot.waitUntil(reply.isVisible)  # a widget added to a shown window: next pass
    assert reply.continue_row.isVisible() and reply.continue_button.isEnabled()
    assert "length limit" in reply.continue_label.text()
    assert h.window.grab().save(str(artifacts_dir / "reply-cut-at-length-limit.png"))
    h.backend.enqueue("and the end.")
    h.qtbot.mouseClick(reply.continue_button, Qt.MouseButton.LeftButton)
    h.wait_idle()
    longer = _last(h)
    assert longer.message.content.endswith("and the end.")
    assert not longer.continue_row.isVisible()  # finished on its own this time
    assert not any(w.continue_row.isVisible()
                   for w in h.window.chat_view.message_widgets.values())


def test_a_question_stopped_before_its_reply_offers_retry(make_window, artifacts_dir: Path
                                                           ) -> None:
    backend = ScriptedBackend(["Here is the answer."], prefill_batch=16, delay_per_batch=0.3)
    h = make_window(backend=backend)
    h.type_and_send("A long paste " + LONG)
    h.qtbot.waitUntil(lambda: h.window.status.phase is Phase.EVALUATING_PROMPT
                      and bool(h.window.chat_view.message_widgets))
    question = _last(h)
    question = h.window.chat_view.message_widgets[question.message.id]
    assert not question.retry_button.isVisible()  # not while it is being answered
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_Escape)
    h.wait_idle()
    backend.prefill_batch = 0
    question = _last(h)
    h.qtbot.waitUntil(question.isVisible)
    assert question.message.role == "user"
    assert question.retry_button.isVisible() and question.retry_button.isEnabled()
    assert h.window.grab().save(str(artifacts_dir / "stopped-question-retry.png"))
    h.qtbot.mouseClick(question.retry_button, Qt.MouseButton.LeftButton)
    h.wait_idle()
    assert _last(h).message.content == "Here is the answer."
    assert not question.retry_button.isVisible()


def test_the_loading_model_has_the_name_it_has_once_loaded(make_window) -> None:
    registry = load_registry()
    entry = registry.models[0]
    h = make_window(settings=Settings(model=entry.name), wait=False)
    h.window._status_changed(h.controller.status_machine.status.__class__(
        Phase.LOADING_MODEL, entry.name, 0.5))
    text = h.window.status_label.text()
    assert text.startswith(f"Loading {entry.display_name}…"), text
    assert entry.name not in text or entry.name == entry.display_name


def test_the_help_menu_has_a_guide_the_shortcuts_and_about(make_window, artifacts_dir: Path
                                                           ) -> None:
    h = make_window()
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_F1)
    dialog = h.window.menus.help_dialog
    assert dialog is not None and dialog.isVisible()
    assert dialog.windowTitle() == "Short guide"
    assert "Retry" in dialog.text.toPlainText()
    h.window.menus.shortcuts.trigger()
    shown = dialog.text.toPlainText()
    for action in h.window.actions():  # every key a menu entry has is listed
        for key in action.shortcuts():
            assert key.toString() in shown, key.toString()
    assert "Shift+Enter" in shown
    assert dialog.grab().save(str(artifacts_dir / "help-shortcuts.png"))
    h.window.menus.about.trigger()
    assert dialog.windowTitle() == "About Offline Assistant"
    assert "Model in use" in dialog.text.toPlainText()
    dialog.close()


def test_wording_one_full_stop_after_a_quoted_title_and_one_spelling_of_license(
    make_window
) -> None:
    assert sentence("For “Answer briefly.”") == "For “Answer briefly.”"
    assert sentence("For “Trip”") == "For “Trip”."
    h = make_window()
    h.type_and_send("Answer briefly.")
    h.wait_idle()
    dialog = h.window.open_chat_options()
    assert isinstance(dialog, ChatOptionsDialog)
    texts = [label.text() for label in dialog.findChildren(QLabel)]
    assert any("“Answer briefly.” The chat remembers them." in t for t in texts), texts
    assert not any(".”." in t for t in texts)
    dialog.reject()
    page = h.window.open_models()
    facts = " ".join(label.text() for label in page.findChildren(QLabel))
    assert "licence" not in facts.lower() and "license" in facts.lower()
    page.close()


def test_the_welcome_hint_names_the_settings_key_plainly(make_window, artifacts_dir: Path
                                                          ) -> None:
    h = make_window()
    hint = h.window.welcome.keys_hint
    assert hint.isVisible()
    assert "Ctrl+Comma" in hint.text() and "Ctrl+, settings" not in hint.text()
    h.qtbot.wait(100)
    assert h.window.grab().save(str(artifacts_dir / "welcome-keys-hint.png"))
    QApplication.processEvents()
