"""Screenshots of the whole run report at 800 and 1400 px (44), with headless Chromium.

    python benchmarks/screenshots.py RECORD.json [OUT_DIR [NAME]]

Renders RECORD's report (plots included) into a temporary folder with `whichdevice report`,
measures the page at each width (benchmarks/page_measure.js: its height, cells narrower than their
longest word, the plots' scale, printed), then writes OUT_DIR/NAME-800.png and OUT_DIR/NAME-1400.png
of the whole page (default benchmarks/screenshots/, NAME the record's experiment).
Needs `chromium` on PATH (Debian: apt-get install chromium).
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

WIDTHS = (800, 1400)
MEASURE = Path(__file__).with_name("page_measure.js")


def _measure(chromium: str, page: Path, width: int) -> dict:
    """The page's own measurement at this width (the script's data-measure attribute)."""
    probe = page.with_name("measure.html")
    probe.write_text(page.read_text().replace("</body>", f"<script>{MEASURE.read_text()}</script></body>"))
    dom = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--window-size={width},1600", "--virtual-time-budget=3000", "--dump-dom", probe.as_uri()],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    found = re.search(r'data-measure="([^"]*)"', dom)
    if found is None:
        sys.exit(f"{page}: the measuring script did not run")
    return json.loads(html.unescape(found.group(1)))


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
        for w in WIDTHS:
            m = _measure(chromium, page, w)
            h = m["height"]
            print(f"{w} px: page {m['page']} px wide, {h} px tall; narrow cells {m['narrow'] or 'none'}; "
                  f"plots scaled {[round(i['scale'], 2) for i in m['images']]}")  # fmt: skip
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
