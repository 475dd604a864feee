"""Fixtures for session store tests: a store inside the isolated ASSISTANT_HOME."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from assistant import paths
from assistant.compaction.branch import BranchSummarizer
from assistant.sessions import SessionStore


@pytest.fixture
def store() -> Iterator[SessionStore]:
    s = SessionStore(summarizer=BranchSummarizer())
    assert s.root == paths.sessions_dir()
    yield s
    s.close_all()
