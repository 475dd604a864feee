"""What the terminal prints for the service's events that have no window to show them."""

from __future__ import annotations

import io

from assistant.cli.chat import TerminalPrinter
from assistant.service.events import ModelSwitchSuggested


def test_a_chat_last_used_with_another_model_says_so_on_stderr() -> None:
    out, err = io.StringIO(), io.StringIO()
    TerminalPrinter(out, err)(ModelSwitchSuggested("abc", "gemma-3-270m", "smollm2-135m-instruct"))
    assert err.getvalue() == (
        "[info] This chat was last used with gemma-3-270m; answering with "
        "smollm2-135m-instruct (start with --model gemma-3-270m to use it).\n"
    )
    assert out.getvalue() == ""
