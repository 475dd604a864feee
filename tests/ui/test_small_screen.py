"""At QT_SCALE_FACTOR=1.5 on a 1440x900 screen (960x600 logical) the whole window, input and
status bar included, is on the screen, even with a geometry saved on a larger screen."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCREEN = {
    "screens": [
        {"name": "laptop", "x": 0, "y": 0, "width": 1440, "height": 900,
         "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}
    ]
}


def test_the_window_fits_a_small_screen_at_scale_1_5(tmp_path: Path, artifacts_dir: Path) -> None:
    config = tmp_path / "screen.json"
    config.write_text(json.dumps(SCREEN), encoding="utf-8")
    shot = artifacts_dir / "small-screen-scale-1.5.png"
    env = dict(os.environ)
    env.update(
        QT_QPA_PLATFORM=f"offscreen:configfile={config}",
        QT_SCALE_FACTOR="1.5",
        ASSISTANT_HOME=str(tmp_path / "home"),
        PYTHONPATH=str(REPO),  # this source tree, not another install of the package
    )
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("small_screen_app.py")), str(shot)],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["scale"] == 1.5
    assert result["available"] == [0, 0, 960, 600]
    assert result["fits"], result
    assert result["input_visible"] and result["status_visible"], result
    assert result["welcome"] and result["context"], result
    assert shot.stat().st_size > 5_000
