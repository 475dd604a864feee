"""The compaction strip when its words wrap onto a second line (a narrow window, or the
longest text: reading, speed and time left): the whole text is on screen as soon as the
window has the event, not one event-loop pass later (the strip used to keep its one-line
height until the layout request posted by the label was handled, clipping the second
line). Driven through the window's real signals; a screenshot goes to test-artifacts/
(compaction-strip-wrap.png)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QLabel

from assistant.service.events import PrefillProgress, StatusChanged
from assistant.service.status import Phase, Status

from .conftest import Harness


def _fully_shown(label: QLabel) -> bool:
    """Whether every line of ``label``'s wrapped text is inside its visible area (clipped
    by the strip and the window, as the user sees it)."""
    need = label.heightForWidth(label.width())
    seen = label.visibleRegion().boundingRect()
    return label.height() >= need and seen.height() >= need and seen.width() == label.width()


def test_the_wrapped_second_line_is_shown_at_once(make_window, artifacts_dir: Path) -> None:
    h: Harness = make_window()
    h.window.resize(700, 640)
    h.qtbot.waitUntil(lambda: h.window.width() == 700)
    strip, label = h.window.status_strip, h.window.status_strip.label
    h.window.bridge.deliver(StatusChanged(Status(Phase.COMPACTING)))
    assert strip.isVisible() and _fully_shown(label)
    one_line = label.height()
    # The longest text: reading, speed and time left, two lines at this width.
    h.window.bridge.deliver(
        PrefillProgress(1_024, 12_345, tokens_per_s=187.0, eta_s=605.0))
    assert "tokens/s" in label.text()
    assert label.heightForWidth(label.width()) > one_line  # it wraps
    assert _fully_shown(label)
    h.window.grab().save(str(artifacts_dir / "compaction-strip-wrap.png"))
    # Back to one line (writing the summary): the strip shrinks at once as well.
    h.window.bridge.deliver(PrefillProgress(12_344, 12_345, eta_s=0.0))
    assert "writing the summary" in label.text() and _fully_shown(label)
    assert label.height() == label.heightForWidth(label.width())
    h.window.bridge.deliver(StatusChanged(Status(Phase.IDLE)))
    assert not strip.isVisible()
