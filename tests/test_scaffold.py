"""``kbconform new-adapter``: the skeleton is valid, type-checks against the protocol, runs under
``kbconform run`` with every failure naming the facade to implement, and never overwrites a file."""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import pytest

from kbconform import is_valid
from kbconform.adapter import BackendOptions, Manifest
from kbconform.cli import _scaffold, main
from kbconform.errors import ContractViolation, Forbidden, Unauthenticated
from kbconform.identity import Principal
from kbconform.profiles import DEFAULT, names, profile
from kbconform.profiles.tenant_namespace.protocol import Backend, SupportsAsk, SupportsCount, SupportsScan

NAME = "qdrant_adapter"
FILES = {f"{NAME}.py", f"{NAME}.manifest.json", "pytest.ini", ".github/workflows/kbconform.yml"}
#: A level the skeleton's runs stop at: enough tests on every facade kind, and quick.
LEVEL = "L1"

#: Appended to a skeleton: the listed facades delegate to the reference knowledge base (in
#: memory, with the skeleton's declarations: no shared namespace, its spoof mode).
FILLED = """

from kbconform_reference import KnowledgeBase, Settings
from kbconform_reference.stores import MemoryStore

_init = QdrantBackend.__init__


def _with_reference(self, options):
    _init(self, options)
    settings = Settings(spoof_mode=options.spoof_mode, shared_namespaces=frozenset())
    self.reference = KnowledgeBase(MemoryStore(), settings=settings)


def _delegate(name):
    def facade(self, *args):
        return getattr(self.reference, name)(*args)

    return facade


QdrantBackend.__init__ = _with_reference
for _name in {facades!r}:
    setattr(QdrantBackend, _name, _delegate(_name))
"""


@pytest.fixture
def skeleton(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    where = tmp_path / "skeleton"
    assert main(["new-adapter", NAME, "--dir", str(where)]) == 0
    out = capsys.readouterr().out
    assert f"kbconform run --adapter {NAME}:factory" in out
    return where


def _written(where: Path) -> set[str]:
    return {str(path.relative_to(where)) for path in where.rglob("*") if path.is_file()}


def _run(
    where: Path, *args: str, level: str | None = LEVEL
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any], dict[str, str]]:
    """``kbconform run`` from the skeleton's directory (up to ``level``; None: every level); its
    report, and each failing test's message."""
    levels = ["--level", level] if level else []
    done = subprocess.run(
        [sys.executable, "-m", "kbconform", "run", "--adapter", f"{NAME}:factory", *levels,
         "--seed", "1", "--report", "report.json", "--junitxml", "junit.xml", *args],
        cwd=where, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    report_path = where / "report.json"
    report = json.loads(report_path.read_text(encoding="utf-8")) if report_path.exists() else {}
    messages: dict[str, str] = {}
    if (where / "junit.xml").exists():
        for case in ElementTree.parse(where / "junit.xml").iter("testcase"):
            for failure in [*case.iter("failure"), *case.iter("error")]:
                messages[case.get("name", "")] = f"{failure.get('message', '')}\n{failure.text or ''}"
    return done, report, messages


def _failing(report: dict[str, Any]) -> set[str]:
    return {test["id"] for test in report["tests"] if test["status"] in ("fail", "error")}


@pytest.fixture
def module(skeleton: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The skeleton's module, imported from its directory."""
    spec = importlib.util.spec_from_file_location(NAME, skeleton / f"{NAME}.py")
    assert spec is not None
    assert spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, NAME, loaded)
    spec.loader.exec_module(loaded)
    return loaded


def test_the_skeleton_is_four_files_with_a_valid_conservative_manifest(skeleton: Path) -> None:
    """The module, a valid adapter-manifest-v1 declining every optional capability with a reason,
    a pytest.ini naming the factory, and a workflow running kbconform run as a CI gate."""
    assert _written(skeleton) == FILES
    manifest = json.loads((skeleton / f"{NAME}.manifest.json").read_text(encoding="utf-8"))
    assert is_valid(manifest, "adapter-manifest-v1")
    assert all(isinstance(reason, str) and reason for reason in manifest["features"].values())
    assert (manifest["sharedNamespace"], manifest["idProfile"]) == (None, None)
    assert manifest["readFacades"] == ["query", "get", "list"]
    assert is_valid({**manifest, "readFacades": ["query"]}, "adapter-manifest-v1") is False  # control
    assert f"kbconform_adapter = {NAME}:factory" in (skeleton / "pytest.ini").read_text(encoding="utf-8")
    workflow = (skeleton / ".github/workflows/kbconform.yml").read_text(encoding="utf-8")
    assert f"kbconform run --adapter {NAME}:factory" in workflow
    assert '--junitxml kbconform.xml --summary "$GITHUB_STEP_SUMMARY"' in workflow


def test_every_facade_is_present_and_raises_an_error_naming_it(module: Any) -> None:
    """Each facade of Backend, SupportsCount, SupportsAsk and SupportsScan is on the backend and
    raises NotImplementedError naming that facade (and no other) and what to implement."""
    backend = module.factory().open(BackendOptions())
    assert isinstance(backend, Backend)
    assert isinstance(backend, SupportsCount)
    assert isinstance(backend, SupportsAsk)
    assert isinstance(backend, SupportsScan)
    principal, operator = Principal(tenant_id="acme"), Principal(tenant_id="acme", role="operator")
    calls: dict[str, tuple[Any, ...]] = {
        "ingest": (principal, []),
        "query": (principal, "text", 3, None),
        "get": (principal, "an-id"),
        "list": (principal, 10, 0),
        "apply_deletion_signal": (principal, {"deleted": [{"sourcePath": "src/old.js"}]}),
        "export": (operator,),
        "restore": (operator, []),
        "count": (principal,),
        "ask": (principal, "why?", 3),
        "scan": (Path(), None, "acme", "main", "bare-repo"),
    }
    for facade, args in calls.items():
        with pytest.raises(NotImplementedError) as raised:
            getattr(backend, facade)(*args)
        assert str(raised.value).startswith(f"{facade} in {NAME}.py: ")
    assert not isinstance(object(), Backend)  # control: the protocol check can fail


def test_the_skeleton_keeps_the_guides_guards_before_any_store_work(module: Any) -> None:
    """The guards the adapter guide's skeleton has come with the scaffold: anything but a
    Principal is Unauthenticated on every facade taking one, a member's export and restore are
    Forbidden, an invalid record or deletion signal is a ContractViolation with its code; each
    before the not-implemented store work (the valid calls reach it: the control above)."""
    backend = module.factory().open(BackendOptions())
    member = Principal(tenant_id="acme")
    callers = {
        "ingest": ([],),
        "query": ("text", 3, None),
        "get": ("an-id",),
        "list": (10, 0),
        "apply_deletion_signal": ({"deleted": [{"sourcePath": "a"}]},),
        "export": (),
        "restore": ([],),
        "count": (),
        "ask": ("why?", 3),
    }
    for facade, rest in callers.items():
        for nobody in (None, "acme", {"tenantId": "acme"}):
            with pytest.raises(Unauthenticated):
                getattr(backend, facade)(nobody, *rest)
    for facade, rest in (("export", ()), ("restore", ([],))):
        with pytest.raises(Forbidden):
            getattr(backend, facade)(member, *rest)
    with pytest.raises(ContractViolation):
        backend.ingest(member, [{"not": "a chunk"}])
    with pytest.raises(ContractViolation) as raised:
        backend.apply_deletion_signal(member, {})
    assert raised.value.code == "KB_DELETE_SIGNAL_INVALID"
    with pytest.raises(ContractViolation):
        backend.restore(Principal(tenant_id="acme", role="operator"), [{"not": "a record"}])


@pytest.mark.slow
def test_kbconform_run_on_the_skeleton_fails_every_test_at_the_facade_to_implement(skeleton: Path) -> None:
    """The first run, every level: nothing crashes, every test runs and fails (or is declined, or
    is answered by the skeleton's guards alone), each ending at the facade to implement, ingest
    for all but one, at once (not shrunk); the terminal says so in one line for the facade, with
    no traceback, and the run ends with the level and next-step lines."""
    done, report, messages = _run(skeleton, level=None)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    assert report["completeness"] == {"missing": [], "unknown": []}
    failing = _failing(report)
    assert failing
    # the guards alone answer some L0 contract tests (invalid records refused before any store work)
    passing = {t["id"] for t in report["tests"] if t["status"] == "pass"}
    assert all(test.startswith("contract-") for test in passing), passing
    assert failing | passing | {t["id"] for t in report["tests"] if t["status"] == "skip"} == {
        t["id"] for t in report["tests"]
    }
    assert "state-01[reject]" in failing  # the state machine too, at its first ingest
    assert len(messages) == len(failing)
    for name, message in messages.items():
        assert "is not implemented yet" in message, name
    # every test ends at ingest, the facade every test starts with, but the contract test whose
    # invalid records the guard refuses, which then reads back with list
    ended = {test["id"]: test.get("notImplemented") for test in report["tests"] if test["id"] in failing}
    assert set(ended.values()) == {"ingest", "list"}
    assert list(ended.values()).count("list") == 1
    at_ingest = list(ended.values()).count("ingest")
    expected = "ingest is not implemented yet: ingest in qdrant_adapter.py"
    assert "Traceback" not in done.stdout
    assert "\nE   " not in done.stdout
    said = [line for line in done.stdout.splitlines() if "ingest is not implemented yet" in line]
    assert said == [
        f"{at_ingest} tests ended at ingest: {expected}: validate, stamp (tenantId, repoSlug, ...) "
        "and write the batch",
        f"  NOT IMPLEMENTED ingest: {at_ingest} tests ended there ({expected}: validate, stamp "
        "(tenantId, repoSlug, ...) and write the batch)",
    ]
    assert not report["levels"]["L1"]["earned"]
    assert "levels: L0 contract (invalid input refused); L1 write isolation;" in done.stdout
    # every optional feature still carries the scaffold's placeholder, and the run says so
    waiting = "placeholder reason (offer each, or give the real reason): client-where, concurrency, envelope,"
    assert waiting in done.stdout


@pytest.mark.slow
def test_a_filled_in_skeleton_passes_and_one_left_out_or_wrong_is_named(skeleton: Path) -> None:
    """With every facade delegating to the reference the skeleton passes (control); with get
    left unimplemented and list wrong (it returns nothing), the run fails: the tests reaching get
    fail naming it, no other failure says a facade is missing, and list's isolation test fails."""
    module = skeleton / f"{NAME}.py"
    original = module.read_text(encoding="utf-8")
    every = ["ingest", "query", "get", "list", "apply_deletion_signal", "export", "restore"]
    module.write_text(original + FILLED.format(facades=every), encoding="utf-8")
    done, report, _ = _run(skeleton)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "every test passed or was declined" in done.stdout
    # declined by design (a shared namespace, an id profile, spoof overwrite) costs no level;
    # the declined probe fault-injection costs L2 and above
    assert [lv for lv, v in report["levels"].items() if v["earned"]] == ["L0", "L1"]
    assert "spoof-overwrite" in report["levels"]["L1"]["declined"]

    partly = [facade for facade in every if facade != "get"]
    wrong_list = "\nQdrantBackend.list = lambda self, principal, limit, offset: []\n"
    module.write_text(original + FILLED.format(facades=partly) + wrong_list, encoding="utf-8")
    done, report, _ = _run(skeleton)
    assert done.returncode == 1
    failing = _failing(report)
    assert "iso-01[list]" in failing
    unimplemented = [t for t in report["tests"] if "notImplemented" in t]
    assert unimplemented
    assert {t["notImplemented"] for t in unimplemented} == {"get"}
    assert all(
        t["message"].startswith("get is not implemented yet: get in qdrant_adapter.py") for t in unimplemented
    )
    assert f"  NOT IMPLEMENTED get: {len(unimplemented)} tests ended there" in done.stdout


def test_mypy_strict_accepts_the_skeleton_and_rejects_a_facade_off_the_protocol(
    skeleton: Path, mypy_cache: Path
) -> None:
    """The skeleton type-checks against kbconform.adapter.Adapter and Backend (its factory's
    annotation); a get taking an int id is refused (control)."""
    from mypy import api

    def check(path: Path) -> tuple[str, int]:
        out, err, status = api.run(["--strict", "--cache-dir", str(mypy_cache), str(path)])
        return out + err, status

    output, status = check(skeleton / f"{NAME}.py")
    assert status == 0, output
    source = (skeleton / f"{NAME}.py").read_text(encoding="utf-8")
    signature = "def get(self, principal: Principal, chunk_id: {}, /)"
    wrong = source.replace(signature.format("str"), signature.format("int"))
    assert wrong != source
    (skeleton / "wrong_adapter.py").write_text(wrong, encoding="utf-8")
    output, status = check(skeleton / "wrong_adapter.py")
    assert status == 1
    assert "Incompatible return value type" in output or "incompatible" in output.lower(), output


def test_new_adapter_never_overwrites_a_file_and_writes_nothing_then(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One of the skeleton's files exists: exit 2 with KB_SCAFFOLD_EXISTS naming it, the file as
    it was, nothing else written; in an empty directory all four are written (control)."""
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -q\n", encoding="utf-8")
    assert main(["new-adapter", NAME, "--dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kbconform: error: KB_SCAFFOLD_EXISTS: ")
    assert "found pytest.ini" in err
    assert "Nothing was written" in err
    assert err.count("\n") == 1
    assert {path.name for path in tmp_path.iterdir()} == {"pytest.ini"}
    assert (tmp_path / "pytest.ini").read_text(encoding="utf-8") == "[pytest]\naddopts = -q\n"
    (tmp_path / "pytest.ini").unlink()
    assert main(["new-adapter", NAME, "--dir", str(tmp_path)]) == 0
    assert _written(tmp_path) == FILES


def test_a_write_failing_part_way_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file that appears while the skeleton is placed (a race) stops it: what was placed is
    removed, the stranger is kept, no staging directory is left; unhindered, all is written."""
    place = _scaffold._place
    placed: list[Path] = []

    def racing(staged: Path, final: Path) -> None:
        if len(placed) == 2:
            final.write_text("someone else's\n", encoding="utf-8")
        place(staged, final)
        placed.append(final)

    monkeypatch.setattr(_scaffold, "_place", racing)
    with pytest.raises(_scaffold.ScaffoldError) as raised:
        _scaffold.write(NAME, tmp_path, "0")
    assert raised.value.code == _scaffold.EXISTS
    assert _written(tmp_path) == {"pytest.ini"}
    assert (tmp_path / "pytest.ini").read_text(encoding="utf-8") == "someone else's\n"
    assert {path.name for path in tmp_path.iterdir()} == {"pytest.ini"}
    (tmp_path / "pytest.ini").unlink()
    monkeypatch.setattr(_scaffold, "_place", place)
    assert {w.path for w in _scaffold.write(NAME, tmp_path, "0")} == FILES


@pytest.mark.parametrize(
    "name", ["Qdrant", "qdrant-adapter", "1st", "class", "json", "kbconform", "", "a" * 65]
)
def test_new_adapter_refuses_a_name_that_cannot_be_the_module(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not a module name, a keyword, or a module Python already finds: exit 2, one line saying
    what was expected, nothing written; qdrant_adapter is accepted (control, in the fixture)."""
    assert main(["new-adapter", name, "--dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kbconform: error: KB_SCAFFOLD_NAME_INVALID: expected ")
    assert err.count("\n") == 1
    assert not (tmp_path / "out").exists()
    assert _scaffold.check_name("qdrant_adapter") == "qdrant_adapter"


@pytest.mark.parametrize(
    ("direct_url", "expected", "said"),
    [
        (None, "kbconform==1.2.3", "the release this skeleton was written with"),
        (
            '{"url": "https://github.com/o/kbconform", "vcs_info": {"vcs": "git", "commit_id": "abc123"}}',
            "kbconform @ git+https://github.com/o/kbconform@abc123",
            "the commit",
        ),
        (
            '{"url": "https://example.org/kbconform-1.2.3.tar.gz", "archive_info": {}}',
            "kbconform @ https://",
            "archive",
        ),
        (
            '{"url": "file:///home/me/kbconform", "dir_info": {"editable": true}}',
            "kbconform @ git+https://github.com/o/kbconform@" + "a" * 40,
            "the checkout",
        ),
        (
            '{"url": "file:///tmp/unpacked-kbconform", "dir_info": {}}',
            "",
            "CI cannot reach",
        ),
        ("not json", "kbconform==1.2.3", "the release"),
    ],
)
def test_the_workflow_installs_the_kit_it_was_written_with(
    direct_url: str | None, expected: str, said: str
) -> None:
    """The CI workflow installs the kit from where the scaffolding kit came from: the commit of a
    git install, the archive it was downloaded as, the origin and commit of the local checkout it
    was installed from, else the release; a kit from a local path with no origin gives no source
    (the workflow stops there) and says which variable to set."""

    def checkout(url: str) -> tuple[str, str] | None:
        return ("https://github.com/o/kbconform", "a" * 40) if url == "file:///home/me/kbconform" else None

    install, why = _scaffold.install_source("1.2.3", direct_url, checkout)
    assert install.startswith(expected)
    assert bool(install) == bool(expected)
    assert said in why
    if not install:
        assert "KBCONFORM_INSTALL" in why


def test_a_local_checkout_gives_its_origin_as_a_url_pip_clones(tmp_path: Path) -> None:
    """The origin of a git checkout and its commit: an scp-like origin becomes the ssh URL pip
    reads; a checkout with no origin, and a directory that is no checkout, give none (control)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    env = {"GIT_AUTHOR_NAME": "k", "GIT_AUTHOR_EMAIL": "k@example.org", "GIT_COMMITTER_NAME": "k"}
    env |= {"GIT_COMMITTER_EMAIL": "k@example.org", "PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    work = tmp_path / "kit"
    work.mkdir()
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "x"]):
        subprocess.run(["git", "-C", str(work), *args], check=True, env=env, timeout=30)
    assert _scaffold._checkout(work.as_uri()) is None  # no origin yet
    subprocess.run(
        ["git", "-C", str(work), "remote", "add", "origin", "git@github.com:o/kbconform.git"],
        check=True,
        env=env,
        timeout=30,
    )
    found = _scaffold._checkout(work.as_uri())
    assert found is not None
    assert found[0] == "ssh://git@github.com/o/kbconform.git"
    assert re.fullmatch(r"[0-9a-f]{40}", found[1])
    assert _scaffold._checkout((tmp_path / "nothing").as_uri()) is None


def test_the_written_workflow_reads_the_install_variable(tmp_path: Path) -> None:
    """The workflow's install step installs ``$KBCONFORM_INSTALL``, set beside it, never a fixed
    release a package index may not have."""
    files = _scaffold.files(NAME, "9.9.9")
    workflow = files[".github/workflows/kbconform.yml"]
    assert 'pip install "${KBCONFORM_INSTALL:?set the repository variable KBCONFORM_INSTALL}"' in workflow
    assert "KBCONFORM_INSTALL: ${{ vars.KBCONFORM_INSTALL || '" in workflow
    assert "@install" not in workflow


@pytest.mark.parametrize("profile_name", [name for name in names() if name != DEFAULT])
def test_every_other_profile_gets_a_skeleton_of_its_own_protocol(
    profile_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`new-adapter --isolation-profile P` writes a backend class with every method of P's own
    backend protocol (its runtime check passes; the tenant-namespace protocol's does not: the
    control), each raising a not-implemented error that names it, and a manifest of P."""
    where = tmp_path / profile_name
    assert main(["new-adapter", NAME, "--dir", str(where), "--isolation-profile", profile_name]) == 0
    capsys.readouterr()
    manifest = json.loads((where / f"{NAME}.manifest.json").read_text(encoding="utf-8"))
    declared = Manifest.declared(manifest)
    assert declared.profile == profile_name
    spec = importlib.util.spec_from_file_location(NAME, where / f"{NAME}.py")
    assert spec is not None
    assert spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, NAME, loaded)
    spec.loader.exec_module(loaded)
    adapter = loaded.factory()
    backend = adapter.open(BackendOptions())
    protocol = profile(profile_name).facades(declared)[0][1]
    assert isinstance(backend, protocol)
    assert not isinstance(backend, Backend)
    methods = [
        name for name, member in vars(protocol).items() if callable(member) and not name.startswith("_")
    ]
    assert methods
    for method in methods:
        arity = len(inspect.signature(getattr(protocol, method)).parameters) - 1
        with pytest.raises(NotImplementedError, match=rf"^{method} in {NAME}\.py"):
            getattr(backend, method)(*([None] * arity))
    adapter.close(backend)
    adapter.shutdown()


@pytest.mark.slow
def test_mypy_strict_accepts_every_other_profiles_skeleton_and_rejects_a_method_off_its_protocol(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mypy_cache: Path
) -> None:
    """Each other profile's skeleton type-checks against its own protocol (``open`` is annotated
    with it); a method whose parameter is dropped is refused (control)."""
    from mypy import api

    for profile_name in (name for name in names() if name != DEFAULT):
        where = tmp_path / profile_name
        assert main(["new-adapter", NAME, "--dir", str(where), "--isolation-profile", profile_name]) == 0
        path = where / f"{NAME}.py"
        out, err, status = api.run(["--strict", "--cache-dir", str(mypy_cache), str(path)])
        assert status == 0, (profile_name, out + err)
        source = path.read_text(encoding="utf-8")
        wrong = re.sub(r"(def \w+\(self, )\w+: [\w\[\], |]+, ", r"\1", source, count=1)
        assert wrong != source
        path.write_text(wrong, encoding="utf-8")
        out, err, status = api.run(["--strict", "--cache-dir", str(mypy_cache), str(path)])
        assert status == 1, (profile_name, out + err)
    capsys.readouterr()
