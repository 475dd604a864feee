"""What an OpenAI-compatible server can do: its models, window, tokenizer and tool calls.

:func:`probe` asks the server a few cheap questions (none generates; a missing one is a quick
404); which it asks of which server: docs/ARCHITECTURE.md, "The server engine".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from assistant.llm.server_http import ServerError, ServerHTTP

ServerKind = Literal["llama.cpp", "llama-cpp-python", "vllm", "ollama", "lmstudio", "openai"]
#: How the server counts: llama.cpp and vLLM render and count a conversation themselves;
#: llama-cpp-python only tokenizes text.
Tokenizer = Literal["llama.cpp", "llama-cpp-python", "vllm"]

KIND_NAMES: dict[str, str] = {
    "llama.cpp": "llama.cpp server",
    "llama-cpp-python": "llama-cpp-python server",
    "vllm": "vLLM",
    "ollama": "Ollama",
    "lmstudio": "LM Studio",
    "openai": "OpenAI-compatible server",
}
_WINDOW_KEYS = ("context_length", "context_window", "max_context_length", "max_model_len")


@dataclass(frozen=True)
class ServerProfile:
    base_url: str
    kind: ServerKind
    #: Every model id ``/v1/models`` lists, and the one in use.
    models: tuple[str, ...]
    model: str
    #: The context window the server reports for the model (None: it does not say).
    window: int | None = None
    window_source: str = ""
    #: The server says the model has native tool calls (chat template capabilities).
    native_tools: bool = False
    tokenizer: Tokenizer | None = None
    #: The server renders a conversation with its template and counts it (llama.cpp's
    #: ``/apply-template``, vLLM's ``/tokenize`` of messages).
    server_renders: bool = False
    #: The model's chat template, where the server shows it (llama.cpp ``/props``).
    chat_template: str | None = None
    version: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def kind_name(self) -> str:
        return KIND_NAMES[self.kind]


def model_label(model_id: str) -> str:
    """A short name for a model id (llama-cpp-python uses the file path as the id)."""
    tail = re.split(r"[\\/]", model_id.rstrip("/\\"))[-1]
    return tail or model_id


def list_models(http: ServerHTTP) -> list[dict[str, Any]]:
    """``GET /v1/models``: the entries (each has an ``id``)."""
    got = http.get("/v1/models")
    data = got.get("data") if isinstance(got, dict) else got
    if not isinstance(data, list):
        raise ServerError(
            http.base_url, f"The server at {http.base_url} did not list its models at /v1/models."
        )
    return [m for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]


def choose_model(http: ServerHTTP, entries: list[dict[str, Any]], wanted: str) -> str:
    ids = [str(m["id"]) for m in entries]
    if not ids:
        raise ServerError(http.base_url, f"The server at {http.base_url} lists no models.")
    if not wanted:
        return ids[0]
    for candidate in (wanted, f"{wanted}:latest"):
        if candidate in ids:
            return candidate
    by_label = [i for i in ids if model_label(i) == wanted]
    if len(by_label) == 1:
        return by_label[0]
    shown = ", ".join(ids[:8]) + (", ..." if len(ids) > 8 else "")
    raise ServerError(
        http.base_url,
        f"The server at {http.base_url} has no model named {wanted!r}; it has: {shown}.",
    )


def probe(http: ServerHTTP, wanted_model: str = "") -> ServerProfile:
    """Find out what the server is and can do (see the module docstring)."""
    entries = list_models(http)
    model = choose_model(http, entries, wanted_model)
    entry = next(m for m in entries if m["id"] == model)
    base = ServerProfile(
        base_url=http.base_url, kind="openai", models=tuple(str(m["id"]) for m in entries),
        model=model,
    )

    props = http.try_request("/props")
    if isinstance(props, dict) and (
        "default_generation_settings" in props or "chat_template" in props
    ):
        hello = {"messages": [{"role": "user", "content": "hi"}]}
        rendered = http.try_request("/apply-template", hello)
        renders = isinstance(rendered, dict) and isinstance(rendered.get("prompt"), str)
        return replace(_llama_cpp(base, props, entry), server_renders=renders)
    tokens = http.try_request("/extras/tokenize", {"input": "Hello", "model": model})
    if isinstance(tokens, dict) and isinstance(tokens.get("tokens"), list):
        return replace(base, kind="llama-cpp-python", tokenizer="llama-cpp-python")
    if isinstance(entry.get("max_model_len"), int):
        counted = http.try_request("/tokenize", {"model": model, "prompt": "Hello"})
        has_tokenizer = isinstance(counted, dict) and isinstance(counted.get("tokens"), list)
        return replace(
            base, kind="vllm", tokenizer="vllm" if has_tokenizer else None,
            server_renders=has_tokenizer,
            window=int(entry["max_model_len"]), window_source="/v1/models max_model_len",
        )
    version = http.try_request("/api/version")
    if isinstance(version, dict) and isinstance(version.get("version"), str):
        return _ollama(http, base, str(version["version"]))
    studio = http.try_request("/api/v0/models")
    if isinstance(studio, dict) and isinstance(studio.get("data"), list):
        return _lmstudio(base, studio["data"])
    window, source = _window_in_entry(entry)
    return replace(base, window=window, window_source=source)


def _llama_cpp(base: ServerProfile, props: dict[str, Any], entry: dict[str, Any]) -> ServerProfile:
    settings = props.get("default_generation_settings")
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    if not isinstance(n_ctx, int):
        n_ctx = props.get("n_ctx")
    window = int(n_ctx) if isinstance(n_ctx, int) and n_ctx > 0 else None
    source = "/props n_ctx" if window else ""
    if window is None:
        window, source = _window_in_entry(entry)
    caps = props.get("chat_template_caps")
    native = isinstance(caps, dict) and bool(
        caps.get("supports_tool_calls") or caps.get("supports_tools")
    )
    template = props.get("chat_template")
    return replace(
        base, kind="llama.cpp", tokenizer="llama.cpp", window=window, window_source=source,
        native_tools=native, chat_template=template if isinstance(template, str) else None,
        version=str(props.get("build_info", "")),
    )


def _ollama(http: ServerHTTP, base: ServerProfile, version: str) -> ServerProfile:
    model = base.model
    window: int | None = None
    source = ""
    notes: list[str] = []
    ps = http.try_request("/api/ps")
    running = ps.get("models") if isinstance(ps, dict) else None
    for loaded in running if isinstance(running, list) else []:
        if not isinstance(loaded, dict):
            continue
        size = loaded.get("context_length")
        if loaded.get("name") == model and isinstance(size, int) and size > 0:
            window, source = size, "/api/ps context_length"
    show = http.try_request("/api/show", {"model": model})
    native = False
    if isinstance(show, dict):
        caps = show.get("capabilities")
        native = isinstance(caps, list) and "tools" in caps
        params = show.get("parameters")
        if window is None and isinstance(params, str):
            m = re.search(r"^\s*num_ctx\s+(\d+)", params, re.MULTILINE)
            if m:
                window, source = int(m.group(1)), "/api/show num_ctx"
    if window is None:
        notes.append(
            "Ollama did not say the context length it runs this model with, and it cuts "
            "longer prompts without an error: set the window in Settings, Engine."
        )
    return replace(
        base, kind="ollama", window=window, window_source=source, native_tools=native,
        version=version, notes=tuple(notes),
    )


def _lmstudio(base: ServerProfile, data: list[Any]) -> ServerProfile:
    entry = next((m for m in data if isinstance(m, dict) and m.get("id") == base.model), {})
    window: int | None = None
    source = ""
    for key in ("loaded_context_length", "max_context_length"):
        if isinstance(entry.get(key), int) and entry[key] > 0:
            window, source = int(entry[key]), f"/api/v0/models {key}"
            break
    caps = entry.get("capabilities")
    native = isinstance(caps, list) and "tool_use" in caps
    return replace(base, kind="lmstudio", window=window, window_source=source,
                   native_tools=native)


def _window_in_entry(entry: dict[str, Any]) -> tuple[int | None, str]:
    for key in _WINDOW_KEYS:
        if isinstance(entry.get(key), int) and entry[key] > 0:
            return int(entry[key]), f"/v1/models {key}"
    meta = entry.get("meta")
    if not isinstance(meta, dict):
        return None, ""
    # llama-server lists the window a slot runs with (n_ctx) beside the trained length.
    if isinstance(meta.get("n_ctx"), int) and meta["n_ctx"] > 0:
        return int(meta["n_ctx"]), "/v1/models meta.n_ctx"
    if isinstance(meta.get("n_ctx_train"), int):
        return int(meta["n_ctx_train"]), "/v1/models meta.n_ctx_train (trained length)"
    return None, ""
