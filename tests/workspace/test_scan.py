"""Scanning a workspace: ownership, determinism, and errors that name the file."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

from kbconform.contract import is_valid
from kbconform.errors import ContractViolation
from kbconform.registry import Chunk, Paths, Registry
from kbconform.workspace import Config, load_config, scan
from kbconform.workspace._config import MAX_FILE_BYTES
from kbconform.workspace._scan import walk


def workspace(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def run(root: Path, config: Config | None = None, **identity: str) -> list[dict]:
    return scan(
        root, config, tenant_id=identity.get("tenant", "acme"), repo_slug="acme/repo", root_kind="bare-repo"
    )


def paths(records: Iterable[dict]) -> list[tuple[str, str]]:
    return [(r["sourcePath"], r["kind"]) for r in records]


def test_a_file_belongs_to_the_first_source_that_owns_it(tmp_path: Path) -> None:
    """An ADR is a decision record, not also a doc section; unowned and hidden files give nothing."""
    root = workspace(
        tmp_path,
        {
            "docs/adr/0001-x.md": "# X\n",
            "docs/guide.md": "# Guide\n",
            "notes.txt": "no source owns me\n",
            ".hidden/a.md": "# hidden\n",
            "docs/.draft.md": "# draft\n",
        },
    )
    assert paths(run(root)) == [("docs/adr/0001-x.md", "decision-record"), ("docs/guide.md", "doc-section")]


def test_records_carry_the_claimed_identity_and_validate(tmp_path: Path) -> None:
    """Every record is parsed-chunk-v1 with the parser's id and version and the claimed identity."""
    root = workspace(tmp_path, {"a.py": "x = 1\n", "README.md": "# R\n"})
    records = run(root)
    assert all(is_valid(r, "parsed-chunk-v1") for r in records)
    assert {(r["tenantId"], r["repoSlug"], r["rootKind"]) for r in records} == {
        ("acme", "acme/repo", "bare-repo")
    }
    assert {(r["parserId"], r["parserVersion"]) for r in records} == {
        ("markdown-sections", "1.0.0"),
        ("python-ast", "1.0.0"),
    }


def test_sources_run_in_registry_order_then_files_in_path_order(tmp_path: Path) -> None:
    """Output order is deterministic and independent of how the files were created."""
    root = workspace(
        tmp_path, {"z.py": "z = 1\n", "b.md": "# B\n", "a.py": "a = 1\n", "docs/adr/1.md": "# D\n"}
    )
    assert paths(run(root)) == [
        ("docs/adr/1.md", "decision-record"),
        ("b.md", "doc-section"),
        ("a.py", "module"),
        ("z.py", "module"),
    ]
    assert run(root) == run(root)


def test_text_is_decoded_as_utf8_with_normalized_line_endings(tmp_path: Path) -> None:
    """CRLF and CR become LF; a byte-order mark is dropped; the same text gives the same record."""
    root = workspace(
        tmp_path,
        {
            "crlf.md": b"\xef\xbb\xbf# Caf\xc3\xa9\r\n\r\ntext\r\n",
            "lf.md": "# Café\n\ntext\n",
            "cr.md": b"# Caf\xc3\xa9\r\rtext\r",
        },
    )
    contents = {r["sourcePath"]: r["content"] for r in run(root)}
    assert contents == {
        "cr.md": "# Café\n\ntext\n",
        "crlf.md": "# Café\n\ntext\n",
        "lf.md": "# Café\n\ntext\n",
    }


def test_a_file_that_is_not_utf8_is_an_error_naming_it(tmp_path: Path) -> None:
    """Never skipped, never decoded with replacement characters."""
    root = workspace(tmp_path, {"ok.md": "# ok\n", "docs/latin.md": b"# caf\xe9\n"})
    with pytest.raises(ContractViolation) as caught:
        run(root)
    assert [(p.pointer, p.keyword) for p in caught.value.problems] == [("docs/latin.md", "encoding")]


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="the platform has no symbolic links")
def test_symbolic_links_are_not_followed(tmp_path: Path) -> None:
    """A workspace cannot pull in files from outside itself (control: the real file is read)."""
    outside = workspace(tmp_path / "outside", {"secret.md": "# Secret\n", "dir/inner.md": "# Inner\n"})
    root = workspace(tmp_path / "ws", {"real.md": "# Real\n"})
    try:
        (root / "link.md").symlink_to(outside / "secret.md")
        (root / "docs").symlink_to(outside / "dir", target_is_directory=True)
    except OSError as error:  # pragma: no cover - e.g. unprivileged Windows
        pytest.skip(f"cannot create symbolic links here: {error}")
    assert list(walk(root)) == ["real.md"]
    assert [r["name"] for r in run(root)] == ["Real"]


def test_git_directories_are_not_entered(tmp_path: Path) -> None:
    """Even a configuration that asks for dot files never reads .git."""
    root = workspace(tmp_path, {".git/HEAD.md": "# head\n", ".github/a.md": "# CI\n"})
    config = Config(
        Config.default().registry, {**Config.default().paths, "markdown-docs": Paths((".*/*.md",))}
    )
    assert [r["sourcePath"] for r in run(root, config)] == [".github/a.md"]


@pytest.mark.parametrize(
    ("identity", "pointer"),
    [
        ({"tenant_id": "Acme", "repo_slug": "r", "root_kind": "bare-repo"}, "/tenantId"),
        ({"tenant_id": "acme", "repo_slug": "/r", "root_kind": "bare-repo"}, "/repoSlug"),
        ({"tenant_id": "acme", "repo_slug": "r", "root_kind": "monorepo"}, "/rootKind"),
    ],
)
def test_an_invalid_claimed_identity_is_an_error_even_for_an_empty_workspace(
    tmp_path: Path, identity: dict[str, str], pointer: str
) -> None:
    """The identity is checked up front (control: the same call with valid values succeeds)."""
    with pytest.raises(ContractViolation) as caught:
        scan(tmp_path, **identity)
    assert caught.value.problems[0].pointer == pointer
    assert scan(tmp_path, tenant_id="acme", repo_slug="r", root_kind="bare-repo") == []


def test_a_missing_workspace_is_an_error(tmp_path: Path) -> None:
    """A path that is not a directory is not an empty workspace."""
    with pytest.raises(ContractViolation):
        run(tmp_path / "missing")


def test_a_file_name_the_contract_rejects_is_an_error_naming_it(tmp_path: Path) -> None:
    """sourcePath rules apply to real files too (here: a leading space)."""
    root = workspace(tmp_path, {" lead.md": "# x\n"})
    with pytest.raises(ContractViolation) as caught:
        run(root)
    assert caught.value.problems[0].pointer == " lead.md#0/sourcePath"


TEXT_FILES = Paths(("*.txt",))


@dataclass(frozen=True)
class Custom:
    chunks: tuple[object, ...]
    parser_id: str = "custom"
    version: str = "1.0.0"
    paths: Paths = TEXT_FILES

    def parse(self, source_path: str, text: str) -> Iterable[Chunk]:
        return self.chunks  # type: ignore[return-value]


def custom(*chunks: object) -> Config:
    plugin = Custom(chunks)
    registry = Registry().with_source(plugin, "custom").with_parser(plugin)
    return Config(registry, {"custom": plugin.paths})


def test_a_parser_output_that_breaks_the_contract_is_an_error_naming_file_and_chunk(tmp_path: Path) -> None:
    """An invalid chunk or a value that is not a Chunk stops the scan (control: a valid chunk)."""
    root = workspace(tmp_path, {"a.txt": "x\n"})
    good = Chunk("note", "A", "x")
    assert [r["name"] for r in run(root, custom(good))] == ["A"]
    with pytest.raises(ContractViolation) as caught:
        run(root, custom(good, Chunk("Not A Token", "A", "x")))
    assert caught.value.problems[0].pointer == "a.txt#1/kind"
    with pytest.raises(ContractViolation) as caught:
        run(root, custom({"kind": "note"}))
    assert caught.value.problems[0].keyword == "protocol"
    with pytest.raises(ContractViolation) as caught:
        run(root, custom(Chunk("note", "A", "x", hash_inputs=("tenantId",))))
    assert caught.value.problems[0].pointer.startswith("a.txt#0")


def test_chunks_with_identical_hash_inputs_are_one_chunk(tmp_path: Path) -> None:
    """They would get one id in every namespace: the first is kept (control: a different one stays)."""
    root = workspace(tmp_path, {"a.txt": "x\n"})
    same, other = Chunk("note", "A", "x"), Chunk("note", "A", "y")
    assert [r["content"] for r in run(root, custom(same, same, other))] == ["x", "y"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_only_regular_files_are_walked_never_a_fifo(tmp_path: Path) -> None:
    """A FIFO named like a source file is left out (opening it would block); the real file is read."""
    workspace(tmp_path, {"real.py": "x = 1\n"})
    os.mkfifo(tmp_path / "blocking.py")
    assert list(walk(tmp_path)) == ["real.py"]
    assert paths(run(tmp_path)) == [("real.py", "module")]


def test_a_file_over_the_size_limit_is_refused_naming_file_and_limit(tmp_path: Path) -> None:
    """max_file_bytes bounds what a parser is given: one byte over is an error, the limit itself reads."""
    workspace(tmp_path, {"docs/big.md": "# T\n" + "x" * 96, "small.md": "# S\n"})
    limited = load_config({"max_file_bytes": 100})
    assert Config.default().max_file_bytes == MAX_FILE_BYTES == 16 * 1024 * 1024
    assert sorted(r["sourcePath"] for r in run(tmp_path, limited)) == ["docs/big.md", "small.md"]
    (tmp_path / "docs/big.md").write_text("# T\n" + "x" * 97, encoding="utf-8")
    with pytest.raises(ContractViolation) as caught:
        run(tmp_path, limited)
    problem = caught.value.problems[0]
    assert (problem.pointer, problem.keyword, problem.got) == ("docs/big.md", "size", "101 bytes")
    assert "at most 100 bytes" in problem.expected
    assert len(run(tmp_path)) == 2  # the default limit reads it


@pytest.mark.parametrize("limit", [0, -1, True, "16MiB", 1.5])
def test_a_bad_size_limit_is_an_error_naming_the_key(limit: object) -> None:
    """max_file_bytes is a positive whole number; anything else names the key."""
    with pytest.raises(ContractViolation) as caught:
        load_config({"max_file_bytes": limit})
    assert caught.value.problems[0].pointer == "/max_file_bytes"
    assert load_config({"max_file_bytes": 1}).max_file_bytes == 1
