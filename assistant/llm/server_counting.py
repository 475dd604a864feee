"""Counting the prompt a server will see, as exactly as that server allows: rendered and
counted by the server (:class:`ServerRendered`), rendered here and tokenized by the server or
a GGUF's vocabulary (:class:`LocalRendered`), else an estimate (ChatML and cl100k,
:attr:`Counting.exact` False). :func:`verify_counting` checks the choice against the server's
``usage.prompt_tokens`` on three probes (a constant difference, a BOS, is corrected); counts
are memoized per conversation, so a new message costs one request.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from assistant.llm.base import ChatMessages, LLMError
from assistant.llm.fallback_tokenizer import Cl100kTokenizer
from assistant.llm.incremental_tokenizer import LRUMemo
from assistant.llm.llama_vocab import GGUFVocab
from assistant.llm.server_http import ServerHTTP
from assistant.llm.server_probe import ServerProfile
from assistant.llm.template import ChatTemplate

log = logging.getLogger(__name__)

Tools = Sequence[dict[str, Any]] | None

#: Counts, renders and token lists remembered per counter: at most this many entries, and
#: this much held (characters of rendered text, or tokens); keys are digests of the text.
MEMO_ENTRIES = 2048
MEMO_WEIGHT = 4_000_000


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=20).digest()


def _key(messages: ChatMessages, tools: Tools) -> bytes:
    return _digest(
        json.dumps([list(messages), list(tools or [])], sort_keys=True, ensure_ascii=False)
    )


def _memo() -> LRUMemo[bytes, Any]:
    return LRUMemo(MEMO_ENTRIES, MEMO_WEIGHT)


class TextTokenizer(Protocol):
    """``tokenize``: a rendered prompt's tokens (the BOS the vocabulary asks for included);
    ``count``: the tokens of a piece of text, without special tokens added."""

    def tokenize(self, text: str) -> list[int]: ...

    def count(self, text: str) -> int: ...


class Counting:
    """Renders and counts a conversation as the server sees it (see the module docstring).

    ``count`` is what the context controller uses; ``offset`` is the constant correction
    found by :func:`verify_counting` (0 when the counts matched as they were).
    """

    #: What counts, for people: "the server's /tokenize", "cl100k estimate", ...
    description: str = ""
    exact: bool = False
    offset: int = 0
    tokenizer: TextTokenizer

    def __init__(self) -> None:
        self._counts = _memo()

    def render(self, messages: ChatMessages, tools: Tools) -> str:
        raise NotImplementedError

    def tokenize_prompt(self, text: str) -> list[int]:
        return self.tokenizer.tokenize(text)

    def count_text(self, text: str) -> int:
        return self.tokenizer.count(text) if text else 0

    def _measure(self, messages: ChatMessages, tools: Tools) -> int:
        return len(self.tokenize_prompt(self.render(messages, tools)))

    def _count_rendered(self, messages: ChatMessages, tools: Tools) -> int:
        """The prompt's tokens as counted here (memoized per conversation)."""
        key = _key(messages, tools)
        return int(self._counts.cached(key, lambda: self._measure(messages, tools)))

    def count(self, messages: ChatMessages, tools: Tools) -> int:
        return max(0, self._count_rendered(messages, tools) + self.offset)

    def close(self) -> None:
        """Release what the counter holds (a GGUF vocabulary)."""


class ServerTokenizer:
    """The server's ``POST /tokenize`` of a text (llama.cpp's shape, or vLLM's when
    ``vllm_model`` names the model)."""

    def __init__(self, http: ServerHTTP, vllm_model: str | None = None) -> None:
        self._http = http
        self._vllm_model = vllm_model

    def tokens(self, text: str, special: bool) -> list[int]:
        if self._vllm_model is not None:
            body: dict[str, Any] = {
                "model": self._vllm_model, "prompt": text, "add_special_tokens": special
            }
        else:
            body = {"content": text, "add_special": special, "parse_special": True}
        return _ids(self._http.post("/tokenize", body))

    def tokenize(self, text: str) -> list[int]:
        return self.tokens(text, True)

    def count(self, text: str) -> int:
        return len(self.tokens(text, False))


class ServerRendered(Counting):
    """llama.cpp (``/apply-template`` + ``/tokenize``) or vLLM (``/tokenize`` with messages)."""

    def __init__(self, http: ServerHTTP, profile: ServerProfile) -> None:
        super().__init__()
        self._http = http
        self._vllm = profile.tokenizer == "vllm"
        self._model = profile.model
        self.tokenizer = ServerTokenizer(http, self._model if self._vllm else None)
        self.description = (
            "the server's /tokenize with its chat template" if self._vllm
            else "the server's /apply-template and /tokenize"
        )
        self.exact = True
        self._renders = _memo()

    def _body(self, messages: ChatMessages, tools: Tools) -> dict[str, Any]:
        body: dict[str, Any] = {"messages": list(messages)}
        if tools:
            body["tools"] = list(tools)
        if self._vllm:
            body.update(model=self._model, add_generation_prompt=True)
        return body

    def render(self, messages: ChatMessages, tools: Tools) -> str:
        key = _key(messages, tools)
        return str(self._renders.cached(key, lambda: self._render(messages, tools)))

    def _render(self, messages: ChatMessages, tools: Tools) -> str:
        if self._vllm:
            tokens = self._vllm_chat_tokens(messages, tools)
            path = "/detokenize"
            done = self._http.post(path, {"model": self._model, "tokens": tokens})
        else:
            path = "/apply-template"
            done = self._http.post(path, self._body(messages, tools))
        if not isinstance(done, dict) or not isinstance(done.get("prompt"), str):
            raise LLMError(f"the server's {path} gave no prompt")
        return str(done["prompt"])

    def _vllm_chat_tokens(self, messages: ChatMessages, tools: Tools) -> list[int]:
        return _ids(self._http.post("/tokenize", self._body(messages, tools)))

    def _measure(self, messages: ChatMessages, tools: Tools) -> int:
        if self._vllm:
            return len(self._vllm_chat_tokens(messages, tools))
        return super()._measure(messages, tools)


class LocalRendered(Counting):
    """A chat template here; tokens from ``tokenizer`` (the server's or a GGUF's)."""

    def __init__(
        self,
        template: ChatTemplate,
        tokenizer: TextTokenizer,
        *,
        description: str,
        exact: bool,
        owned: GGUFVocab | None = None,
    ) -> None:
        super().__init__()
        self.template = template
        self.tokenizer = tokenizer
        self.description = description
        self.exact = exact
        self._owned = owned

    def render(self, messages: ChatMessages, tools: Tools) -> str:
        return self.template.render(messages, tools)

    def close(self) -> None:
        if self._owned is not None:
            self._owned.close()


class ServerTextTokenizer:
    """llama-cpp-python's ``POST /extras/tokenize`` (it always adds the BOS the vocabulary
    asks for; its chat path does not, so a prompt's count drops that BOS)."""

    def __init__(self, http: ServerHTTP, model: str) -> None:
        self._http = http
        self._model = model
        self._memo = _memo()
        self._prefix = self._raw("")  # what the endpoint adds to every text (a BOS or nothing)

    def _raw(self, text: str) -> list[int]:
        body = {"input": text, "model": self._model}
        return list(self._memo.cached(_digest(text), lambda: _ids(
            self._http.post("/extras/tokenize", body)
        )))

    def tokenize(self, text: str) -> list[int]:
        tokens, n = self._raw(text), len(self._prefix)
        return tokens[n:] if n and tokens[:n] == self._prefix else tokens

    def count(self, text: str) -> int:
        return len(self.tokenize(text))


def _ids(answer: Any) -> list[int]:
    tokens = answer.get("tokens") if isinstance(answer, dict) else None
    if not isinstance(tokens, list):
        raise LLMError("the server's tokenizer gave no tokens")
    return [int(t["id"]) if isinstance(t, dict) else int(t) for t in tokens]


def choose_counting(
    http: ServerHTTP, profile: ServerProfile, tokenizer_gguf: str = ""
) -> tuple[Counting, ChatTemplate]:
    """The best counting this server allows, and the template that adapts messages for the
    text protocol (the model's own where it is known, else ChatML).

    Raises :class:`~assistant.llm.base.ModelLoadError` for a named GGUF that cannot be read.
    """
    gguf = GGUFVocab(tokenizer_gguf) if tokenizer_gguf else None
    props_template = (
        ChatTemplate(profile.chat_template, origin="server /props")
        if profile.chat_template else None
    )
    template = gguf.template if gguf else props_template or ChatTemplate(None)
    if profile.server_renders:
        if gguf is not None:
            gguf.close()
        return ServerRendered(http, profile), props_template or ChatTemplate(None)
    if profile.tokenizer == "llama.cpp":  # an older llama-server: no /apply-template
        tokenizer: TextTokenizer = ServerTokenizer(http)
        what = f"the server's /tokenize, template from {template.origin}"
    elif profile.tokenizer == "llama-cpp-python":
        tokenizer = ServerTextTokenizer(http, profile.model)
        what = f"the server's /extras/tokenize, template from {template.origin}"
    elif gguf is not None:
        tokenizer, what = gguf, f"the tokenizer and template of {gguf.path.name}"
    else:
        return LocalRendered(
            template, Cl100kTokenizer(),
            description="estimates (cl100k; the server has no tokenizer endpoint: name its "
            "GGUF file in Settings, Engine for exact counts)",
            exact=False,
        ), template
    return LocalRendered(template, tokenizer, description=what, exact=True, owned=gguf), template

# -- checking the counts against the server ------------------------------------------------------

_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a text file in the workspace.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                       "required": ["path"]},
    },
}
PROBES: tuple[tuple[tuple[dict[str, Any], ...], bool], ...] = (
    (({"role": "system", "content": "You are terse."},
      {"role": "user", "content": "Say hi."}), False),
    (({"role": "system", "content": "Answer in one word."},
      {"role": "user", "content": "Capital of France?"},
      {"role": "assistant", "content": "Paris."},
      {"role": "user", "content": "And of Italy?"}), False),
    (({"role": "system", "content": "Use tools when asked."},
      {"role": "user", "content": "Read notes.txt"},
      {"role": "assistant", "content": "", "tool_calls": [
          {"id": "call_1", "type": "function",
           "function": {"name": "read_file", "arguments": '{"path": "notes.txt"}'}}]},
      {"role": "tool", "tool_call_id": "call_1", "name": "read_file", "content": "hello"},
      {"role": "user", "content": "What does it say?"}), True),
)


def verify_counting(
    counting: Counting,
    server_count: Callable[[list[dict[str, Any]], list[dict[str, Any]] | None], int | None],
    wire: Callable[[ChatMessages, Tools], tuple[list[dict[str, Any]], list[dict[str, Any]] | None]],
) -> str:
    """Compare ``counting`` with the server's ``usage.prompt_tokens`` on :data:`PROBES`: sets
    its ``exact`` and ``offset``, and says what was found.

    ``wire(messages, tools)`` is what the backend sends; ``server_count(messages, tools)``
    makes a one-token request and returns the server's prompt count (None: not reported).
    """
    diffs: list[int] = []
    for messages, with_tools in PROBES:
        sent, sent_tools = wire(list(messages), [_TOOL] if with_tools else None)
        theirs = server_count(sent, sent_tools)
        if theirs is None:
            return "the server does not report prompt sizes, so the counts could not be checked"
        diffs.append(theirs - counting._count_rendered(sent, sent_tools))
    if len(set(diffs)) == 1:
        counting.exact, counting.offset = True, diffs[0]
        if diffs[0] == 0:
            return "checked against the server's prompt sizes"
        return (
            f"checked against the server's prompt sizes (corrected by {diffs[0]:+d} "
            f"token{'s' if abs(diffs[0]) != 1 else ''} per prompt)"
        )
    log.warning("server counts differ from ours by %s on the probes", diffs)
    counting.exact = False
    return (
        f"they differ from the server's prompt sizes by {min(diffs)} to {max(diffs)} tokens, "
        "so they are estimates"
    )
