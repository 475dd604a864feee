"""The terminal chat with the real model prints the reply's figures on stderr."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration

STATS = re.compile(
    r"^\[stats\] prompt_tokens=(\d+) evaluated=(\d+) reused=(\d+) ttft_s=(\d+\.\d\d) "
    r"tokens_per_s=(\d+\.\d)$",
    re.MULTILINE,
)


def test_each_reply_is_followed_by_a_stats_line() -> None:
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    proc = subprocess.run(
        [sys.executable, "-m", "assistant", "chat", "--max-tokens", "16"],
        input="What is the capital of France?\nAnd of Italy?\n",
        capture_output=True, text=True, timeout=300, env=env,
    )
    assert proc.returncode == 0, proc.stderr
    found = STATS.findall(proc.stderr)
    assert len(found) == 2, proc.stderr
    first, second = ([int(x) for x in f[:3]] + [float(f[3]), float(f[4])] for f in found)
    for prompt, evaluated, reused, ttft, speed in (first, second):
        assert evaluated + reused == prompt
        assert ttft > 0 and speed > 0
    assert second[2] > 0  # the second question reuses the first one's cached prompt
    assert "[stats]" not in proc.stdout
