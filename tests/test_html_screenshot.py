"""The HTML report in a real browser: headless Chromium lays the page out at 800 and
1400 px; the page must not run off the right edge, the fix table must fit its box, no header
cell may be empty, and a screenshot of that width must come out.

Chromium comes from the distribution (`apt-get install chromium`); where it is missing the
test is skipped and says so. benchmarks/screenshots.py writes the screenshots kept in
benchmarks/screenshots/.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from whichdevice.analysis import facade
from whichdevice.core.records import load_run
from whichdevice.present.suitepage import suite_report

DATA = Path(__file__).parent / "data"
CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no headless Chromium here (Debian/Ubuntu: apt-get install chromium)"
)

ROOT = Path(__file__).resolve().parents[1]
# Run in the page once it has laid out (benchmarks/page_measure.js, shared with
# benchmarks/screenshots.py): how far the page and the fix table reach, empty header cells,
# cells narrower than their longest word, the plots' scale.
_MEASURE = "<script>" + (ROOT / "benchmarks" / "page_measure.js").read_text() + "</script>"
READABLE_PX = 9.0  # the smallest plot text (plots.LEGEND_MIN_PT) must be at least this tall on screen


def _chromium(*args: str) -> str:
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.stdout


def _page(tmp_path: Path, record: Path = DATA / "run_cpu_2core.json") -> Path:
    page = suite_report(facade.suite(load_run(record)), tmp_path / "run.png").page
    path = tmp_path / "run.html"
    path.write_text(page.replace("</body>", _MEASURE + "</body>"))
    return path


def _png_dpi(data: bytes) -> float:
    """The dots per inch matplotlib wrote into the PNG (its pHYs chunk, pixels per metre)."""
    at = data.index(b"pHYs")
    (per_metre,) = struct.unpack(">I", data[at + 4 : at + 8])
    return per_metre * 0.0254


def _measure(page: Path, width: int) -> dict:
    import json

    dom = _chromium(f"--window-size={width},1600", "--virtual-time-budget=3000", "--dump-dom", page.as_uri())
    m = re.search(r'data-measure="([^"]*)"', dom)
    assert m, "the page's measuring script did not run"
    return json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))


@pytest.mark.parametrize("width", [800, 1400])
@pytest.mark.parametrize("record", ["run_cpu_2core.json", "h200/run.json"])
def test_report_fits_the_window_in_a_real_browser(width, record, tmp_path):
    """The whole page of a CPU run and of the H200 run: nothing runs
    off the right edge, the fix table fits its box, no empty header, no cell narrower than its
    longest word (the "Training runs" first column was 2-4 letters wide at 800 px), the plots'
    smallest text readable, and a screenshot of the whole page comes out."""
    import base64

    from whichdevice.present.plots import LEGEND_MIN_PT

    page = _page(tmp_path, DATA / record)
    measure = _measure(page, width)
    assert measure["page"] <= width, measure  # nothing runs off the right edge
    assert measure["fit"] >= 1 and measure["over"] <= 1, measure  # the fix table fits its box
    assert measure["empty"] == 0, measure  # no empty header column
    assert measure["narrow"] == [], measure["narrow"]  # no word cut inside a cell
    pngs = [base64.b64decode(b) for b in re.findall(r'src="data:image/png;base64,([^"]+)"', page.read_text())]
    assert len(pngs) == len(measure["images"]) >= 1
    for png, shown in zip(pngs, measure["images"]):
        smallest_px = LEGEND_MIN_PT / 72 * _png_dpi(png) * shown["scale"]
        assert smallest_px >= READABLE_PX, (shown, smallest_px)
    shot = tmp_path / f"run-{width}.png"
    _chromium(f"--window-size={width},{measure['height']}", f"--screenshot={shot}", page.as_uri())
    w, h = struct.unpack(">II", shot.read_bytes()[16:24])  # the PNG's IHDR
    assert (w, h) == (width, measure["height"])
