"""The HTML report (``kbconform run --html``): one self-contained page from a report-v1.

The unit tests read the page with the standard library's HTML parser; the browser tests open
the page a real run wrote in headless Chromium (``/usr/bin/chromium``, which
``tests/install-browser`` installs), read back the DOM it built and look at its screenshot.
Every hostile-text check has a control: the same check finds the markup when it is not escaped.
"""

from __future__ import annotations

import copy
import json
import os
import shlex
import struct
import subprocess
import zlib
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy
import pytest

from kbconform import report as reports
from kbconform.cli import main
from kbconform.cli.writers._html import MAX_TEXT, render, text
from kbconform.report import OWASP
from tests.plugin.test_report import TINY_MANIFEST, _build

HOSTILE = "<script>alert(1)</script>"
#: The tiny manifest with hostile text in its names and a declined feature.
MANIFEST: dict[str, Any] = {
    **TINY_MANIFEST,
    "adapter": {"name": 'tiny "quoted" <b>adapter</b>', "version": "1"},
    "backend": {"name": "memory", "version": "2"},
    "features": {**TINY_MANIFEST["features"], "revision-boundary": "no git history <here>"},
}
FAILING_MUTANT = "kbconform_reference.mutants:by_name.lenient_ingest"  # fails contract-01 at L0
CHROMIUM = Path("/usr/bin/chromium")
BROWSER_TIMEOUT = 90  # seconds: a browser that hangs fails the test instead of hanging it


def _report(**changes: str) -> dict[str, Any]:
    """A report of the tiny manifest at L4, each test passing unless ``changes`` says otherwise
    (a status, or ``status:reason``)."""
    results = []
    for entry in reports.expected(MANIFEST, "L4"):
        status, _, reason = changes.get(entry["id"], "pass").partition(":")
        results.append({**entry, "status": status, **({"reason": reason} if reason else {})})
    return _build(results, manifest=copy.deepcopy(MANIFEST))  # a test may change its report's manifest


class _Page(HTMLParser):
    """What a browser would build from a page, roughly: every element's tag, the text, and the
    ids of the sections in order."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: Counter[str] = Counter()
        self.sections: list[str] = []
        self.chunks: list[str] = []
        self.attributes: list[tuple[str, str | None]] = []
        self.feed(page)
        self.close()
        self.text = "".join(self.chunks)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] += 1
        self.attributes += attrs
        if tag == "section":
            self.sections.append(dict(attrs).get("id") or "")

    def handle_data(self, data: str) -> None:
        self.chunks.append(data)


def _section(page: str, name: str) -> _Page:
    """The text and elements of the section with id ``name``."""
    start = page.index(f'id="{name}"')
    return _Page(page[start : page.index("</section>", start)])


def test_the_page_puts_verdict_and_causes_first_then_failures_then_every_test() -> None:
    """The causes follow the verdict; failing tests come before the list of every test, each
    with its message; the verdict counts them; the manifest shows declared and declined
    features and the redacted config."""
    report = _report(**{"backup-01": "fail", "contract-02": "error:did not run: the run stopped"})
    report["manifest"]["stores"] = [{"name": "<b>main</b>"}]  # a declaration of another profile
    page = render(report)
    parsed = _Page(page)
    assert parsed.sections == ["verdict", "causes", "manifest", "failures", "run", "tests"]
    causes = _section(page, "causes").text
    assert "1 cause from 1 failure" in causes  # contract-02 did not run: no cause of the backend's
    assert "backup-01" in causes
    assert "did not run" not in causes
    verdict = _section(page, "verdict").text
    assert "No level earned" in verdict
    assert (
        f"{len(report['tests']) - 2} passed, 2 failing, 0 skipped of {len(report['tests'])} tests" in verdict
    )
    manifest = _section(page, "manifest").text
    assert 'tiny "quoted" <b>adapter</b> 1' in manifest
    assert "memory 2" in manifest
    assert "declined: no git history <here>" in manifest
    assert "shared namespacenone (declined)" in manifest
    assert "read facadesquery, get, list" in manifest
    assert 'stores[{"name": "<b>main</b>"}]' in manifest  # shown under its own name, as text
    assert "stores" not in _section(render(_report()), "manifest").text  # control
    assert "[redacted]" in manifest
    assert "s3cret" not in page
    assert "abc" not in manifest
    failures = _section(page, "failures").text
    assert "Failures (2)" in failures
    assert "backup-01" in failures
    assert "did not run: the run stopped" in failures
    assert "The report records no message for this test" in failures  # backup-01 carries none
    assert "contract-01" not in failures  # control: a passing test is not a failure
    failed = next(t for t in report["tests"] if t["id"] == "backup-01")
    said = f"rule schemas/{failed['rule']}; guide docs/adapter-guide.md#{failed['guide']}; {OWASP}"
    assert said in failures
    assert f"run it again{reports.rerun_command(report, failed)}" in failures
    assert "--only backup-01 --seed" in reports.rerun_command(report, failed)
    assert "replay its exchanges" not in failures  # no transcript recorded: no replay offered
    every = _section(page, "tests")
    assert f"Every test ({len(report['tests'])})" in every.text
    assert all(test["id"] in every.text for test in report["tests"])
    assert every.tags["details"] == 1  # collapsed: a reader opens it
    assert ("open", None) not in every.attributes


def test_a_report_without_failures_says_so_and_lists_the_passes() -> None:
    """The control: nothing failing, the highest level earned, every test shown as passing."""
    report = _report()
    page = render(report)
    top = reports.earned(report)
    assert top is not None
    assert f"Highest level earned: {top}" in _section(page, "verdict").text
    assert 'class="verdict pass"' in page
    assert "causes" not in _Page(page).sections  # nothing failed: no cause
    assert "No failures: every test passed or was declined." in _section(page, "failures").text
    every = _section(page, "tests").text
    assert all(test["id"] in every for test in report["tests"])
    assert page.count('<span class="status pass">') == len(report["tests"])
    assert '<span class="status fail">' not in page
    failing = render(_report(**{"contract-01": "fail"}))
    assert 'class="verdict fail"' in failing  # control: one failure turns the verdict red
    assert failing.count('<span class="status fail">') == 2  # in the failures and in every test
    assert "No failures" not in failing


@pytest.mark.parametrize(
    "message",
    [
        HOSTILE,
        '"><img src=x onerror=alert(1)>',
        "</pre></div></section><script>alert(1)</script>",
    ],
)
def test_a_hostile_message_is_shown_as_text_never_as_markup(message: str) -> None:
    """Messages, names and reasons are escaped: the page has no script or img element, and the
    message reads back as the same text."""
    report = _report(**{"backup-01": f"error:{message}"})
    report["manifest"]["adapter"]["name"] = message
    page = render(report)
    parsed = _Page(page)
    assert parsed.tags["script"] == parsed.tags["img"] == 0
    assert not [name for name, _ in parsed.attributes if name.startswith("on")]
    assert message in _section(page, "failures").text
    assert message in _section(page, "manifest").text
    assert parsed.sections == ["verdict", "manifest", "failures", "run", "tests"]  # an error that did not run
    raw = page.replace(f"<pre>{text(message)}</pre>", f"<pre>{message}</pre>")
    assert raw != page
    spoiled = _Page(raw)  # control: the same checks find the markup when it is not escaped
    assert spoiled.tags["script"] + spoiled.tags["img"] > 0


def test_colour_sequences_are_dropped_control_characters_shown_and_long_text_cut() -> None:
    """A message from a terminal reads as its words; a long one is cut with the count of the rest."""
    coloured = "\x1b[31mred\x1b[0m and \x1b]8;;http://x\x07link\x1b]8;;\x07 bell\x07 nul\x00"
    long = "x" * (MAX_TEXT + 1234)
    page = render(_report(**{"backup-01": f"fail:{coloured}", "backup-02": f"fail:{long}"}))
    failures = _section(page, "failures").text
    assert "red and link bell\\x07 nul\\x00" in failures
    assert "\x1b" not in page
    assert "\x07" not in page
    assert "x" * MAX_TEXT in failures
    assert "x" * (MAX_TEXT + 1) not in failures
    assert "1,234 more characters in the JSON report" in failures
    assert "more characters" not in render(_report(**{"backup-02": f"fail:{'x' * MAX_TEXT}"}))  # control


def test_the_page_loads_nothing_from_anywhere() -> None:
    """Inline style only: no script, link, image, frame or URL to fetch, and a policy that
    forbids them."""
    page = render(_report(**{"backup-01": "fail"}))
    parsed = _Page(page)
    assert not {"script", "link", "img", "iframe", "object", "embed"} & set(parsed.tags)
    assert not [name for name, _ in parsed.attributes if name in ("src", "href", "action")]
    assert "url(" not in page
    assert "@import" not in page
    assert "default-src 'none'" in page
    assert parsed.tags["style"] == 1


# -- in a real browser ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """A real run of a mutant that fails contract-01 at L0 (about two seconds): its report and
    the HTML page ``--html`` wrote."""
    folder = tmp_path_factory.mktemp("html")
    report, page = folder / "report.json", folder / "report.html"
    run = ["run", "--adapter", FAILING_MUTANT, "--level", "L0", "--seed", "7"]
    code = main([*run, "--report", str(report), "--html", str(page)])
    assert code == 1
    return json.loads(report.read_text(encoding="utf-8")), page


@pytest.fixture(scope="module")
def chromium() -> Path:
    """Debian's Chromium; missing, the test fails under CI (the CI variable is set) and is
    skipped elsewhere."""
    if not CHROMIUM.exists():
        why = f"{CHROMIUM} is missing: run tests/install-browser (as root) to install Chromium"
        if os.environ.get("CI"):
            pytest.fail(f"{why}; CI must run the browser tests")
        pytest.skip(why)
    return CHROMIUM


def _chromium(tmp_path: Path, page: Path, *args: str) -> str:
    """Run headless Chromium on ``page`` with a deadline; its standard output."""
    profile = tmp_path / f"chromium-profile-{len(list(tmp_path.iterdir()))}"
    command = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        *args,
        page.resolve().as_uri(),
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=BROWSER_TIMEOUT, check=False, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _pixels(png: bytes, rows: int | None = None) -> tuple[int, int, Counter[tuple[int, int, int]]]:
    """Width, height and how many pixels of each RGB colour an 8-bit, non-interlaced RGB or
    RGBA PNG has (in its first ``rows`` rows: pure Python unfilters some rows slowly)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    offset, chunks = 8, []
    while offset < len(png):
        (length,) = struct.unpack(">I", png[offset : offset + 4])
        chunks.append((png[offset + 4 : offset + 8], png[offset + 8 : offset + 8 + length]))
        offset += 12 + length
    header = next(body for kind, body in chunks if kind == b"IHDR")
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert (depth, colour, interlace) in ((8, 2, 0), (8, 6, 0)), f"unsupported PNG {depth, colour, interlace}"
    size = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    assert len(raw) == height * (width * size + 1), "the image data is not the size the header says"
    lines = numpy.frombuffer(raw, dtype=numpy.uint8).reshape(height, width * size + 1)
    shown = height if rows is None else min(rows, height)
    image = numpy.zeros((shown, width * size), dtype=numpy.uint8)
    previous = numpy.zeros(width * size, dtype=numpy.uint8)
    for y in range(shown):
        kind, line = lines[y, 0], lines[y, 1:]
        if kind == 0:
            row = line.copy()
        elif kind == 1:  # Sub: a running sum per channel
            row = (line.reshape(width, size).cumsum(axis=0, dtype=numpy.uint64) % 256).astype(numpy.uint8)
            row = row.reshape(-1)
        elif kind == 2:  # Up
            row = line + previous
        else:  # Average or Paeth: byte by byte
            row = bytearray(line.tobytes())
            for x in range(width * size):
                left = row[x - size] if x >= size else 0
                up, corner = int(previous[x]), int(previous[x - size]) if x >= size else 0
                if kind == 3:
                    row[x] = (row[x] + (left + up) // 2) & 0xFF
                else:
                    guess = left + up - corner
                    near = min(
                        (abs(guess - left), left),
                        (abs(guess - up), up),
                        (abs(guess - corner), corner),
                        key=lambda pair: pair[0],
                    )
                    row[x] = (row[x] + near[1]) & 0xFF
            row = numpy.frombuffer(bytes(row), dtype=numpy.uint8)
        image[y] = previous = row
    rgb = image.reshape(shown, width, size)[:, :, :3].reshape(-1, 3).astype(numpy.uint32)
    packed, counts = numpy.unique(rgb[:, 0] << 16 | rgb[:, 1] << 8 | rgb[:, 2], return_counts=True)
    return (
        width,
        height,
        Counter(
            {
                (int(v) >> 16, int(v) >> 8 & 0xFF, int(v) & 0xFF): int(n)
                for v, n in zip(packed, counts, strict=True)
            }
        ),
    )


def _png(width: int, height: int, colour: tuple[int, int, int]) -> bytes:
    """A one-colour RGB PNG (the screenshot reader's control)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = b"".join(b"\x00" + bytes(colour) * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def _near(pixel: tuple[int, ...], colour: tuple[int, int, int]) -> bool:
    return all(abs(a - b) <= 12 for a, b in zip(pixel, colour, strict=True))


RED, GREEN = (0xCF, 0x22, 0x2E), (0x1A, 0x7F, 0x37)  # the verdict's border, failing and passing
TOP = 500  # rows of a screenshot read: the verdict and the manifest


def test_the_screenshot_reader_sees_one_colour_in_a_blank_image() -> None:
    """The control for the screenshot checks: a one-colour PNG reads as one colour, its size kept."""
    assert _pixels(_png(7, 5, (255, 255, 255))) == (7, 5, Counter({(255, 255, 255): 35}))
    assert _pixels(_png(3, 2, RED)) == (3, 2, Counter({RED: 6}))


def test_chromium_renders_a_real_runs_page_with_its_verdict_and_failures(
    chromium: Path, real_run: tuple[dict[str, Any], Path], tmp_path: Path
) -> None:
    """The page of a real failing run: the DOM Chromium built holds the verdict, the manifest and
    the failing test; its screenshot is the full window, many colours, with the red verdict."""
    report, page = real_run
    shot = tmp_path / "report.png"
    # one start of Chromium: the DOM it built, and its screenshot of the same page
    dom = _chromium(tmp_path, page, "--dump-dom", f"--screenshot={shot}", "--window-size=1280,2000")
    assert "No level earned" in _section(dom, "verdict").text
    assert "3 passed, 1 failing, 0 skipped of 4 tests" in _section(dom, "verdict").text
    assert report["manifest"]["adapter"]["name"] in _section(dom, "manifest").text
    failures = _section(dom, "failures").text
    assert "contract-01" in failures
    failed = next(t for t in report["tests"] if t["id"] == "contract-01")
    assert reports.rerun_command(report, failed) in failures
    assert f"kbconform replay REPORT.json --test contract-01 --adapter {FAILING_MUTANT}" in failures
    assert "contract-02" not in _section(dom, "failures").text  # control: a pass is not listed
    width, height, colours = _pixels(shot.read_bytes(), TOP)
    assert (width, height) == (1280, 2000)
    assert len(colours) > 50, "the screenshot is (nearly) one colour"
    assert colours.most_common(1)[0][1] < width * TOP * 0.95
    assert any(_near(pixel, RED) for pixel in colours)
    assert not any(_near(pixel, GREEN) for pixel in colours)
    passing = copy.deepcopy(report)  # control: the same run, passing, shows a green verdict
    for test in passing["tests"]:
        test["status"] = "pass"
    passing["levels"] = reports.levels(passing["tests"], passing["manifest"])
    (tmp_path / "passing.html").write_text(render(passing), encoding="utf-8")
    _chromium(tmp_path, tmp_path / "passing.html", f"--screenshot={shot}", "--window-size=1280,2000")
    colours = _pixels(shot.read_bytes(), TOP)[2]
    assert any(_near(pixel, GREEN) for pixel in colours)
    assert not any(_near(pixel, RED) for pixel in colours)


def test_chromium_shows_a_hostile_message_as_text_not_as_an_element(
    chromium: Path, real_run: tuple[dict[str, Any], Path], tmp_path: Path
) -> None:
    """A failure message holding a script element is text in the DOM Chromium built; the same
    page with the message unescaped (the control) has the element."""
    report = copy.deepcopy(real_run[0])
    (failing,) = [test for test in report["tests"] if test["status"] == "fail"]
    failing["reason"] = HOSTILE
    page = render(report)
    shown = tmp_path / "hostile.html"
    shown.write_text(page, encoding="utf-8")
    dom = _chromium(tmp_path, shown, "--dump-dom")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom
    assert "<script" not in dom
    assert HOSTILE in _section(dom, "failures").text
    assert "No level earned" in dom
    raw = tmp_path / "raw.html"
    raw.write_text(page.replace(text(HOSTILE), HOSTILE), encoding="utf-8")
    dom = _chromium(tmp_path, raw, "--dump-dom")
    assert "<script>alert(1)</script>" in dom
    assert "&lt;script&gt;" not in dom


def test_the_commands_a_failure_offers_show_it_again(
    real_run: tuple[dict[str, Any], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The page's rerun command of a real run's failing test fails that test again, and its
    replay command, given the report, reproduces the recorded failure (exit 0: the last
    response is as recorded)."""
    report, _ = real_run
    failed = next(t for t in report["tests"] if t["id"] == "contract-01")
    rerun = shlex.split(reports.rerun_command(report, failed))
    assert rerun[:2] == ["kbconform", "run"]
    assert main([*rerun[1:], "--report", str(tmp_path / "again.json")]) == 1
    again = json.loads((tmp_path / "again.json").read_text(encoding="utf-8"))
    assert [(t["id"], t["status"]) for t in again["tests"]] == [("contract-01", "fail")]
    (tmp_path / "REPORT.json").write_text(json.dumps(report), encoding="utf-8")
    replay = reports.replay_command(report, failed, str(tmp_path / "REPORT.json"))
    assert replay is not None
    assert main(shlex.split(replay)[1:]) == 0, capsys.readouterr().out[-2000:]


def test_a_run_that_did_not_shrink_says_so_above_its_failures() -> None:
    """A report of a run with --no-shrink: the failures say their examples are the first found,
    and the run says failing examples were not shrunk; a run that shrank says neither (control)."""
    report = _report(**{"backup-01": "fail"})
    report["execution"]["shrink"] = False
    page = render(report)
    assert reports.UNSHRUNK in _section(page, "failures").text
    assert "failing examplesnot shrunk (--no-shrink)" in _section(page, "run").text
    report["execution"]["shrink"] = True
    page = render(report)
    assert reports.UNSHRUNK not in page
    assert "failing examplesshrunk" in _section(page, "run").text
