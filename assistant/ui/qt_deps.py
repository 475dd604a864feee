"""Does this Linux machine have the system libraries Qt's X11 (xcb) platform plugin needs?

Qt's own error names libxcb-cursor0 whichever is missing, so before Qt starts this names
each missing library with its Debian package (why and how: docs/ARCHITECTURE.md, "The
window"). Standard library only: ``python3 assistant/ui/qt_deps.py`` runs before any install.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

#: Library file name (soname) -> the Debian/Ubuntu package that provides it.
DEBIAN_PACKAGES: dict[str, str] = {
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxcb-xinput.so.0": "libxcb-xinput0",
    "libxcb-util.so.1": "libxcb-util1",
    "libxcb-glx.so.0": "libxcb-glx0",
    "libxcb.so.1": "libxcb1",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libX11.so.6": "libx11-6",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libOpenGL.so.0": "libopengl0",
    "libGLX.so.0": "libglx0",
    "libfontconfig.so.1": "libfontconfig1",
    "libfreetype.so.6": "libfreetype6",
    "libglib-2.0.so.0": "libglib2.0-0",
    "libgthread-2.0.so.0": "libglib2.0-0",
    "libdbus-1.so.3": "libdbus-1-3",
    "libICE.so.6": "libice6",
    "libSM.so.6": "libsm6",
}

#: Opened by Qt at run time (not linked), so ``ldd`` cannot see it.
RUNTIME_LIBRARIES = ("libxcb-cursor.so.0",)

#: Every library above but these is what the xcb plugin of PySide6 6.x links to (checked one
#: by one before PySide6 is installed, so ``make run`` can say what is missing before a long
#: first install).
NOT_LINKED = {
    *RUNTIME_LIBRARIES, "libxcb-xinput.so.0", "libxcb-glx.so.0", "libOpenGL.so.0",
    "libGLX.so.0", "libgthread-2.0.so.0", "libICE.so.6", "libSM.so.6",
}
XCB_PLUGIN_LINKS = tuple(lib for lib in DEBIAN_PACKAGES if lib not in NOT_LINKED)

_NOT_FOUND = re.compile(r"^\s*(\S+)\s+=>\s+not found", re.MULTILINE)


def xcb_plugin() -> Path | None:
    """PySide6's xcb platform plugin, found without importing Qt (None: not installed)."""
    spec = importlib.util.find_spec("PySide6")
    if spec is None or not spec.submodule_search_locations:
        return None
    for base in spec.submodule_search_locations:
        plugin = Path(base) / "Qt" / "plugins" / "platforms" / "libqxcb.so"
        if plugin.is_file():
            return plugin
    return None


def _ldd_missing(library: Path) -> list[str] | None:
    """Libraries ``library`` links to that the loader cannot find (None: no ldd here)."""
    ldd = shutil.which("ldd")
    if ldd is None:
        return None
    proc = subprocess.run(
        [ldd, str(library)], capture_output=True, text=True, check=False, timeout=60
    )
    return _NOT_FOUND.findall(proc.stdout)


def _dlopen_missing(name: str) -> bool:
    try:
        ctypes.CDLL(name)
    except OSError:
        return True
    return False


def missing_libraries(
    plugin: Path | None = None,
    *,
    ldd: Callable[[Path], list[str] | None] = _ldd_missing,
    dlopen_missing: Callable[[str], bool] = _dlopen_missing,
) -> list[str]:
    """The system libraries Qt's xcb plugin needs and cannot find, each named once.

    Without PySide6 installed (``plugin`` not found) the usual links are tried one by one.
    """
    plugin = plugin or xcb_plugin()
    found: list[str] = []
    if plugin is None:
        found.extend(lib for lib in XCB_PLUGIN_LINKS if dlopen_missing(lib))
    else:
        linked = ldd(plugin)
        if linked is None:  # no ldd: the loader's own error names the first one
            try:
                ctypes.CDLL(str(plugin))
            except OSError as exc:
                first = str(exc).split(":", 1)[0].strip()
                linked = [first] if first.startswith("lib") else []
            else:
                linked = []
        found.extend(linked)
    found.extend(lib for lib in RUNTIME_LIBRARIES if dlopen_missing(lib))
    return list(dict.fromkeys(found))


def packages_for(libraries: list[str]) -> list[str]:
    """The Debian packages that provide ``libraries`` (known ones only, each once)."""
    return list(dict.fromkeys(DEBIAN_PACKAGES[lib] for lib in libraries if lib in DEBIAN_PACKAGES))


def report(libraries: list[str]) -> str:
    """What to tell the user: which libraries are missing and the command that adds them."""
    if not libraries:
        return "Qt's system libraries are all present."
    packages = packages_for(libraries)
    unknown = [lib for lib in libraries if lib not in DEBIAN_PACKAGES]
    lines = [
        "The desktop window cannot start: Qt needs system libraries that are not installed:",
        *(f"  {lib}" + (f"  (package {DEBIAN_PACKAGES[lib]})" if lib in DEBIAN_PACKAGES else "")
          for lib in libraries),
    ]
    if packages:
        lines.append(f"Install them (Debian/Ubuntu): sudo apt-get install {' '.join(packages)}")
    if unknown:
        lines.append("Other systems: install the packages that provide " + ", ".join(unknown) + ".")
    lines.append("The terminal chat needs none of them: python -m assistant chat")
    return "\n".join(lines)


def will_use_xcb(environ: dict[str, str] | None = None) -> bool:
    """True when Qt would pick its X11 plugin (Linux, no other platform asked for)."""
    env = os.environ if environ is None else environ
    if not sys.platform.startswith("linux"):
        return False
    platform = env.get("QT_QPA_PLATFORM", "")
    if platform:
        return platform.split(":")[0].split(";")[0] == "xcb"
    return not env.get("WAYLAND_DISPLAY")


def main() -> int:
    if not will_use_xcb():
        return 0
    missing = missing_libraries()
    print(report(missing), file=sys.stderr if missing else sys.stdout)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
