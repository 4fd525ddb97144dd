"""A real campaign's HTML report in headless Chromium: it renders, links resolve, a screenshot."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import zlib
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

import pytest

from guestbench import proc

pytestmark = pytest.mark.integration
GUESTBENCH = [sys.executable, "-m", "guestbench"]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_TIMEOUT_S = 120
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def guestbench(*args: str, cwd: Path, timeout_s: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([*GUESTBENCH, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout_s)


def chromium(tmp_path: Path, *args: str) -> proc.Completed:
    """Headless Chromium in its own profile; proc.run kills its whole group on a timeout.
    Its stderr (dbus, GPU noise) is not judged."""
    return proc.run([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu",
                     "--no-first-run", f"--user-data-dir={tmp_path / 'chromium-profile'}",
                     *args], timeout_s=CHROMIUM_TIMEOUT_S)


class Links(HTMLParser):
    """What the test checks in the rendered DOM: ids, hrefs, tables, SVGs and their titles."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.hrefs: list[str] = []
        self.tags: dict[str, int] = {}
        self.h3: list[str] = []
        self.svg_titles: list[str] = []
        self._open: list[str] = []
        self._text: list[str] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if attributes.get("id"):
            self.ids.add(attributes["id"])
        if tag == "a" and attributes.get("href") is not None:
            self.hrefs.append(attributes["href"])
        self._open.append(tag)
        self._text = []

    def handle_endtag(self, tag):
        if tag == "h3":
            self.h3.append("".join(self._text))
        if tag == "title" and "svg" in self._open:
            self.svg_titles.append("".join(self._text))
        while self._open and self._open.pop() != tag:
            pass

    def handle_data(self, data):
        self._text.append(data)


def png_size_and_variety(path: Path) -> tuple[int, int, int]:
    """(width, height, distinct byte values in the image data): a blank page has few."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    position, pixels = 8, b""
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position:position + 8])
        if kind == b"IDAT":
            pixels += data[position + 8:position + 8 + length]
        position += 12 + length
    return width, height, len(set(zlib.decompress(pixels)))


@pytest.fixture(scope="module")
def browser() -> str:
    if CHROMIUM is None:
        reason = "no chromium binary on PATH (apt-get install chromium)"
        print(f"skipped: {reason}")
        pytest.skip(reason)
    return CHROMIUM


def test_report_renders_in_chromium(tmp_path, available, browser):
    available("native")
    database = f"sqlite:///{tmp_path / 'r.sqlite'}"
    run = guestbench("run", "--env", "native,namespace", "--workload", "getpid,stream",
                     "--repeat", "3", "--db", database, "--logs", str(tmp_path / "logs"),
                     "--quiet", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    page = tmp_path / "report" / "report.html"
    page.parent.mkdir()
    made = guestbench("report", "--db", database, "--format", "html", "-o", str(page),
                      cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    dom = chromium(tmp_path, "--dump-dom", page.as_uri())
    assert dom.returncode == 0 and "</html>" in dom.stdout, dom.stderr[-2000:]
    parsed = Links()
    parsed.feed(dom.stdout)
    assert parsed.tags.get("table", 0) >= 5 and parsed.tags.get("svg", 0) >= 2
    assert any(title.startswith("Measured: median") for title in parsed.h3)
    assert any(title.startswith("Basic costs") for title in parsed.h3)
    assert any(title.startswith("STREAM: bandwidth") for title in parsed.h3)
    assert any(title.startswith("getpid: time_per_op") for title in parsed.svg_titles)
    assert any(title.startswith("stream: triad_bandwidth") for title in parsed.svg_titles)
    files = [href for href in parsed.hrefs if not href.startswith("#")]
    anchors = [href for href in parsed.hrefs if href.startswith("#")]
    assert len(files) >= 12 * 2 and len(anchors) >= 20  # a folder and files per run
    for href in anchors:
        assert href[1:] in parsed.ids, f"{href} names no element"
    for href in files:
        assert not href.startswith(("http:", "https:", "//")), href
        target = urlparse(urljoin(page.as_uri(), href))
        assert target.scheme == "file" and Path(unquote(target.path)).exists(), href
    assert all(href.startswith("../logs/") for href in files)  # relative: they share tmp_path

    screenshot = tmp_path / "report.png"
    shot = chromium(tmp_path, f"--screenshot={screenshot}", "--window-size=1400,3000",
                    page.as_uri())
    assert shot.returncode == 0 and screenshot.is_file(), shot.stderr[-2000:]
    artifacts = os.environ.get("GUESTBENCH_ARTIFACTS")
    if artifacts:
        Path(artifacts).mkdir(parents=True, exist_ok=True)
        shutil.copy(screenshot, Path(artifacts) / "report.png")
    width, height, variety = png_size_and_variety(screenshot)
    assert (width, height) == (1400, 3000)
    assert screenshot.stat().st_size > 50_000 and variety > 100, "the screenshot looks blank"
