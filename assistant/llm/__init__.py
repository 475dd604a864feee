"""Models behind small protocols: the only package that imports llama.cpp.

:mod:`.base` declares what the rest of the app may use (:class:`~.base.PromptCounter`,
:class:`~.base.ChatGenerator`, :class:`~.base.LLMBackend`, the optional
:class:`~.base.KVCacheAware`); :mod:`.llama_backend` implements them with llama-cpp-python,
:mod:`.fake` with canned replies for tests. :mod:`.registry` (with ``registry.json``) and
:mod:`.provision` know the registered models; :mod:`.worker` is the one thread that owns a
loaded model.
"""
