"""Stand-ins for vLLM, Ollama, LM Studio and a plain OpenAI-compatible server, built from
their documentation because the real servers cannot run here (vLLM's wheels need CUDA;
Ollama and LM Studio are not on PyPI, Debian or npm).

Each is a :class:`~tests.fakes.openai_server.FakeOpenAIServer` (a real HTTP server on
127.0.0.1) answering with the documented shapes, and as the real server does to what it
lacks. The sources:

* vLLM: docs.vllm.ai, "OpenAI-Compatible Server" (the Tokenizer API, ``/tokenize`` and
  ``/detokenize``); the request and answer models in vllm-project/vllm
  ``vllm/entrypoints/serve/tokenize/protocol.py`` (``TokenizeCompletionRequest`` with
  ``prompt``, ``TokenizeChatRequest`` with ``messages``/``tools``/``add_generation_prompt``,
  ``TokenizeResponse`` ``{count, max_model_len, tokens, token_strs}``,
  ``DetokenizeResponse`` ``{prompt}``) and ``vllm/entrypoints/openai/engine/protocol.py``
  (``ModelCard``: ``max_model_len`` in each ``/v1/models`` entry). FastAPI answers 404
  ``{"detail": "Not Found"}`` to other paths.
* Ollama: ollama/ollama ``docs/api.md`` and ``docs/openapi.yaml`` (``GET /api/version``
  ``{version}``; ``GET /api/ps`` ``{models: [{name, model, ..., context_length}]}``;
  ``POST /api/show`` ``{model}`` to ``{parameters, template, details, model_info,
  capabilities}``, ``parameters`` one ``name value`` per line), ``docs/api/
  openai-compatibility.mdx`` (``/v1/models``: ``owned_by`` "library"), and
  ``types/model/capability.go`` (the capability "tools"). Its router answers a path it
  lacks with a plain-text 404.
* LM Studio: lmstudio-ai/docs ``1_developer/2_rest/endpoints.mdx`` (``GET /api/v0/models``
  entries: ``id, object, type, publisher, arch, compatibility_type, quantization, state,
  max_context_length``) and ``1_developer/api-changelog.md`` (0.3.16: a ``capabilities``
  array, e.g. ``"tool_use"``). ``loaded_context_length`` of a loaded model is not in the
  docs' example; its shape is from answers quoted in zed-industries/zed#25606 and
  co-l/openfox#49. LM Studio answers a path it lacks with 200 and ``{"error": "Unexpected
  endpoint or method. (GET /props)"}`` (lmstudio-ai/lmstudio-bug-tracker#618, #1323).
* a plain OpenAI-compatible server: only ``/v1/models``, whose entry may name a window
  (``context_length``; or llama.cpp's ``meta.n_ctx_train``, tools/server/README.md).

vLLM's tokenizer and chat template here are toys (words and punctuation, ChatML-like
markers), but its counts behave as vLLM's do: ``/tokenize`` of a conversation and the
``usage.prompt_tokens`` of a chat request with it agree.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.fakes.openai_server import Answer, Route

# -- vLLM ----------------------------------------------------------------------------------

VLLM_MODEL = "Qwen/Qwen2.5-7B-Instruct"


class ToyVocab:
    """Words, spaces and punctuation as tokens; ids handed out as they are first seen."""

    BOS = "<s>"

    def __init__(self) -> None:
        self.ids: dict[str, int] = {self.BOS: 1}
        self.pieces: dict[int, str] = {1: self.BOS}

    def encode(self, text: str, bos: bool) -> list[int]:
        out = [1] if bos else []
        for piece in re.findall(r"<\|[a-z_]+\|>|\w+|\s+|[^\w\s]", text):
            if piece not in self.ids:
                self.ids[piece] = len(self.ids) + 1
                self.pieces[self.ids[piece]] = piece
            out.append(self.ids[piece])
        return out

    def decode(self, tokens: list[int]) -> str:
        return "".join(self.pieces[t] for t in tokens)


def vllm_render(body: dict[str, Any]) -> str:
    """The stand-in model's chat template: ``messages`` (and ``tools``) as one prompt."""
    out = ""
    if body.get("tools"):
        out += f"<|im_start|>tools\n{json.dumps(body['tools'], sort_keys=True)}<|im_end|>\n"
    for m in body["messages"]:
        content = m.get("content") or ""
        if m.get("tool_calls"):
            content += json.dumps(m["tool_calls"], sort_keys=True)
        out += f"<|im_start|>{m['role']}\n{content}<|im_end|>\n"
    if body.get("add_generation_prompt", True):
        out += "<|im_start|>assistant\n"
    return out


class VLLM:
    """vLLM serving one model with a ``max_model_len`` window; ``tokenizer`` False leaves
    out ``/tokenize`` (a proxy in front that passes ``/v1`` only)."""

    def __init__(self, max_model_len: int = 8192, *, tokenizer: bool = True) -> None:
        self.max_model_len = max_model_len
        self.vocab = ToyVocab()
        self.models = [{
            "id": VLLM_MODEL, "object": "model", "created": 1735142223, "owned_by": "vllm",
            "root": VLLM_MODEL, "parent": None, "max_model_len": max_model_len,
            "permission": [],
        }]
        self.routes: dict[tuple[str, str], Route] = {}
        if tokenizer:
            self.routes = {("POST", "/tokenize"): self.tokenize,
                           ("POST", "/detokenize"): self.detokenize}

    def chat_tokens(self, body: dict[str, Any]) -> list[int]:
        """A conversation's tokens as the model sees it (the template adds the BOS)."""
        return self.vocab.encode(self.vocab.BOS + vllm_render(body), bos=False)

    def tokenize(self, body: dict[str, Any]) -> Answer:
        if "messages" in body:
            tokens = self.chat_tokens(body)
            if body.get("add_special_tokens", False):
                tokens = [1, *tokens]
        else:
            tokens = self.vocab.encode(body["prompt"], bos=body.get("add_special_tokens", True))
        return 200, {"count": len(tokens), "max_model_len": self.max_model_len,
                     "tokens": tokens, "token_strs": None}

    def detokenize(self, body: dict[str, Any]) -> Answer:
        return 200, {"prompt": self.vocab.decode(body["tokens"])}

    def prompt_tokens(self, body: dict[str, Any]) -> int:
        """``usage.prompt_tokens`` of a chat request: the same template and tokenizer."""
        return len(self.chat_tokens(body))

    def unknown(self, method: str, path: str) -> Answer:
        return 404, {"detail": "Not Found"}

    def kind(self) -> dict[str, Any]:
        return {"models": self.models, "routes": self.routes, "unknown": self.unknown,
                "prompt_tokens": self.prompt_tokens}


# -- Ollama --------------------------------------------------------------------------------

OLLAMA_MODEL = "llama3.2:latest"
OLLAMA_VERSION = "0.12.6"


def ollama(
    *,
    loaded_context: int | None = None,
    num_ctx: int | None = None,
    capabilities: tuple[str, ...] = ("completion", "tools"),
) -> dict[str, Any]:
    """Ollama with :data:`OLLAMA_MODEL`: loaded with ``loaded_context`` tokens (None: not
    loaded, so not in ``/api/ps``); ``num_ctx`` set in its Modelfile or not."""
    details = {"parent_model": "", "format": "gguf", "family": "llama",
               "families": ["llama"], "parameter_size": "3.2B", "quantization_level": "Q4_K_M"}
    parameters = 'stop                           "<|eot_id|>"'
    if num_ctx is not None:
        parameters = f"num_ctx                        {num_ctx}\n{parameters}"
    show = {
        "modelfile": "# Modelfile generated by \"ollama show\"\nFROM llama3.2:latest\n",
        "parameters": parameters,
        "template": "{{ .Prompt }}",
        "details": details,
        "model_info": {"general.architecture": "llama", "llama.context_length": 131072},
        "capabilities": list(capabilities),
    }
    running = [] if loaded_context is None else [{
        "name": OLLAMA_MODEL, "model": OLLAMA_MODEL, "size": 3_400_000_000,
        "digest": "a80c4f17acd5", "details": details,
        "expires_at": "2026-11-27T20:00:00.000000000Z", "size_vram": 3_400_000_000,
        "context_length": loaded_context,
    }]

    def show_model(body: dict[str, Any]) -> Answer:
        if body.get("model") not in (OLLAMA_MODEL, "llama3.2"):
            return 404, {"error": f"model '{body.get('model')}' not found"}
        return 200, show

    return {
        "models": [{"id": OLLAMA_MODEL, "object": "model", "created": 1735142223,
                    "owned_by": "library"}],
        "routes": {
            ("GET", "/api/version"): lambda body: (200, {"version": OLLAMA_VERSION}),
            ("GET", "/api/ps"): lambda body: (200, {"models": running}),
            ("POST", "/api/show"): show_model,
        },
        "unknown": lambda method, path: (404, "404 page not found"),
    }


# -- LM Studio -----------------------------------------------------------------------------

LMSTUDIO_LOADED = "qwen2.5-7b-instruct"
LMSTUDIO_IDLE = "meta-llama-3.1-8b-instruct"
LMSTUDIO_PLAIN = "gemma-3-1b-it"


def lmstudio(loaded_context: int = 4096) -> dict[str, Any]:
    """LM Studio with three models: one loaded with ``loaded_context`` tokens and trained
    for tool use, one not loaded (tool use), one not loaded without capabilities."""
    common = {"object": "model", "type": "llm", "publisher": "lmstudio-community",
              "compatibility_type": "gguf", "quantization": "Q4_K_M"}
    studio = [
        {"id": LMSTUDIO_LOADED, **common, "arch": "qwen2", "state": "loaded",
         "max_context_length": 32768, "loaded_context_length": loaded_context,
         "capabilities": ["tool_use"]},
        {"id": LMSTUDIO_IDLE, **common, "arch": "llama", "state": "not-loaded",
         "max_context_length": 131072, "capabilities": ["tool_use"]},
        {"id": LMSTUDIO_PLAIN, **common, "arch": "gemma3", "state": "not-loaded",
         "max_context_length": 32768},
    ]
    return {
        "models": [{"id": m["id"], "object": "model", "owned_by": "organization_owner"}
                   for m in studio],
        "routes": {("GET", "/api/v0/models"): lambda body: (200, {"object": "list",
                                                                  "data": studio})},
        "unknown": lambda method, path: (
            200, {"error": f"Unexpected endpoint or method. ({method} {path})"}
        ),
    }


# -- a plain OpenAI-compatible server ------------------------------------------------------

def generic(entry: dict[str, Any]) -> dict[str, Any]:
    """Only ``/v1/models``, listing ``entry``; 404 to everything else."""
    return {"models": [{"object": "model", "owned_by": "someone", **entry}]}
