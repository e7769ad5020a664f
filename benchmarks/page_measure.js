// Run in a whichdevice report once it has laid out (benchmarks/screenshots.py, tests/test_html_screenshot.py):
// how far the page and the fix table reach, empty header cells, cells narrower than their longest
// word (a word: text between spaces, up to LONG characters; a longer one, a line of code or a
// path, may wrap), and how much each plot is scaled down. The result is the body's data-measure
// attribute.
const LONG = 40;
window.addEventListener("load", () => {
  const fit = [...document.querySelectorAll("table.fit")];
  const over = Math.max(0, ...fit.map(t => t.getBoundingClientRect().right - t.parentElement.getBoundingClientRect().right));
  const empty = [...document.querySelectorAll("th")].filter(th => !th.textContent.trim()).length;
  const ctx = document.createElement("canvas").getContext("2d");
  const narrow = [];
  for (const cell of document.querySelectorAll("td, th")) {
    const s = getComputedStyle(cell);
    ctx.font = `${s.fontStyle} ${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
    const words = cell.textContent.split(/\s+/).filter(w => w && w.length <= LONG);
    if (!words.length) continue;
    const longest = words.reduce((a, w) => (ctx.measureText(w).width > ctx.measureText(a).width ? w : a));
    const room = cell.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight);
    if (ctx.measureText(longest).width > room + 1) narrow.push(`${longest} (${Math.round(room)} px)`);
  }
  const images = [...document.querySelectorAll("img")].map(i => ({alt: i.alt, scale: i.width / i.naturalWidth}));
  document.body.setAttribute("data-measure", JSON.stringify({
    page: document.documentElement.scrollWidth, height: document.documentElement.scrollHeight,
    fit: fit.length, over, empty, narrow, images,
  }));
});
