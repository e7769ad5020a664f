"""Screenshots of the run report at 800 and 1400 px (issue 17), with headless Chromium.

    python benchmarks/screenshots.py RECORD.json [OUT_DIR [NAME]]

Renders RECORD's report (plots included) into a temporary folder with `whichdevice report`,
then writes OUT_DIR/NAME-800.png and OUT_DIR/NAME-1400.png (default benchmarks/screenshots/,
NAME the record's experiment).
Needs `chromium` on PATH (Debian: apt-get install chromium).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SIZES = ((800, 2000), (1400, 1300))  # width x height: the first screen and what follows


def main() -> None:
    record = Path(sys.argv[1]).resolve()
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).parent / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    name = sys.argv[3] if len(sys.argv) > 3 else json.loads(record.read_text())["experiment"]
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("chromium not found: apt-get install chromium")
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "run.json"
        copy.write_bytes(record.read_bytes())
        subprocess.run([sys.executable, "-m", "whichdevice", "report", str(copy)], check=True, capture_output=True)
        page = copy.with_suffix(".html")
        for w, h in SIZES:
            shot = out / f"{name}-{w}.png"
            subprocess.run(
                [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                 f"--window-size={w},{h}", f"--screenshot={shot}", page.as_uri()],
                check=True,
                capture_output=True,
            )  # fmt: skip
            print(shot)


if __name__ == "__main__":
    main()
