"""/help's table reads as a table at the chat column's width (issue 43): each command stays on
one line at its own width, the descriptions start at one edge to its right and wrap there,
nothing is cut off; at 800x560 and 1366x768, at 100 % and 200 % zoom. A screenshot of each
for a person to look at goes to ``ASSISTANT_TEST_ARTIFACTS``. (Before, the table was text
lined up with spaces in a wrapping label: at 800 px the longest row broke under the next
command.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication

from assistant.agent.commands import COMMANDS, HELP_NOTES
from assistant.config import Settings
from assistant.ui.notices import NoticeWidget
from assistant.ui.theme import mono_font

from .layout_check import clipped

SIZES = [(800, 560), (1366, 768)]


def _settle(h) -> None:  # type: ignore[no-untyped-def]
    for _ in range(4):
        QApplication.processEvents()
        h.qtbot.wait(60)


@pytest.mark.parametrize("zoom", [100, 200])
def test_help_rows_stay_rows_at_the_column_width(make_window, artifacts_dir: Path, zoom: int
                                                 ) -> None:
    h = make_window(settings=Settings(theme="light", zoom=zoom))
    h.type_and_send("/help")
    w = h.window
    notice = next(e for e in w.chat_view.entries() if isinstance(e, NoticeWidget))
    # Every command of the table, and the notes under it, are on screen as the text says.
    assert [(u.text(), d.text()) for u, d in notice.cells] == [
        (c.usage, c.description) for c in COMMANDS]
    for note in HELP_NOTES:
        assert note in notice.text
    for width, height in SIZES:
        w.resize(width, height)
        _settle(h)
        w.chat_view.ensureWidgetVisible(notice.cells[0][0], 0, 40)  # the table's top
        _settle(h)
        shot = artifacts_dir / f"help-{width}x{height}-zoom-{zoom}.png"
        assert w.grab().save(str(shot))
        line = notice.cells[0][0].fontMetrics().lineSpacing()
        lefts = {d.geometry().left() for _u, d in notice.cells}
        assert len(lefts) == 1, f"descriptions start at {sorted(lefts)}"
        for usage, what in notice.cells:
            assert usage.font().family() == mono_font().family()
            # One line, as wide as the command needs (at 200 % in 800 px the longest
            # commands cannot be: they wrap at a space within their column).
            if zoom == 100 or width >= 1366:
                assert usage.width() >= usage.fontMetrics().horizontalAdvance(usage.text())
                assert usage.height() < 2 * line, usage.text()
            assert usage.geometry().right() < what.geometry().left(), usage.text()
            # A description wraps within the notice rather than running past it.
            assert what.mapTo(notice, what.rect().topRight()).x() < notice.width()
        tops = [u.geometry().top() for u, _d in notice.cells]
        bottoms = [max(u.geometry().bottom(), d.geometry().bottom()) for u, d in notice.cells]
        assert all(b < t for b, t in zip(bottoms, tops[1:], strict=False)), "rows overlap"
        problems = clipped(w)
        assert not problems, f"{width}x{height} at {zoom} %:\n" + "\n".join(problems)
