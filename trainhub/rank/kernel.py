"""What a cell finds as ``get_ipython().kernel``, ``input()`` and ``getpass()`` in a job.

Cells run in the rank's own process, in an IPython shell (:mod:`trainhub.rank.shell`), not
in a kernel behind ZMQ: that is what keeps a job's start far below papermill's. Code written
for JupyterLab still looks for the kernel: ``get_ipython().kernel.get_parent()`` (ipywidgets'
``Output``, libraries that tag what they publish with the request's id), ``input()``. So the
shell's ``kernel`` is ipykernel's own :class:`~ipykernel.kernelbase.Kernel` without sockets,
made on first use (importing ipykernel costs a job that never asks for it ~0.3 s), whose
parent request is one per cell; and a job has no one to answer a prompt, so ``input()`` and
``getpass()`` fail at once, as a kernel without a stdin channel does, but saying why.
"""

from __future__ import annotations

import builtins
import getpass
import sys
from typing import Any, ClassVar

from IPython.core.error import StdinNotImplementedError

NO_INPUT = (
    "{what} was called, but a job runs unattended and no one can answer it; give the value "
    "as a parameter instead (a cell tagged 'parameters', trainhub submit -p NAME=VALUE)"
)


def refuse_input(prompt: object = "", stream: Any = None) -> str:
    raise StdinNotImplementedError(NO_INPUT.format(what="input()"))


def refuse_getpass(prompt: object = "", stream: Any = None) -> str:
    raise StdinNotImplementedError(NO_INPUT.format(what="getpass()"))


def refuse_prompts() -> None:
    """``input()`` and ``getpass()`` fail at once (ipykernel swaps them the same way)."""
    builtins.input = refuse_input
    getpass.getpass = refuse_getpass


def cell_request(cell_id: str) -> dict[str, Any]:
    """The parent request of a cell's run, as a kernel sees an ``execute_request``."""
    return {
        "header": {"msg_id": cell_id, "msg_type": "execute_request", "session": "trainhub"},
        "parent_header": {},
        "metadata": {},
        "content": {"allow_stdin": False},
    }


def job_kernel(shell: Any, request: dict[str, Any]) -> Any:
    """ipykernel's Kernel with no sockets, attached to ``shell``, in ``request``."""
    from ipykernel.kernelbase import Kernel

    class JobKernel(Kernel):
        implementation = "trainhub"
        implementation_version = "1"
        language_info: ClassVar[dict[str, str]] = {"name": "python"}

        def raw_input(self, prompt: str = "") -> str:
            return refuse_input(prompt)

        def getpass(self, prompt: str = "", stream: Any = None) -> str:
            return refuse_getpass(prompt)

    kernel = JobKernel()
    kernel.shell = shell
    kernel.set_parent([], request, channel="shell")
    return kernel


# --- ipywidgets' Output -------------------------------------------------------------------------


def capturing_output() -> Any | None:
    """The ipywidgets ``Output`` whose ``with`` block the code is in, if any. It marks itself
    with the kernel's current request (``msg_id``); JupyterLab's frontend, and nbclient, then
    put what is shown meanwhile into the widget instead of the cell."""
    ipywidgets = sys.modules.get("ipywidgets")
    if ipywidgets is None:
        return None
    from ipywidgets.widgets.widget import _instances  # every live widget, by model id

    return next(
        (w for w in list(_instances.values()) if isinstance(w, ipywidgets.Output) and w.msg_id),
        None,
    )


def into_output_widget(output: dict[str, Any]) -> bool:
    """Add ``output`` (nbformat's form) to the capturing ``Output`` widget, if one is; a stream
    continues the widget's last one, as in a cell."""
    widget = capturing_output()
    if widget is None:
        return False
    outputs = list(widget.outputs)
    last = outputs[-1] if outputs else {}
    if output["output_type"] == "stream" and last.get("name") == output["name"]:
        outputs[-1] = {**last, "text": last.get("text", "") + output["text"]}
    else:
        outputs.append(output)
    widget.outputs = tuple(outputs)
    return True


def clear_output_widget() -> bool:
    """``clear_output()`` within an ``Output`` widget clears the widget, not the cell."""
    widget = capturing_output()
    if widget is None:
        return False
    widget.outputs = ()
    return True
