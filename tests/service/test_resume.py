"""Instant resume through the session service (scripted backend): the chat's state is saved
after each reply and loaded when the chat is opened again; anything that does not match
loads nothing and the chat is evaluated from scratch."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from assistant.agent.events import ModelCallFinished
from assistant.config import Settings
from assistant.llm.base import EngineTuning
from assistant.llm.kv_state import default_dir
from assistant.service.events import ModelStateRestored
from assistant.service.resume import engine_tuning
from tests.fakes.scripted import ScriptedBackend

from .conftest import Rig

Make = Callable[..., Rig]


def _first_chat(make_rig: Make, settings: Settings | None = None) -> tuple[str, int]:
    """A chat with one exchange, saved; returns its id and the tokens its state holds."""
    rig = make_rig("The capital of France is Paris.", settings=settings)
    assert rig.service.submit("What is the capital of France?")
    chat_id = rig.service.chat.chat_id
    assert chat_id is not None
    held = len(rig.backend.save_state().tokens)
    rig.service.shutdown()  # writes what is pending, releases the chat's lock
    return chat_id, held


def test_a_reopened_chat_loads_its_state_and_evaluates_only_what_is_new(make_rig: Make) -> None:
    chat_id, held = _first_chat(make_rig)
    fresh = ScriptedBackend(["It is on the Seine."])
    rig = make_rig(backend=fresh)
    assert rig.service.open_chat(chat_id)
    restored = rig.of(ModelStateRestored)
    assert [(r.chat_id, r.tokens) for r in restored] == [(chat_id, held)]
    assert fresh.loaded_states == 1
    assert rig.service.submit("Which river runs through it?")
    result = rig.of(ModelCallFinished)[-1].result
    # Everything up to the end of the first reply came from the saved state.
    assert result.prompt_reused >= held - 2
    assert result.prompt_evaluated == result.prompt_tokens - result.prompt_reused
    assert result.prompt_evaluated < result.prompt_tokens // 2


def test_the_model_loading_after_the_chat_opened_restores_it_too(make_rig: Make) -> None:
    """The terminal's ``--resume``: the chat is opened first, then the model loads."""
    chat_id, held = _first_chat(make_rig)
    fresh = ScriptedBackend(["Yes."])
    rig = make_rig(backend=fresh, load=False)
    assert rig.service.open_chat(chat_id)
    assert not rig.of(ModelStateRestored)
    rig.service.load_model()
    assert [r.tokens for r in rig.of(ModelStateRestored)] == [held]


def test_a_damaged_state_loads_nothing_and_the_chat_is_evaluated_again(make_rig: Make) -> None:
    chat_id, _held = _first_chat(make_rig)
    files = list(_state_dir().iterdir())
    assert len(files) == 1
    raw = bytearray(files[0].read_bytes())
    raw[-3] ^= 0xFF
    files[0].write_bytes(bytes(raw))
    fresh = ScriptedBackend(["Again."])
    rig = make_rig(backend=fresh)
    assert rig.service.open_chat(chat_id)
    miss = rig.of(ModelStateRestored)[-1]
    assert miss.tokens == 0 and "damaged" in miss.miss
    assert fresh.loaded_states == 0
    assert rig.service.submit("And?")
    result = rig.of(ModelCallFinished)[-1].result
    assert result.prompt_reused == 0 and result.prompt_evaluated == result.prompt_tokens


def test_another_model_finds_no_state(make_rig: Make) -> None:
    chat_id, _held = _first_chat(make_rig)
    other = ScriptedBackend(["Other."], window=4096)  # another fingerprint
    rig = make_rig(backend=other)
    assert rig.service.open_chat(chat_id)
    miss = rig.of(ModelStateRestored)[-1]
    assert miss.tokens == 0 and "no saved state" in miss.miss
    assert other.loaded_states == 0


def test_resume_off_saves_nothing(make_rig: Make) -> None:
    settings = Settings()
    settings.performance.resume_state = False
    chat_id, _held = _first_chat(make_rig, settings)
    assert not _state_dir().exists() or not list(_state_dir().iterdir())
    rig = make_rig(backend=ScriptedBackend(["x"]), settings=settings)
    assert rig.service.open_chat(chat_id)
    assert not rig.of(ModelStateRestored)


def test_opening_another_chat_first_skips_the_stale_restore(make_rig: Make) -> None:
    chat_a, _ = _first_chat(make_rig)
    chat_b, held_b = _first_chat(make_rig)
    fresh = ScriptedBackend([])
    rig = make_rig(backend=fresh, threaded=True)
    gate = threading.Event()  # the worker is busy while the user switches chats
    rig.service.worker.submit(lambda: gate.wait(10))
    assert rig.service.open_chat(chat_a)
    assert rig.service.open_chat(chat_b)
    gate.set()
    assert rig.loop is not None
    rig.loop.run_until(lambda: len(rig.of(ModelStateRestored)) == 2)
    got = {r.chat_id: r for r in rig.of(ModelStateRestored)}
    assert got[chat_a].tokens == 0 and got[chat_a].miss == "another chat was opened"
    assert got[chat_b].tokens == held_b


def test_deleting_a_chat_deletes_its_saved_state(make_rig: Make) -> None:
    chat_id, _held = _first_chat(make_rig)
    assert len(list(_state_dir().iterdir())) == 1
    rig = make_rig(backend=ScriptedBackend([]))
    rig.service.delete_chat(chat_id)
    assert not list(_state_dir().iterdir())


def test_settings_turn_into_the_backend_tuning() -> None:
    s = Settings()
    # Chunk reuse is on by default (docs/PERFORMANCE.md: 97% of 202 positions agreed).
    assert engine_tuning(s) == EngineTuning(threads=0, n_batch=0, n_ubatch=0,
                                            chunk_reuse=True, min_chunk=64)
    s.sampling.threads = 3
    s.performance.n_batch = 256
    s.performance.chunk_reuse = False
    s.performance.chunk_reuse_min = 32
    assert engine_tuning(s) == EngineTuning(3, 256, 0, False, 32)
    # Prompt lookup: "auto" leaves it to the model's measured default.
    assert engine_tuning(s).prompt_lookup is None
    s.performance.prompt_lookup = "on"
    assert engine_tuning(s).prompt_lookup is True
    s.performance.prompt_lookup = "off"
    assert engine_tuning(s).prompt_lookup is False
    # The draft model: the registry's pairing ("auto", or left empty), none, or one named.
    assert engine_tuning(s).draft_model is None
    for setting, wanted in (("off", ""), ("Off", ""), ("", None), (" auto ", None),
                            ("/models/q05.gguf", "/models/q05.gguf")):
        s.performance.draft_model = setting
        assert engine_tuning(s).draft_model == wanted, setting
    # The prompt form: "auto" leaves it to the registry or the file.
    assert engine_tuning(s).prompt_form is None
    s.performance.prompt_form = "transcript"
    assert engine_tuning(s).prompt_form == "transcript"


def _state_dir() -> Path:
    return default_dir()


def test_the_status_says_the_chat_resumed_from_its_state(make_rig: Make) -> None:
    chat_id, held = _first_chat(make_rig)
    rig = make_rig(backend=ScriptedBackend([]))
    assert rig.service.open_chat(chat_id)
    assert rig.statuses()[-1].text == f"Chat resumed from its saved state ({held:,} tokens ready)"
