"""The report as a person sees it: headless Chromium (Debian's chromium, installed by
scripts/install-deps test) draws the page of a simulated 8-GPU run; the screenshot must not be
blank and each chart must have its axes, axis titles and legend.  `joules report --pdf` must
give a PDF that pdftoppm (poppler-utils) draws with ink on it.  The screenshot is kept as
build/.../report-screenshot.png for a person to look at."""
import os
import pathlib
import re
import shutil
import struct
import subprocess
import zlib

import pytest

from conftest import BUILD, TRAINER, joules

ROOT = pathlib.Path(__file__).resolve().parents[2]


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise AssertionError("Chromium is missing: run scripts/install-deps test")


def read_png(path):
    """(width, height, rows of RGB tuples) of an 8-bit RGB or RGBA PNG, non-interlaced."""
    data = pathlib.Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, [[tuple(r[x * bpp:x * bpp + 3]) for x in range(0, width, 4)]
                           for r in rows[::4]]


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    d = tmp_path_factory.mktemp("render")
    records = d / "run.jsonl"
    r = joules("wrap", "--backend", "sim", "--sim-gpus", "8", "--output", records, "--quiet",
               "--samples-interval", "100", "--tokens-per-step", "524288", "--total-steps", "30",
               "--predict-after", "5", "--", TRAINER, "--steps", "30", "--step-ms", "60",
               "--setup-ms", "500", "--eval-every", "10", "--eval-ms", "200", timeout=120)
    assert r.returncode == 0, r.stderr
    html = d / "run.html"
    r = joules("report", records, "-o", html, "-q")
    assert r.returncode == 0, r.stderr
    return d, records, html


def run_chromium(*args, timeout=120):
    argv = [chromium(), "--headless", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
            *args]
    if os.geteuid() == 0:
        argv.insert(1, "--no-sandbox")
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def test_every_chart_has_axes_titles_and_a_legend(page):
    _, _, html = page
    text = html.read_text()
    figures = re.findall(r"<figure class=\"chart\">(.*?)</figure>", text, re.S)
    assert len(figures) >= 6  # power, J/step, histogram, deviation, phases, predictions
    for f in figures:
        assert '<g class="axes">' in f
        assert f.count('class="axis-title"') == 2
        assert "<figcaption>" in f
    legends = [f for f in figures if '<g class="legend">' in f]
    power = next(f for f in figures if "power (W)" in f)
    assert '<g class="legend">' in power and all(f"GPU {i}<" in power for i in range(8))
    assert "time since the start (s)" in power
    # Every chart names what it draws: lines, bars, spans and markers.
    assert len(legends) == len(figures)


def test_screenshot_is_not_blank(page):
    d, _, html = page
    shot = d / "shot.png"
    profile = d / "profile"
    r = run_chromium(f"--user-data-dir={profile}", "--window-size=1000,3600",
                     f"--screenshot={shot}", html.as_uri())
    assert shot.exists(), r.stderr[-2000:]
    keep = BUILD / "report-screenshot.png"
    shutil.copy(shot, keep)
    width, height, pixels = read_png(shot)
    assert (width, height) == (1000, 3600)
    flat = [p for row in pixels for p in row]
    ink = sum(1 for p in flat if sum(p) < 600) / len(flat)
    colours = {p for p in flat if max(p) - min(p) > 60}
    assert ink > 0.02, f"the page is nearly blank ({ink:.3%} ink): {keep}"
    # The palette's blue and orange lines are drawn, not only black text.
    assert any(abs(p[0] - 0x00) < 40 and abs(p[1] - 0x72) < 40 and abs(p[2] - 0xB2) < 40
               for p in colours), keep
    assert any(abs(p[0] - 0xE6) < 40 and abs(p[1] - 0x9F) < 40 and abs(p[2] - 0x00) < 40
               for p in colours), keep


def test_pdf_prints_with_ink(page, tmp):
    _, records, _ = page
    pdf = tmp / "run.pdf"
    r = joules("report", records, "--pdf", pdf)
    assert r.returncode == 0, r.stderr
    assert pdf.read_bytes()[:5] == b"%PDF-"
    # --pdf alone writes no HTML next to it.
    assert sorted(p.name for p in tmp.iterdir()) == ["run.pdf"]
    pdftoppm = shutil.which("pdftoppm")
    assert pdftoppm, "pdftoppm is missing: run scripts/install-deps test (poppler-utils)"
    subprocess.run([pdftoppm, "-png", "-r", "40", "-f", "1", "-l", "2", str(pdf),
                    str(tmp / "page")], check=True, timeout=60)
    pages = sorted(tmp.glob("page*.png"))
    assert len(pages) == 2
    _, _, pixels = read_png(pages[0])
    flat = [p for row in pixels for p in row]
    assert sum(1 for p in flat if sum(p) < 600) / len(flat) > 0.01
