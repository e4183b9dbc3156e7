"""The install runner the harness tests share: two workers asking for one harness at once take
turns, and different arguments (another virtual environment) do not wait for each other; and an
advisory release derived from its harness's install (harnesses/kept-venv.sh) only when it is
provably the pinned set, and never through a link to the harness's install."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import os
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest

from tests.harness.installs import run_install

#: An install that rebuilds its folder as the harnesses' scripts do, slowly enough to overlap.
SCRIPT = """\
set -eu
log="$1"; shift
echo "start $*" >> "$log"
sleep 1
echo "end $*" >> "$log"
"""


def _both(script: Path, first: list[str], second: list[str]) -> list[str]:
    threads = [
        threading.Thread(target=run_install, args=(script, 30), kwargs={"arguments": arguments})
        for arguments in (first, second)
    ]
    for thread in threads:
        thread.start()
        time.sleep(0.05)
    for thread in threads:
        thread.join()
    return (script.parent / "log").read_text().split("\n")[:-1]


def test_one_install_with_the_same_arguments_runs_at_a_time(tmp_path: Path) -> None:
    script = tmp_path / "install"
    script.write_text(SCRIPT)
    log = str(tmp_path / "log")
    assert _both(script, [log, "a"], [log, "a"]) == ["start a", "end a", "start a", "end a"]


def test_installs_with_other_arguments_overlap(tmp_path: Path) -> None:
    """Control: the lock is per arguments, so the same script for two folders runs at once."""
    script = tmp_path / "install"
    script.write_text(SCRIPT)
    log = str(tmp_path / "log")
    said = _both(script, [log, "a"], [log, "b"])
    assert sorted(said[:2]) == ["start a", "start b"], said  # the second started before the first ended
    assert sorted(said[2:]) == ["end a", "end b"], said


#: kept_venv_derive run on its own: ``derive VENV PINS REQUIREMENTS`` derives VENV from the
#: LangGraph harness's install with PINS, REQUIREMENTS the pins it must come to.
DERIVE = """\
set -uo pipefail
say() { printf 'derive: %s\\n' "$*" >&2; }
. "$1/kept-venv.sh"
venv="$2"
base="$1/langgraph/.venv"
kept_venv_derive "$base" "$base/bin/python" "$3" "$(cat "$1/langgraph/requirements.txt" "$4")"
"""


@pytest.mark.slow  # installs the LangGraph harness (shared with its own tests) and asks PyPI
@pytest.mark.installs("langgraph")
def test_a_release_is_derived_only_when_it_is_provably_the_pinned_set(tmp_path: Path) -> None:
    """Derived from the harness's install, a release whose pins leave a requirement unmet (pip
    check) or whose packages are not exactly the pinned ones is refused, so its install runs in
    full; control: the advisory's own pins derive, and the venv holds their release."""
    harnesses = Path(__file__).resolve().parents[2] / "harnesses"
    pins = harnesses.parent / "advisories" / "langgraph" / "sqlite-3.1.0.txt"
    run_install(harnesses / "langgraph" / "install", 900)
    script = tmp_path / "derive"
    script.write_text(DERIVE)
    partial = tmp_path / "partial.txt"
    partial.write_text("langgraph-checkpoint-sqlite==3.1.0\n")  # without aiosqlite and sqlite-vec

    def derive(name: str, given: Path, pinned: Path) -> subprocess.CompletedProcess[str]:
        command = ["bash", str(script), str(harnesses), str(tmp_path / name), str(given), str(pinned)]
        return subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)

    unmet = derive("unmet", partial, partial)
    assert unmet.returncode == 1, unmet.stderr
    assert "requires aiosqlite, which is not installed" in unmet.stdout + unmet.stderr
    unpinned = derive("unpinned", pins, Path("/dev/null"))
    assert unpinned.returncode == 1, unpinned.stderr
    assert "not the pinned ones" in unpinned.stderr
    derived = derive("derived", pins, pins)
    assert derived.returncode == 0, derived.stderr
    python = tmp_path / "derived" / "bin" / "python"
    asked = "import importlib.metadata as m; print(m.version('langgraph-checkpoint-sqlite'))"
    shown = subprocess.run([str(python), "-I", "-c", asked], capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == "3.1.0"


#: kept_venv_derive run on its own: ``derive HARNESSES BASE VENV PINS REQUIREMENTS``.
DERIVE_FROM = """\
set -uo pipefail
say() { printf 'derive: %s\\n' "$*" >&2; }
. "$1/kept-venv.sh"
venv="$3"
kept_venv_derive "$2" "$2/bin/python" "$4" "$(cat "$5")"
"""


def _distribution(name: str, version: str, files: dict[str, str]) -> dict[str, str]:
    """``files`` with the dist-info a wheel of ``name`` ``version`` holds, RECORD last."""
    info = f"{name}-{version}.dist-info"
    files = {
        **files,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    rows = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        rows.append(f"{path},sha256={digest},{len(text.encode())}")
    return {**files, f"{info}/RECORD": "\n".join([*rows, f"{info}/RECORD,,"]) + "\n"}


def _harness_install(root: Path) -> Path:
    """A finished harness install at ``root/base``: this interpreter's pip (a link to its
    package), alpha 1.0 owning shared.py, beta 1.0, and gamma 1.0 as a setuptools develop
    install (an egg-link and its line in easy-install.pth); pinned wheels of beta 2.0 (which
    writes shared.py too) and gamma 2.0 in ``root/wheels``."""
    base = root / "base"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(base)], check=True)
    asked = "import sysconfig; print(sysconfig.get_path('purelib'))"
    site = Path(
        subprocess.run(
            [str(base / "bin" / "python"), "-I", "-c", asked], capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    pip = importlib.util.find_spec("pip")
    assert pip is not None, "the tests' interpreter has no pip"
    assert pip.origin is not None
    (site / "pip").symlink_to(Path(pip.origin).parent)
    installed = {
        **_distribution("alpha", "1.0", {"shared.py": "OWNER = 'alpha'\n"}),
        **_distribution("beta", "1.0", {"beta.py": ""}),
    }
    for path, text in installed.items():
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_text(text)
    source = root / "gamma"
    (source / "gamma.egg-info").mkdir(parents=True)
    (source / "gamma.egg-info" / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: gamma\nVersion: 1.0\n")
    (site / "gamma.egg-link").write_text(f"{source}\n.")
    (site / "easy-install.pth").write_text(f"{source}\n")
    (root / "wheels").mkdir()
    for name, files in (
        ("beta", {"beta.py": "", "shared.py": "OWNER = 'beta'\n"}),
        ("gamma", {"gamma.py": ""}),
    ):
        with zipfile.ZipFile(root / "wheels" / f"{name}-2.0-py3-none-any.whl", "w") as wheel:
            for path, text in _distribution(name, "2.0", files).items():
                wheel.writestr(path, text)
    return site


@pytest.mark.slow  # runs pip in child processes
def test_a_derived_release_never_changes_the_harness_install_through_a_link(tmp_path: Path) -> None:
    """A pinned wheel that writes a file a kept distribution owns replaces the derived venv's link
    to it and leaves the harness's file as it was (control: the derived venv holds the wheel's
    text); pip's write in place, the easy-install.pth of a develop install it uninstalls, is
    refused, so the derive fails (the release then installs in full) and the harness's line
    stays (control: the refusal names that file, the write pip tried)."""
    site = _harness_install(tmp_path)
    script = tmp_path / "derive"
    script.write_text(DERIVE_FROM)
    harnesses = Path(__file__).resolve().parents[2] / "harnesses"
    offline = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(tmp_path / "wheels"), "PIP_CONFIG_FILE": os.devnull}

    def derive(name: str, pins: str, requirements: str) -> tuple[subprocess.CompletedProcess[str], Path]:
        (tmp_path / f"{name}.pins").write_text(pins)
        (tmp_path / f"{name}.txt").write_text(requirements)
        given = (
            harnesses,
            tmp_path / "base",
            tmp_path / name,
            tmp_path / f"{name}.pins",
            tmp_path / f"{name}.txt",
        )
        command = ["bash", str(script), *map(str, given)]
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=300, check=False, env={**os.environ, **offline}
        )
        return done, tmp_path / name / site.relative_to(tmp_path / "base")

    shared, derived = derive("shared", "beta==2.0\n", "alpha==1.0\nbeta==2.0\ngamma==1.0\n")
    assert shared.returncode == 0, shared.stderr
    assert (derived / "shared.py").read_text() == "OWNER = 'beta'\n"
    assert (site / "shared.py").read_text() == "OWNER = 'alpha'\n"
    in_place, derived = derive("in-place", "gamma==2.0\n", "alpha==1.0\nbeta==1.0\ngamma==2.0\n")
    assert (site / "easy-install.pth").read_text() == f"{tmp_path / 'gamma'}\n", in_place.stderr
    assert in_place.returncode == 1, in_place.stderr
    assert f"open {str(derived / 'easy-install.pth')!r}" in in_place.stderr
