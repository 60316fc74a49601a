"""Notebook -> bundle: cell selection, parameters, %pip, workspace files, content hash."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from trainhub.bundle.compile import compile_bundle
from trainhub.bundle.errors import BundleError
from trainhub.bundle.requirements import load_requirements, pip_refusal
from trainhub.bundle.schema import BundleManifest, read_cells
from trainhub.bundle.workspace import GitignoreMatcher, collect_workspace
from trainhub.jobs.spec import JobSpec

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "notebooks"


def write_notebook(path: Path, cells: list) -> Path:
    nb = new_notebook(
        cells=[c if isinstance(c, nbformat.NotebookNode) else new_code_cell(c) for c in cells]
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def tagged(source: str, *tags: str) -> nbformat.NotebookNode:
    cell = new_code_cell(source)
    cell.metadata["tags"] = list(tags)
    return cell


def notebook_spec(path: str, **extra) -> JobSpec:
    return JobSpec.model_validate(
        {"name": "t", "source": {"kind": "notebook", "path": path, **extra}}
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copy(FIXTURES / "select.ipynb", ws / "select.ipynb")
    return ws


def compile_(
    ws: Path, spec: JobSpec, bundle: Path | None = None, **kwargs
) -> tuple[BundleManifest, Path]:
    bundle = bundle or ws.parent / "bundle"
    return compile_bundle(spec, ws, bundle, **kwargs), bundle


def files_in(directory: Path) -> set[str]:
    return {p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file()}


# --- selection -----------------------------------------------------------------------------------


def test_all_takes_code_cells_in_order_without_skipped(workspace):
    manifest, bundle = compile_(workspace, notebook_spec("select.ipynb"))
    cells = read_cells(bundle)
    assert [c.cell_index for c in cells] == [1, 2, 3, 6]
    assert manifest.cell_indices == [1, 2, 3, 6]
    nb = nbformat.read(workspace / "select.ipynb", as_version=4)
    for cell in cells:
        assert cell.source == nb.cells[cell.cell_index].source
        assert cell.tags == nb.cells[cell.cell_index].metadata.get("tags", [])
        assert not cell.injected
    on_disk = json.loads((bundle / "cells.json").read_text())
    assert on_disk[0] == {
        "cell_index": 1,
        "source": "import math\nsetup_done = True",
        "tags": ["setup"],
        "injected": False,
    }
    assert json.loads((bundle / "manifest.json").read_text())["kind"] == "notebook"


def test_indices_are_sorted_and_skip_tag_still_wins(workspace):
    spec = notebook_spec("select.ipynb", cells={"mode": "indices", "indices": [6, 4, 1]})
    manifest, bundle = compile_(workspace, spec)
    assert [c.cell_index for c in read_cells(bundle)] == [1, 6]
    assert any("cell 5" in w and "trainhub:skip" in w for w in manifest.warnings)


@pytest.mark.parametrize(
    ("index", "words"),
    [
        (0, "cell 1 (index 0) is a markdown cell"),
        (5, "cell 6 (index 5) is a markdown cell"),
        (7, "cell index 7 (cell 8) does not exist; the notebook has 7 cells"),
    ],
)
def test_bad_indices_are_named(workspace, index, words):
    spec = notebook_spec("select.ipynb", cells={"mode": "indices", "indices": [1, index]})
    with pytest.raises(BundleError, match=r"select\.ipynb") as err:
        compile_(workspace, spec)
    assert words in str(err.value)


def test_tags_select_and_skip(workspace):
    spec = notebook_spec("select.ipynb", cells={"mode": "tags", "tags": ["train"]})
    _, bundle = compile_(workspace, spec)
    assert [c.cell_index for c in read_cells(bundle)] == [3, 6]
    spec = notebook_spec("select.ipynb", cells={"mode": "tags", "tags": ["setup", "report"]})
    _, bundle = compile_(workspace, spec, workspace.parent / "b2")
    assert [c.cell_index for c in read_cells(bundle)] == [1, 6]


def test_unknown_tag_is_an_error(workspace):
    spec = notebook_spec("select.ipynb", cells={"mode": "tags", "tags": ["nope"]})
    with pytest.raises(BundleError, match="no code cell is tagged nope"):
        compile_(workspace, spec)


# --- parameters ----------------------------------------------------------------------------------


def run_cells(bundle: Path) -> dict:
    """Execute the bundle's cells as plain Python (they hold no magics) and return the namespace."""
    namespace: dict = {}
    for cell in read_cells(bundle):
        exec(cell.source, namespace)
    return namespace


def test_parameters_are_injected_after_the_parameters_cell(workspace):
    spec = notebook_spec("select.ipynb")
    spec.parameters = {
        "lr": 0.5,
        "epochs": 4,
        "name": "it's",
        "layers": [1, 2],
        "gamma": float("inf"),
    }
    spec.allow_new_parameters = True
    manifest, bundle = compile_(workspace, spec)
    cells = read_cells(bundle)
    assert [(c.cell_index, c.injected) for c in cells] == [
        (1, False),
        (2, False),
        (None, True),
        (3, False),
        (6, False),
    ]
    assert cells[2].tags == ["injected-parameters"]
    namespace = run_cells(bundle)
    assert namespace["result"] == 0.5 * 4
    assert (namespace["name"], namespace["layers"], namespace["gamma"]) == (
        "it's",
        [1, 2],
        float("inf"),
    )
    # name, layers, gamma are not assigned in the parameters cell: allowed, so warned
    unknown = [w for w in manifest.warnings if "is not assigned in cell 3" in w]
    assert sorted(w.split("'")[1] for w in unknown) == ["gamma", "layers", "name"]
    assert manifest.parameters["lr"] == 0.5


def test_a_parameter_the_notebook_does_not_assign_is_refused_naming_those_it_does(
    workspace, tmp_path
):
    spec = notebook_spec("select.ipynb")
    spec.parameters = {"lr": 0.5, "learning_rate": 0.1}
    with pytest.raises(BundleError) as err:
        compile_(workspace, spec, tmp_path / "refused")
    assert str(err.value) == (
        "parameters.learning_rate: learning_rate is not assigned in cell 3 (parameters), which "
        "assigns epochs, lr; to set it anyway, submit with allow_new_parameters "
        "(trainhub submit --allow-new-parameter)"
    )
    assert not (tmp_path / "refused").exists()
    spec.allow_new_parameters = True
    manifest, _ = compile_(workspace, spec, tmp_path / "allowed")
    assert manifest.parameters == {"lr": 0.5, "learning_rate": 0.1}


def test_a_notebook_of_another_kernel_is_refused_naming_the_kernel(tmp_path):
    ws = tmp_path / "ws"
    write_notebook(ws / "nb.ipynb", ["x <- 1"])
    doc = json.loads((ws / "nb.ipynb").read_text())
    doc["metadata"] = {
        "kernelspec": {"name": "ir", "display_name": "R", "language": "R"},
        "language_info": {"name": "R"},
    }
    (ws / "nb.ipynb").write_text(json.dumps(doc))
    with pytest.raises(BundleError) as err:
        compile_(ws, notebook_spec("nb.ipynb"))
    assert str(err.value) == (
        "nb.ipynb is a notebook for the 'R' kernel (R); trainhub runs Python notebooks only"
    )
    doc["metadata"] = {"language_info": {"name": "julia"}}
    (ws / "nb.ipynb").write_text(json.dumps(doc))
    with pytest.raises(BundleError, match=r"'julia' kernel \(julia\)"):
        compile_(ws, notebook_spec("nb.ipynb"))
    doc["metadata"] = {"kernelspec": {"name": "python3", "language": "python"}}
    (ws / "nb.ipynb").write_text(json.dumps(doc))
    compile_(ws, notebook_spec("nb.ipynb"))  # a Python one compiles


def test_parameters_without_a_parameters_cell_go_first(tmp_path):
    ws = tmp_path / "ws"
    write_notebook(ws / "nb.ipynb", [new_markdown_cell("x"), "y = lr * 2"])
    spec = notebook_spec("nb.ipynb")
    spec.parameters = {"lr": 3}
    manifest, bundle = compile_(ws, spec)
    assert [c.cell_index for c in read_cells(bundle)] == [None, 1]
    assert run_cells(bundle)["y"] == 6
    assert any("no cell is tagged 'parameters'" in w for w in manifest.warnings)


def test_parameters_cell_not_selected_still_places_them(workspace):
    spec = notebook_spec("select.ipynb", cells={"mode": "tags", "tags": ["train"]})
    spec.parameters = {"lr": 1.0, "epochs": 3}
    manifest, bundle = compile_(workspace, spec)
    assert [c.cell_index for c in read_cells(bundle)] == [None, 3, 6]
    assert run_cells(bundle)["result"] == 3.0
    assert any("cell 3, tagged 'parameters', is not selected" in w for w in manifest.warnings)


# --- %pip ----------------------------------------------------------------------------------------

PIP_CELL = (
    "import os\n"
    "%pip install -q 'numpy<3' requests==2.31\n"
    "!pip install tqdm \\\n"
    "    rich\n"
    "if True:\n"
    "    !python -m pip install -r requirements.txt\n"
    "print('after')"
)


def test_pip_lines_become_requirements(tmp_path):
    ws = tmp_path / "ws"
    write_notebook(ws / "proj" / "nb.ipynb", [new_markdown_cell("m"), "x = 1", PIP_CELL])
    (ws / "proj" / "requirements.txt").write_text("packaging\n")
    manifest, bundle = compile_(ws, notebook_spec("proj/nb.ipynb"))
    reqs = load_requirements(bundle)
    assert [(r.cell_index, r.line) for r in reqs] == [(2, 2), (2, 3), (2, 6)]
    assert reqs[0].argv == ["-q", "numpy<3", "requests==2.31"]
    assert reqs[1].argv == ["tqdm", "rich"]
    assert reqs[2].argv == ["-r", "requirements/0-requirements.txt"]
    assert (bundle / reqs[2].argv[1]).read_text() == "packaging\n"
    assert manifest.requirements == 3
    cell = read_cells(bundle)[1]
    # Same number of lines, so tracebacks still point at the notebook's lines; still valid Python.
    assert cell.source.count("\n") == PIP_CELL.count("\n")
    compile(TransformerManager().transform_cell(cell.source), "cell", "exec")
    assert "%pip" not in "\n".join(ln.split("#")[0] for ln in cell.source.splitlines())
    assert cell.source.splitlines()[-1] == "print('after')"


@pytest.mark.parametrize(
    ("admin_allows", "backend_installs", "why"),
    [
        (False, True, "and the administrator has disabled %pip in jobs."),
        (True, False, "and the kubernetes backend does not run %pip in jobs"),
    ],
)
def test_pip_refused_saying_why(tmp_path, admin_allows, backend_installs, why):
    ws = tmp_path / "ws"
    write_notebook(ws / "nb.ipynb", ["x = 1", PIP_CELL])
    refused = pip_refusal(
        admin_allows=admin_allows, backend="kubernetes", backend_installs=backend_installs
    )
    with pytest.raises(BundleError) as err:
        compile_(ws, notebook_spec("nb.ipynb"), pip_refused=refused)
    message = str(err.value)
    assert "cell 2, line 2" in message and "%pip install -q 'numpy<3'" in message
    assert why in message and "image" in message
    assert not (tmp_path / "bundle").exists()
    assert pip_refusal(admin_allows=True, backend="local", backend_installs=True) is None


def test_pip_user_is_left_out_saying_so(tmp_path):
    """``--user`` would install into ~/.local, which later jobs and the user's kernel see; the
    job's own layer is what --user is for in JupyterLab (a place of one's own)."""
    ws = tmp_path / "ws"
    write_notebook(ws / "nb.ipynb", ["x = 1\n%pip install --user -q tqdm"])
    manifest, bundle = compile_(ws, notebook_spec("nb.ipynb"))
    assert load_requirements(bundle)[0].argv == ["-q", "tqdm"]
    (warning,) = manifest.warnings
    assert warning.startswith("cell 1, line 2: --user left out of `%pip install --user -q tqdm`")


def test_pip_requirement_file_outside_the_workspace_is_refused(tmp_path):
    ws = tmp_path / "ws"
    (tmp_path / "secret.txt").write_text("x\n")
    write_notebook(ws / "nb.ipynb", ["%pip install -r ../secret.txt"])
    with pytest.raises(
        BundleError, match=r"cell 1, line 1: '\.\./secret\.txt' is outside the workspace"
    ):
        compile_(ws, notebook_spec("nb.ipynb"))


def test_pip_with_variable_expansion_is_refused(tmp_path):
    ws = tmp_path / "ws"
    write_notebook(ws / "nb.ipynb", ["v = '1.0'\n%pip install pkg=={v}"])
    with pytest.raises(BundleError, match=r"cell 1, line 2: .*variable expansion"):
        compile_(ws, notebook_spec("nb.ipynb"))


def test_pip_local_package_points_into_the_bundle(tmp_path):
    ws = tmp_path / "ws"
    write_notebook(ws / "nb.ipynb", ["%pip install -e ./mypkg"])
    (ws / "mypkg").mkdir()
    (ws / "mypkg" / "pyproject.toml").write_text("[project]\nname='mypkg'\n")
    _, bundle = compile_(ws, notebook_spec("nb.ipynb"))
    argv = load_requirements(bundle)[0].argv
    assert argv == ["-e", "workspace/mypkg"]
    assert (bundle / argv[1] / "pyproject.toml").is_file()


# --- workspace files -----------------------------------------------------------------------------


def make_tree(ws: Path) -> None:
    write_notebook(ws / "proj" / "train.ipynb", ["print(open('data/small.csv').read())"])
    files = {
        "proj/data/small.csv": "a,b\n",
        "proj/model.py": "X = 1\n",
        "proj/outputs/run.log": "log\n",
        "proj/weights.ckpt": "w",
        "proj/keep.ckpt": "k",
        "proj/sub/.gitignore": "*.tmp\n",
        "proj/sub/notes.tmp": "t",
        "proj/sub/util.py": "",
        "proj/__pycache__/model.cpython-311.pyc": "",
        "proj/.ipynb_checkpoints/train-checkpoint.ipynb": "{}",
        "proj/checkpoints/100/manifest.json": "{}",
        "proj/checkpoints/100/model.pt": "m",
        "other/elsewhere.py": "",
        ".gitignore": "outputs/\n*.ckpt\n!keep.ckpt\n",
    }
    for rel, text in files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)


EXPECTED_FILES = {
    "proj/data/small.csv",
    "proj/model.py",
    "proj/keep.ckpt",
    "proj/sub/.gitignore",
    "proj/sub/util.py",
}


def git(ws: Path, *args: str) -> None:
    subprocess.run(
        ["git", *args],
        cwd=ws,
        check=True,
        capture_output=True,
        env={
            **os.environ,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@e",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@e",
        },
    )


def test_gitignore_through_git(tmp_path):
    ws = tmp_path / "ws"
    make_tree(ws)
    git(ws, "init", "-q")
    git(ws, "add", "proj/model.py", ".gitignore")
    git(ws, "commit", "-q", "-m", "init")  # the rest stays untracked: it is copied unless ignored
    manifest, bundle = compile_(ws, notebook_spec("proj/train.ipynb"))
    assert files_in(bundle / "workspace") == EXPECTED_FILES
    assert manifest.file_count == len(EXPECTED_FILES)
    assert manifest.workdir == "proj"
    assert (bundle / "workspace" / "proj" / "data" / "small.csv").read_text() == "a,b\n"


def test_gitignore_without_git_matches_git(tmp_path):
    ws = tmp_path / "ws"
    make_tree(ws)
    manifest, bundle = compile_(ws, notebook_spec("proj/train.ipynb"))
    assert files_in(bundle / "workspace") == EXPECTED_FILES
    assert manifest.total_bytes == sum((ws / f).stat().st_size for f in EXPECTED_FILES)


def test_checkpoints_in_a_custom_directory_are_skipped(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    write_notebook(ws / "nb.ipynb", ["x = 1"])
    (ws / "ckpt" / "0000000020").mkdir(parents=True)
    (ws / "ckpt" / "0000000020" / "manifest.json").write_text("{}")
    (ws / "ckpt" / "0000000020" / "state.pt").write_text("s")
    assert "ckpt/0000000020/state.pt" in collect_workspace(ws.resolve(), ws.resolve())
    monkeypatch.setenv("TRAINHUB_CHECKPOINT_DIR", str(ws / "ckpt"))
    assert set(collect_workspace(ws.resolve(), ws.resolve())) == {"nb.ipynb"}


def test_job_directories_inside_the_workspace_are_skipped(tmp_path):
    ws = tmp_path / "ws"
    write_notebook(ws / "nb.ipynb", ["x = 1"])
    job = ws / "jobs" / "t-1234"
    (job / "logs").mkdir(parents=True)
    (job / "spec.json").write_text("{}")
    (job / "events.jsonl").write_text("")
    (ws / "jobs" / "readme.md").write_text("r")
    files = collect_workspace(ws.resolve(), ws.resolve())
    assert set(files) == {"jobs/readme.md", "nb.ipynb"}


def test_size_cap_names_the_largest_files(tmp_path):
    ws = tmp_path / "ws"
    write_notebook(ws / "nb.ipynb", ["x = 1"])
    (ws / "big.bin").write_bytes(b"\0" * 3 * 2**20)
    (ws / "medium.bin").write_bytes(b"\0" * 2**20)
    with pytest.raises(BundleError) as err:
        compile_(ws, notebook_spec("nb.ipynb"), max_workspace_bytes=2 * 2**20)
    message = str(err.value)
    assert "over the 2.0 MiB cap" in message
    assert "big.bin (3.0 MiB)" in message and "medium.bin (1.0 MiB)" in message
    assert message.index("big.bin") < message.index("medium.bin")


def test_symlink_out_of_the_workspace_is_left_out_with_a_note(tmp_path):
    ws = tmp_path / "ws"
    write_notebook(ws / "nb.ipynb", ["x = 1"])
    (tmp_path / "outside.txt").write_text("secret")
    (ws / "leak.txt").symlink_to(tmp_path / "outside.txt")
    (ws / "gone.txt").symlink_to(tmp_path / "absent.txt")
    (ws / "kept.txt").write_text("kept")
    manifest, bundle = compile_(ws, notebook_spec("nb.ipynb"))
    assert files_in(bundle / "workspace") == {"kept.txt"}
    assert "leak.txt is a link out of the workspace; left out" in manifest.warnings
    assert "gone.txt is a link out of the workspace; left out" in manifest.warnings
    # The note never says where a link leads, or whether that exists.
    assert not any(str(tmp_path) in w or "outside" in w or "absent" in w for w in manifest.warnings)
    assert not any(b"secret" in p.read_bytes() for p in bundle.rglob("*") if p.is_file())


def test_symlinked_directory_out_of_the_workspace_is_left_out_with_a_note(tmp_path):
    # A link at the workspace root (a home directory's ~/data) must not stop every notebook
    # next to it from being submitted.
    ws = tmp_path / "ws"
    write_notebook(ws / "nb.ipynb", ["x = 1"])
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "big.bin").write_bytes(b"\0" * 100)
    (ws / "data").symlink_to(tmp_path / "elsewhere")
    manifest, bundle = compile_(ws, notebook_spec("nb.ipynb"))
    assert files_in(bundle / "workspace") == set()
    assert manifest.warnings == ["data is a link to a directory; not followed"]


def test_a_fifo_in_the_workspace_is_left_out_rather_than_read(tmp_path):
    ws = tmp_path / "ws"
    write_notebook(ws / "nb.ipynb", ["x = 1"])
    os.mkfifo(ws / "pipe")
    manifest, bundle = compile_(ws, notebook_spec("nb.ipynb"))
    assert files_in(bundle / "workspace") == set()
    assert manifest.warnings == ["pipe is not a regular file; left out"]


def test_ignored_symlink_out_of_the_workspace_is_harmless(tmp_path):
    ws = tmp_path / "ws"
    write_notebook(ws / "nb.ipynb", ["x = 1"])
    (tmp_path / "scratch").mkdir()
    (ws / "scratch").symlink_to(tmp_path / "scratch")
    (ws / ".gitignore").write_text("scratch\n")
    git(ws, "init", "-q")
    manifest, bundle = compile_(ws, notebook_spec("nb.ipynb"))
    assert files_in(bundle / "workspace") == {".gitignore"}
    assert manifest.warnings == []


def test_symlink_inside_the_workspace_is_copied_as_a_file(tmp_path):
    ws = tmp_path / "ws"
    write_notebook(ws / "nb.ipynb", ["x = 1"])
    (ws / "real.txt").write_text("content")
    (ws / "alias.txt").symlink_to(ws / "real.txt")
    _, bundle = compile_(ws, notebook_spec("nb.ipynb"))
    copied = bundle / "workspace" / "alias.txt"
    assert copied.read_text() == "content" and not copied.is_symlink()


def test_content_hash_is_stable_and_tracks_content(tmp_path):
    ws = tmp_path / "ws"
    make_tree(ws)
    first, _ = compile_(ws, notebook_spec("proj/train.ipynb"), tmp_path / "b1")
    for path in ws.rglob("*"):
        os.utime(path, (1_000_000, 1_000_000))
    again, _ = compile_(ws, notebook_spec("proj/train.ipynb"), tmp_path / "b2")
    assert again.content_hash == first.content_hash

    (ws / "proj" / "model.py").write_text("X = 2\n")
    changed, _ = compile_(ws, notebook_spec("proj/train.ipynb"), tmp_path / "b3")
    assert changed.content_hash != first.content_hash

    spec = notebook_spec("proj/train.ipynb")
    spec.parameters = {"lr": 1}
    with_params, _ = compile_(ws, spec, tmp_path / "b4")
    assert len({first.content_hash, changed.content_hash, with_params.content_hash}) == 3


def test_entry_directory_exists_when_no_file_is_copied(tmp_path):
    ws = tmp_path / "ws"
    write_notebook(ws / "deep" / "er" / "nb.ipynb", ["x = 1"])
    manifest, bundle = compile_(ws, notebook_spec("deep/er/nb.ipynb"))
    assert (manifest.file_count, manifest.workdir) == (0, "deep/er")
    assert (bundle / "workspace" / "deep" / "er").is_dir()


def test_script_bundle(tmp_path):
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "train.py").write_text("print('hi')\n")
    (ws / "src" / "lib.py").write_text("")
    spec = JobSpec.model_validate(
        {"name": "s", "source": {"kind": "script", "path": "src/train.py", "args": ["--lr", "0.1"]}}
    )
    manifest, bundle = compile_(ws, spec)
    assert (manifest.kind, manifest.entry, manifest.args, manifest.workdir) == (
        "script",
        "src/train.py",
        ["--lr", "0.1"],
        "src",
    )
    assert manifest.notebook_sha256 is None
    assert files_in(bundle / "workspace") == {"src/train.py", "src/lib.py"}
    assert not (bundle / "cells.json").exists()


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("../escape.ipynb", "outside the workspace"),
        ("missing.ipynb", "no such file"),
        ("broken.ipynb", "broken.ipynb is not a readable notebook"),
    ],
)
def test_bad_entries_are_named(tmp_path, path, words):
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "escape.ipynb").write_text("{}")
    (ws / "broken.ipynb").write_text("{not json")
    with pytest.raises(BundleError, match=words):
        compile_(ws, notebook_spec(path))


def test_bundle_dir_must_be_empty(workspace):
    bundle = workspace.parent / "bundle"
    bundle.mkdir()
    (bundle / "stale").write_text("")
    with pytest.raises(BundleError, match="is not empty"):
        compile_(workspace, notebook_spec("select.ipynb"), bundle)


# --- the gitignore matcher -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rules", "path", "is_dir", "ignored"),
    [
        ("*.log", "a/b/x.log", False, True),
        ("/build", "build", True, True),
        ("/build", "src/build", True, False),
        ("docs/*.md", "docs/a.md", False, True),
        ("docs/*.md", "docs/sub/a.md", False, False),
        ("**/cache", "a/b/cache", True, True),
        ("logs/**", "logs/a/b.txt", False, True),
        ("a/**/z", "a/z", False, True),
        ("a/**/z", "a/x/y/z", False, True),
        ("out/", "out", False, False),
        ("out/", "out", True, True),
        ("*.ckpt\n!best.ckpt", "best.ckpt", False, False),
        ("*.ckpt\n!best.ckpt", "last.ckpt", False, True),
        ("data[0-9].csv", "data7.csv", False, True),
        ("# comment\n\n", "# comment", False, False),
    ],
)
def test_gitignore_patterns(tmp_path, rules, path, is_dir, ignored):
    (tmp_path / ".gitignore").write_text(rules)
    matcher = GitignoreMatcher.for_ancestors(tmp_path, tmp_path)
    assert matcher.ignored(tmp_path / path, is_dir=is_dir) is ignored


def test_an_nbformat_3_notebook_is_upgraded_as_nbconvert_does(tmp_path):
    from nbformat import v3

    old = v3.new_notebook(
        worksheets=[
            v3.new_worksheet(
                cells=[v3.new_text_cell("markdown", "# old"), v3.new_code_cell("x = 3\nprint(x)")]
            )
        ]
    )
    (tmp_path / "old.ipynb").write_text(v3.writes_json(old))
    bundle = tmp_path / "bundle"
    compile_bundle(notebook_spec("old.ipynb"), tmp_path, bundle)
    assert [c["source"] for c in json.loads((bundle / "cells.json").read_text())] == [
        "x = 3\nprint(x)"
    ]
    upgraded = json.loads((bundle / "notebook.ipynb").read_text())
    assert upgraded["nbformat"] == 4 and len(upgraded["cells"]) == 2


def test_a_notebook_format_nbformat_cannot_read_is_refused_saying_which(tmp_path):
    (tmp_path / "odd.ipynb").write_text(json.dumps({"nbformat": 7, "cells": []}))
    with pytest.raises(BundleError, match=r"odd.ipynb: nbformat 7 is not a notebook format"):
        compile_bundle(notebook_spec("odd.ipynb"), tmp_path, tmp_path / "bundle")
