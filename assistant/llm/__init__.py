"""Models behind small protocols: the only package that imports llama.cpp.

:mod:`.base` declares what the rest of the app may use (:class:`~.base.PromptCounter`,
:class:`~.base.ChatGenerator`, :class:`~.base.LLMBackend`, the optional
:class:`~.base.KVCacheAware`); :mod:`.llama_backend` implements them with llama-cpp-python
(and tests with ``tests/fakes/scripted.py``). :mod:`.registry` (with ``registry.json``) and
:mod:`.provision` know the registered models; :mod:`.worker` is the one thread that owns a
loaded model.
"""
