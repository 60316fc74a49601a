"""What works in JupyterLab's kernel works in a job's cells: one rank run of a notebook that
uses the kernel's display machinery, magics and prompts, looked at from the log and the
executed notebook."""

from __future__ import annotations

import json

import pytest

from tests.local.test_runner import Run, cells_job, run_rank

CELLS = [
    "%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.title('inline')",
    "from IPython.display import display, clear_output\n"
    "handle = display('first', display_id=True)\n"
    "handle.update('updated')\n"
    "print(get_ipython().kernel.get_parent()['header']['msg_id'])",
    "for i in range(3):\n    clear_output(wait=True)\n    print('tick', i)",
    "%%capture captured\nprint('captured text')",
    "print('from capture:', captured.stdout.strip())",
    "%%writefile written.txt\nwritten by a cell magic",
    "!cat written.txt",
    "%time total = sum(range(10))\nprint('total', total)",
    "import ipywidgets\nslider = ipywidgets.IntSlider(value=5, description='lr')\n"
    "display(slider)\nslider.value = 7",
    "out = ipywidgets.Output()\ndisplay(out)\nprint('in the cell')\n"
    "with out:\n    print('gone')\nout.clear_output()\n"
    "with out:\n    print('in the widget')\n    display('shown there')",
    "%gui tk",
]


@pytest.fixture(scope="module")
def kernel_run(tmp_path_factory) -> Run:
    pytest.importorskip("matplotlib_inline")
    tmp = tmp_path_factory.mktemp("kernel")
    return run_rank(cells_job(tmp, [*CELLS[:-1], "name = input('name? ')"]))


def executed(run: Run) -> list[dict]:
    return json.loads((run.job.root / "notebook.ipynb").read_text())["cells"]


def test_matplotlib_inline_shows_the_figure_as_png(kernel_run):
    outputs = executed(kernel_run)[0]["outputs"]
    assert [o["output_type"] for o in outputs] == ["execute_result", "display_data"]
    assert "image/png" in outputs[1]["data"]
    assert "image saved: outputs/rank0-cell0-0.png" in kernel_run.log


def test_display_by_id_updates_in_place_and_the_kernel_names_the_cell(kernel_run):
    outputs = executed(kernel_run)[1]["outputs"]
    assert outputs[0]["data"]["text/plain"] == "'updated'"
    assert outputs[1]["text"] == "<trainhub-cell-1>\n"


def test_clear_output_wait_keeps_the_last_output_only(kernel_run):
    assert executed(kernel_run)[2]["outputs"] == [
        {"output_type": "stream", "name": "stdout", "text": "tick 2\n"}
    ]


def test_magics_behave_as_in_the_kernel(kernel_run):
    cells = executed(kernel_run)
    assert cells[3]["outputs"] == []
    assert cells[4]["outputs"][0]["text"] == "from capture: captured text\n"
    assert cells[5]["outputs"][0]["text"] == "Writing written.txt\n"
    assert "written by a cell magic" in cells[6]["outputs"][0]["text"]
    assert "Wall time" in cells[7]["outputs"][0]["text"]
    assert "total 45" in kernel_run.log


def test_input_fails_at_once_saying_why(kernel_run):
    status = kernel_run.status
    assert (status["cell_index"], status["failure_class"]) == (len(CELLS) - 1, "code")
    assert status["message"].startswith("input() was called, but a job runs unattended")
    assert "as a parameter" in status["message"]


def test_a_window_backend_is_refused_naming_the_inline_one(tmp_path):
    run = run_rank(cells_job(tmp_path, [CELLS[-1]]))
    assert (
        "%matplotlib tk opens windows, and a job has no display; use %matplotlib inline "
        "(a job's default, as in JupyterLab)"
    ) in run.log


def test_widget_state_is_saved_as_jupyterlab_saves_it(kernel_run):
    notebook = json.loads((kernel_run.job.root / "notebook.ipynb").read_text())
    (view,) = notebook["cells"][8]["outputs"]
    model_id = view["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
    saved = notebook["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]
    assert saved["version_major"] == 2
    assert saved["state"][model_id]["model_name"] == "IntSliderModel"
    assert saved["state"][model_id]["state"]["value"] == 7


def test_an_output_widget_keeps_what_is_shown_within_it(kernel_run):
    notebook = json.loads((kernel_run.job.root / "notebook.ipynb").read_text())
    outputs = notebook["cells"][9]["outputs"]
    assert [o["output_type"] for o in outputs] == ["display_data", "stream"]
    assert outputs[1]["text"] == "in the cell\n"  # the widget's clear_output left the cell be
    model_id = outputs[0]["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
    saved = notebook["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]
    assert saved["state"][model_id]["state"]["outputs"] == [
        {"output_type": "stream", "name": "stdout", "text": "in the widget\n"},
        {"output_type": "display_data", "data": {"text/plain": "'shown there'"}, "metadata": {}},
    ]
    assert "gone" in kernel_run.log and "in the widget" in kernel_run.log  # the log has it all
