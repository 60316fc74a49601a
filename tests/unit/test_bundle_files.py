"""The bundle's files: .gitignore through pathspec outside git, the requirements.json reader,
and the schema readers' errors."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from trainhub.bundle.compile import compile_bundle
from trainhub.bundle.errors import BundleError
from trainhub.bundle.requirements import load_requirements
from trainhub.bundle.schema import BundleManifest, Requirement, read_cells, read_manifest
from trainhub.bundle.workspace import collect_workspace
from trainhub.jobs.spec import JobSpec


def tree(ws: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    return ws.resolve()


def collected(ws: Path, files: dict[str, str], top: str = "") -> set[str]:
    root = tree(ws, files)
    return set(collect_workspace(root, root / top))


# --- .gitignore outside git, through pathspec -------------------------------------------------


def test_negation_keeps_a_file_an_earlier_pattern_ignores(tmp_path):
    files = {".gitignore": "*.txt\n!keep.txt\n", "keep.txt": "k", "drop.txt": "d", "a.py": ""}
    assert collected(tmp_path, files) == {".gitignore", "keep.txt", "a.py"}


def test_directory_pattern_ignores_directories_only(tmp_path):
    files = {
        ".gitignore": "build/\n",
        "build/out.bin": "b",
        "src/build/deep.bin": "b",  # build/ matches at any depth
        "notes/build": "a file named build",
        "a.py": "",
    }
    assert collected(tmp_path, files) == {".gitignore", "notes/build", "a.py"}


def test_double_star_prefix_matches_at_any_depth(tmp_path):
    files = {
        ".gitignore": "**/x\n",
        "x": "top",
        "a/x": "one",
        "a/b/x/inside.txt": "dir",
        "a/b/y": "kept",
    }
    assert collected(tmp_path, files) == {".gitignore", "a/b/y"}


def test_nested_gitignore_applies_below_its_directory_and_wins(tmp_path):
    files = {
        ".gitignore": "*.log\n",
        "sub/.gitignore": "!important.log\n*.tmp\n",
        "run.log": "l",
        "important.log": "outside sub: still ignored",
        "sub/run.log": "l",
        "sub/important.log": "re-included by the deeper file",
        "sub/x.tmp": "t",
        "x.tmp": "not ignored above sub",
    }
    assert collected(tmp_path, files) == {
        ".gitignore",
        "sub/.gitignore",
        "sub/important.log",
        "x.tmp",
    }


def test_anchored_pattern_in_a_nested_file_is_relative_to_it(tmp_path):
    files = {"proj/.gitignore": "/data\n", "proj/data/a.csv": "a", "proj/src/data/b.csv": "b"}
    assert collected(tmp_path, files, "proj") == {"proj/.gitignore", "proj/src/data/b.csv"}


def test_gitignore_above_the_entry_directory_applies(tmp_path):
    files = {".gitignore": "secret/\n", "proj/secret/k.txt": "k", "proj/a.py": ""}
    assert collected(tmp_path, files, "proj") == {"proj/a.py"}


def test_workspace_root_given_through_a_link_compiles(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    nbformat.write(new_notebook(cells=[new_code_cell("x = 1")]), real / "nb.ipynb")
    (real / "data.csv").write_text("a\n")
    (tmp_path / "link").symlink_to(real)
    spec = JobSpec.model_validate({"name": "t", "source": {"kind": "notebook", "path": "nb.ipynb"}})
    manifest = compile_bundle(spec, tmp_path / "link", tmp_path / "bundle")
    assert manifest.file_count == 1 and manifest.warnings == []
    assert (tmp_path / "bundle" / "workspace" / "data.csv").read_text() == "a\n"


# --- requirements.json ---------------------------------------------------------------------------


def test_missing_requirements_file_means_no_requirements(tmp_path):
    assert load_requirements(tmp_path) == []


def test_requirements_are_read_in_order(tmp_path):
    records = [
        {"cell_index": 2, "line": 1, "source": "%pip install a", "argv": ["a"]},
        {
            "cell_index": 4,
            "line": 3,
            "source": "!pip install -r r",
            "argv": ["-r", "requirements/0-r"],
        },
    ]
    (tmp_path / "requirements.json").write_text(json.dumps(records))
    reqs = load_requirements(tmp_path)
    assert reqs == [Requirement(**r) for r in records]
    assert [r.to_json() for r in reqs] == records


def test_bad_requirements_json_names_the_file(tmp_path):
    (tmp_path / "requirements.json").write_text("[{not json")
    with pytest.raises(BundleError, match=r"requirements\.json: not valid JSON"):
        load_requirements(tmp_path)


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ({"cell_index": 0}, r"requirements\.json: expected a list"),
        ([["a"]], r"requirements\.json\[0\]: expected an object"),
        ([{"cell_index": 0, "line": 1, "source": "s"}], r"requirements\.json\[0\]: .*argv"),
        (
            [{"cell_index": 0, "line": 1, "source": "s", "argv": "tqdm"}],
            r"requirements\.json\[0\]: field 'argv' is not list\[str\]",
        ),
        (
            [{"cell_index": "1", "line": 1, "source": "s", "argv": []}],
            r"requirements\.json\[0\]: field 'cell_index' is not int",
        ),
        (
            [{"cell_index": 0, "line": 1, "source": "s", "argv": [], "extra": 1}],
            r"requirements\.json\[0\]: unknown field 'extra'",
        ),
    ],
)
def test_requirements_json_of_the_wrong_shape_names_file_and_field(tmp_path, content, words):
    (tmp_path / "requirements.json").write_text(json.dumps(content))
    with pytest.raises(BundleError, match=words):
        load_requirements(tmp_path)


# --- manifest.json and cells.json ----------------------------------------------------------------


def test_what_is_written_is_what_is_read(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    nbformat.write(new_notebook(cells=[new_code_cell("%pip install tqdm\nx = 1")]), ws / "nb.ipynb")
    spec = JobSpec.model_validate({"name": "t", "source": {"kind": "notebook", "path": "nb.ipynb"}})
    spec.parameters = {"lr": 0.1}
    manifest = compile_bundle(spec, ws, tmp_path / "bundle")
    assert read_manifest(tmp_path / "bundle") == manifest
    on_disk = json.loads((tmp_path / "bundle" / "manifest.json").read_text())
    assert on_disk["selection"] == {"mode": "all", "indices": [], "tags": []}
    assert on_disk["requirements"] == 1 and on_disk["format"] == 1
    assert [c.injected for c in read_cells(tmp_path / "bundle")] == [True, False]
    assert isinstance(manifest, BundleManifest)


def test_missing_manifest_names_the_file(tmp_path):
    with pytest.raises(BundleError, match=r"manifest\.json: no such bundle file"):
        read_manifest(tmp_path)


def test_cells_json_without_a_source_names_the_field(tmp_path):
    (tmp_path / "cells.json").write_text(json.dumps([{"cell_index": 0}]))
    with pytest.raises(BundleError, match=r"cells\.json\[0\]: .*source"):
        read_cells(tmp_path)
