"""The check that names missing Qt system libraries (and their Debian packages) before Qt
starts, and the command line's --help."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from assistant import __main__ as entry
from assistant.ui import qt_deps

REPO = Path(__file__).resolve().parents[2]

# ldd's output on a Debian 12 machine without libxcb-icccm4 and libxcb-keysyms1.
LDD_OUTPUT = """\
\tlinux-vdso.so.1 (0x00007ffd3a9f2000)
\tlibQt6XcbQpa.so.6 => /venv/PySide6/Qt/lib/libQt6XcbQpa.so.6 (0x00007f0c1c000000)
\tlibxcb-icccm.so.4 => not found
\tlibxcb-keysyms.so.1 => not found
\tlibxcb-cursor.so.0 => /lib/x86_64-linux-gnu/libxcb-cursor.so.0 (0x00007f0c1bf00000)
\tlibxcb-icccm.so.4 => not found
"""


def test_ldd_output_is_read_for_missing_libraries() -> None:
    assert qt_deps._NOT_FOUND.findall(LDD_OUTPUT) == [
        "libxcb-icccm.so.4",
        "libxcb-keysyms.so.1",
        "libxcb-icccm.so.4",
    ]


def test_missing_libraries_are_named_once_with_their_packages(tmp_path: Path) -> None:
    plugin = tmp_path / "libqxcb.so"
    plugin.write_bytes(b"")
    missing = qt_deps.missing_libraries(
        plugin,
        ldd=lambda _p: qt_deps._NOT_FOUND.findall(LDD_OUTPUT),
        dlopen_missing=lambda name: name == "libxcb-cursor.so.0",
    )
    assert missing == ["libxcb-icccm.so.4", "libxcb-keysyms.so.1", "libxcb-cursor.so.0"]
    text = qt_deps.report(missing)
    assert "sudo apt-get install libxcb-icccm4 libxcb-keysyms1 libxcb-cursor0" in text
    assert "libxcb-keysyms.so.1  (package libxcb-keysyms1)" in text
    assert "python -m assistant chat" in text


def test_before_pyside6_is_installed_the_usual_links_are_tried(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tried: list[str] = []

    def dlopen_missing(name: str) -> bool:
        tried.append(name)
        return name == "libxcb-keysyms.so.1"

    monkeypatch.setattr(qt_deps, "xcb_plugin", lambda: None)
    missing = qt_deps.missing_libraries(
        ldd=lambda _p: pytest.fail("no plugin: ldd is not run"), dlopen_missing=dlopen_missing
    )
    assert missing == ["libxcb-keysyms.so.1"]
    assert "libxcb-icccm.so.4" in tried and "libxcb-cursor.so.0" in tried


def test_unknown_library_gets_a_generic_hint() -> None:
    text = qt_deps.report(["libfoo.so.9"])
    assert "libfoo.so.9" in text and "apt-get" not in text


def test_every_checked_library_has_a_package() -> None:
    for lib in (*qt_deps.XCB_PLUGIN_LINKS, *qt_deps.RUNTIME_LIBRARIES):
        assert lib in qt_deps.DEBIAN_PACKAGES


def test_only_the_x11_plugin_is_checked() -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("Linux only")
    assert qt_deps.will_use_xcb({"DISPLAY": ":0"})
    assert qt_deps.will_use_xcb({"QT_QPA_PLATFORM": "xcb"})
    assert not qt_deps.will_use_xcb({"QT_QPA_PLATFORM": "offscreen"})
    assert not qt_deps.will_use_xcb({"WAYLAND_DISPLAY": "wayland-0"})


def test_the_window_is_not_started_when_a_library_is_missing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("QT_QPA_PLATFORM", "xcb")
    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.setattr(qt_deps, "missing_libraries", lambda: ["libxcb-icccm.so.4"])
    started: list[bool] = []
    import assistant.app

    monkeypatch.setattr(assistant.app, "run_gui", lambda _argv: started.append(True) or 0)
    assert entry.main([]) == 1
    assert not started
    err = capsys.readouterr().err
    assert "sudo apt-get install libxcb-icccm4" in err


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "QT_QPA_PLATFORM")}
    return subprocess.run(
        [sys.executable, "-m", "assistant", *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )


@pytest.mark.parametrize("args", [("--help",), ("-h",), ("gui", "--help"), ("help",)])
def test_help_prints_usage_and_opens_no_window(args: tuple[str, ...]) -> None:
    proc = _run(*args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: python -m assistant")
    for command in ("chat", "provision", "replay", "repair"):
        assert f"\n  {command}" in proc.stdout


def test_make_check_runs_with_the_standard_library_only() -> None:
    # The Makefile runs it with the system python3 before anything is installed.
    proc = subprocess.run(
        [sys.executable, "-S", "-I", str(REPO / "assistant" / "ui" / "qt_deps.py")],
        env={"QT_QPA_PLATFORM": "offscreen", "PATH": os.environ.get("PATH", "")},
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
