"""What the real-model tests need from llama.cpp beyond the product's API."""

from __future__ import annotations

import importlib
from typing import Any

from assistant.llm.llama_constrained import _Candidates


def grammar_accepts(backend: Any, grammar: str, text: str) -> bool:
    """Whether ``grammar`` lets ``backend``'s model write exactly ``text`` and then stop,
    walking the text's tokens through llama.cpp's grammar sampler one at a time."""
    backend.check_grammar(grammar)
    llm = backend._llm
    tokens = llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)
    lc: Any = importlib.import_module("llama_cpp")
    sampler = lc.llama_sampler_init_grammar(llm._model.vocab, grammar.encode("utf-8"), b"root")
    one = _Candidates(lc, 1)
    try:
        for token in tokens:
            if not one.allows(lc, sampler, token):
                return False
            lc.llama_sampler_accept(sampler, token)
        return one.allows(lc, sampler, int(llm.token_eos()))
    finally:
        lc.llama_sampler_free(sampler)
