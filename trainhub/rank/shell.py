"""The IPython shell a rank's cells run in, with the pieces of ipykernel a notebook relies on
(docs/architecture.md, "Notebook -> job"): cells compiled under names that tracebacks show as
"Cell 8, line 3", a display publisher and display hook that send what cells show to the log as
text and to the executed notebook as data, the kernel object (:mod:`trainhub.rank.kernel`) and
``%matplotlib inline`` without an event loop. IPython is imported when the shell is made, not
with this module."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainhub.rank.failure import exit_ok, user_paths
from trainhub.rank.kernel import (
    cell_request,
    clear_output_widget,
    into_output_widget,
    job_kernel,
    refuse_prompts,
)

if TYPE_CHECKING:
    from trainhub.rank.context import RankContext
    from trainhub.rank.logdisplay import OutputWriter
    from trainhub.rank.nbcapture import NotebookCapture


def make_shell(
    ctx: RankContext,
    writer: OutputWriter,
    notebook: NotebookCapture | None = None,
    workspace: Path | None = None,
) -> Any:
    """An InteractiveShell whose cells are named after their notebook index; what they show
    goes to the log and, when this rank keeps one, to the executed notebook. Tracebacks name
    the workspace's files by their path in the user's workspace, not in the bundle's copy."""
    from IPython.core.compilerop import CachingCompiler
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.error import UsageError
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    # The log gets display data as text; the notebook gets the data itself.
    log_only = notebook.paused if notebook is not None else contextlib.nullcontext

    class CellCompiler(CachingCompiler):
        """Gives the next cell a file name we choose; tracebacks then say "Cell 8, line 3"."""

        def __init__(self) -> None:
            super().__init__()
            self.next_name: str | None = None
            self.labels: dict[str, str] = {}

        def get_code_name(self, raw_code: str, transformed_code: str, number: int) -> str:
            name, self.next_name = self.next_name, None  # nested run_cell calls get the default
            return name or super().get_code_name(raw_code, transformed_code, number)

        def format_code_name(self, name: str) -> tuple[str, str] | None:
            if name in self.labels:
                return "Cell", self.labels[name]
            return super().format_code_name(name)

    class LogDisplayHook(DisplayHook):
        def write_output_prompt(self) -> None:
            pass  # no "Out[n]:" in a log

        def write_format_data(self, format_dict: dict[str, Any], md_dict: Any = None) -> None:
            with log_only():
                writer.render(format_dict)
            if notebook is not None:
                notebook.result(format_dict, md_dict)

    class LogDisplayPublisher(DisplayPublisher):
        def publish(
            self, data: dict[str, Any], metadata: Any = None, *args: Any, **kwargs: Any
        ) -> None:
            with log_only():
                writer.render(data)
            if notebook is not None:
                transient, update = kwargs.get("transient"), kwargs.get("update", False)
                notebook.display(data, metadata, transient=transient, update=update)

        def clear_output(self, wait: bool = False) -> None:
            if notebook is None:
                super().clear_output(wait)
                return
            notebook.clear(wait)
            with notebook.paused():  # the terminal's erase codes are for the log alone
                super().clear_output(wait)

    class RankShell(InteractiveShell):
        compiler_class = CellCompiler  # type: ignore[assignment]
        displayhook_class = LogDisplayHook  # type: ignore[assignment]
        display_pub_class = LogDisplayPublisher  # type: ignore[assignment]
        last_traceback_text = ""
        request = cell_request("trainhub-start")
        _kernel: Any = None

        @property
        def kernel(self) -> Any:
            if self._kernel is None:
                self._kernel = job_kernel(self, self.request)
            return self._kernel

        def start_request(self, cell_id: str) -> None:
            """The cell about to run is the kernel's current request."""
            self.request = cell_request(cell_id)
            if self._kernel is not None:
                self._kernel.set_parent([], self.request, channel="shell")

        def enable_gui(self, gui: str | None = None) -> None:
            """``%matplotlib inline`` needs no event loop (ipykernel's answer too); a window
            toolkit's (``%gui tk``) cannot open without a display."""
            if gui not in (None, "inline"):
                raise UsageError(
                    f"%matplotlib {gui} opens windows, and a job has no display; "
                    "use %matplotlib inline (a job's default, as in JupyterLab)"
                )

        def _showtraceback(self, etype: type, evalue: BaseException, stb: list[str]) -> None:
            stb = [user_paths(entry, workspace) for entry in stb]
            self.last_traceback_text = self.InteractiveTB.stb2text(stb)
            if notebook is not None and not exit_ok(evalue):
                notebook.error(etype.__name__, str(evalue), list(stb))
            if issubclass(etype, SystemExit):
                return  # the runner reports it in one line, without IPython's advice
            if notebook is None:
                super()._showtraceback(etype, evalue, stb)
                return
            with notebook.paused():  # the traceback's text is for the log; the cell has it
                super()._showtraceback(etype, evalue, stb)

    config = Config()
    config.HistoryManager.enabled = False
    config.HistoryManager.hist_file = ":memory:"
    config.InteractiveShell.colors = "nocolor"
    config.InteractiveShell.autocall = 0
    shell = RankShell.instance(config=config)
    refuse_prompts()
    if notebook is not None:
        notebook.divert, notebook.divert_clear = into_output_widget, clear_output_widget
    return shell
