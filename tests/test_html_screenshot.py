"""The HTML report in a real browser (issue 17): headless Chromium lays the page out at 800 and
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

from whichdevice.core.records import load_run
from whichdevice.present.suitepage import suite_report

DATA = Path(__file__).parent / "data"
CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no headless Chromium here (Debian/Ubuntu: apt-get install chromium)"
)

# Run in the page once it has laid out: how far the page and the fix table reach.
_MEASURE = """<script>
window.addEventListener("load", () => {
  const fit = [...document.querySelectorAll("table.fit")];
  const over = Math.max(0, ...fit.map(t => t.getBoundingClientRect().right - t.parentElement.getBoundingClientRect().right));
  const empty = [...document.querySelectorAll("th")].filter(th => !th.textContent.trim()).length;
  document.body.setAttribute("data-measure", JSON.stringify({page: document.documentElement.scrollWidth, fit: fit.length, over, empty}));
});
</script>"""


def _chromium(*args: str) -> str:
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.stdout


def _page(tmp_path: Path) -> Path:
    page = suite_report(load_run(DATA / "run_cpu_2core.json"), tmp_path / "run.png").page
    path = tmp_path / "run.html"
    path.write_text(page.replace("</body>", _MEASURE + "</body>"))
    return path


@pytest.mark.parametrize("width", [800, 1400])
def test_report_fits_the_window_in_a_real_browser(width, tmp_path):
    import json

    page = _page(tmp_path)
    dom = _chromium(f"--window-size={width},1600", "--virtual-time-budget=3000", "--dump-dom", page.as_uri())
    m = re.search(r'data-measure="([^"]*)"', dom)
    assert m, "the page's measuring script did not run"
    measure = json.loads(m.group(1).replace("&quot;", '"'))
    assert measure["page"] <= width, measure  # nothing runs off the right edge
    assert measure["fit"] >= 1 and measure["over"] <= 1, measure  # the fix table fits its box
    assert measure["empty"] == 0, measure  # no empty header column
    shot = tmp_path / f"run-{width}.png"
    _chromium(f"--window-size={width},1600", f"--screenshot={shot}", page.as_uri())
    w, h = struct.unpack(">II", shot.read_bytes()[16:24])  # the PNG's IHDR
    assert (w, h) == (width, 1600)
