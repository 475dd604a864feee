"""Builders for the benchmark tests: scripted backends and tiny hand-made workloads."""

from __future__ import annotations

from bench.workloads import ChatStep, Fact, ToolStep, Workload
from tests.fakes.scripted import ScriptedBackend

REPLY = "Here is a short answer."


def scripted(window: int = 8_192, reply: str = REPLY) -> ScriptedBackend:
    """A scripted model whose trained length is ``window`` (so the policy uses it)."""
    return ScriptedBackend(window=window, trained_context=window, default_reply=reply)


def chat_workload(turns: int, words: int = 150, name: str = "T") -> Workload:
    """``turns`` chat messages of about ``words`` words each; facts planted in turn 1."""
    steps: list[ChatStep | ToolStep] = [
        ChatStep("Never use tabs for indentation. The port is 4321. " + "filler " * words)
    ]
    steps += [ChatStep(f"Turn {i}: " + "lorem ipsum " * (words // 2)) for i in range(2, turns + 1)]
    facts = [
        Fact("constraint", "Never use tabs", "never use tabs", "Tabs or spaces?", ("space",), 1),
        Fact("number", "port 4321", "4321", "Which port?", ("4321",), 1),
    ]
    return Workload(name, "test chat", "local", 0, False, 8_192, steps, facts)


def tool_workload(turns: int, lines: int = 200) -> Workload:
    """Each turn reads its own file of ``lines`` lines (verbatim results), then asks."""
    steps: list[ChatStep | ToolStep] = []
    for i in range(1, turns + 1):
        path = f"src/f{i}.py"
        body = "\n".join(f"value_{i}_{n} = {n} * 7" for n in range(lines))
        steps.append(ToolStep(f"call_{i}", "read_file", {"path": path}, f"{path}\n{body}",
                              live=False))
        steps.append(ChatStep(f"What is in {path}? Never use tabs." if i == 1 else
                              f"What is in {path}?"))
    facts = [Fact("path_read", "src/f1.py", "src/f1.py", "First file?", ("src/f1.py",), 1)]
    return Workload("TT", "test tools", "local", 0, False, 8_192, steps, facts)
