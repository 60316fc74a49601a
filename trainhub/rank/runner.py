"""Runs a bundle inside one rank: ``python -m trainhub.rank.runner <bundle_dir>``.

Started by torchrun (locally or in a pod) with RANK, WORLD_SIZE, ... and TRAINHUB_JOB_DIR,
TRAINHUB_ATTEMPT in the environment. Everything the rank prints, C extensions and ``!``
subprocesses included, is appended to ``logs/rank-<r>.log``. Notebook cells run in order in
an IPython shell (no kernel), so magics behave as in JupyterLab; a failure is written to
``status/<attempt>/rank-<r>.json`` naming the cell and the line, and the failure class.

Exit status: 0 when every cell ran (or the code called ``sys.exit(0)``), 1 otherwise.
"""

from __future__ import annotations

import base64
import contextlib
import io
import os
import re
import runpy
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from types import TracebackType
from typing import Any

from trainhub.bundle.layout import WORKSPACE
from trainhub.bundle.schema import BundleCell, BundleManifest, cell_label, read_cells, read_manifest
from trainhub.jobs.directory import JobDir, write_json_atomic
from trainhub.jobs.states import FailureClass
from trainhub.lifecycle.classify import explain_exception
from trainhub.rank.logcap import capped_output
from trainhub.rank.logmarks import cell_start, internal
from trainhub.rank.notebook import NotebookCapture, captured

MAX_TRACEBACK_CHARS = 64 * 1024
PIP_TIMEOUT_S = 3600.0
_IMAGE_EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/svg+xml": "svg"}
_DEFAULT_REPR = re.compile(r"^<[\w.]+ object(?: at 0x[0-9a-f]+)?>$")


@dataclass(frozen=True)
class RankContext:
    rank: int
    world_size: int
    attempt: int
    job: JobDir

    @classmethod
    def from_env(cls, bundle_dir: Path) -> RankContext:
        job_dir = os.environ.get("TRAINHUB_JOB_DIR") or str(bundle_dir.resolve().parent)
        return cls(
            rank=int(os.environ.get("RANK", "0")),
            world_size=int(os.environ.get("WORLD_SIZE", "1")),
            attempt=int(os.environ.get("TRAINHUB_ATTEMPT", "0")),
            job=JobDir(job_dir),
        )


@dataclass
class Failure:
    exc: BaseException
    traceback_text: str
    cell_index: int | None = None
    line: int | None = None
    file: str | None = None
    raised_at: dict[str, Any] | None = None


# --- log redirection ----------------------------------------------------------------------


def redirect_output(log_path: Path) -> None:
    """Point fds 1 and 2 at the rank log, so C code and child processes write there too,
    within the log limits (:mod:`trainhub.rank.logcap`: from here on this is a child process)."""
    capped_output(log_path)
    null = os.open(os.devnull, os.O_RDONLY)  # input() fails at once instead of hanging a rank
    os.dup2(null, 0)
    os.close(null)
    # New stream objects: the old ones may have found fd 1 seekable (a file) and now it is a pipe.
    encoding = sys.stdout.encoding or "utf-8"
    for name, fd in (("stdout", 1), ("stderr", 2)):
        stream = open(  # noqa: SIM115 - lives as long as the process
            fd, "w", buffering=1, encoding=encoding, errors="backslashreplace", closefd=False
        )
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def say(message: str) -> None:
    print(internal(message), end="", flush=True)


# --- rich output as text --------------------------------------------------------------------


class _TextFromHTML(HTMLParser):
    _BLOCKS = frozenset(
        {"p", "div", "br", "tr", "li", "h1", "h2", "h3", "h4", "h5", "h6", "table", "pre"}
    )

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._hidden += 1
        elif tag in self._BLOCKS:
            self.parts.append("\n")
        elif tag in ("td", "th"):
            self.parts.append("\t")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._hidden = max(self._hidden - 1, 0)

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    parser = _TextFromHTML()
    parser.feed(html)
    lines = (re.sub(r"[ \t]+", " ", ln).strip() for ln in "".join(parser.parts).splitlines())
    return "\n".join(ln for ln in lines if ln)


class OutputWriter:
    """Renders display data into the log: text as text, images into outputs/."""

    def __init__(self, ctx: RankContext) -> None:
        self.ctx = ctx
        self.cell_index: int | None = None
        self._counts: dict[int | None, int] = {}

    def render(self, data: dict[str, Any]) -> None:
        for mime, ext in _IMAGE_EXTENSIONS.items():
            if mime in data:
                self._save_image(data[mime], ext)
                return
        plain = data.get("text/plain")
        if "text/html" in data and (plain is None or _DEFAULT_REPR.match(plain.strip())):
            print(html_to_text(data["text/html"]))
        elif plain is not None:
            print(plain)
        elif "text/markdown" in data:
            print(data["text/markdown"])

    def _save_image(self, payload: str | bytes, ext: str) -> None:
        n = self._counts.get(self.cell_index, 0)
        self._counts[self.cell_index] = n + 1
        where = "params" if self.cell_index is None else str(self.cell_index)
        name = f"rank{self.ctx.rank}-cell{where}-{n}.{ext}"
        if isinstance(payload, str):
            payload = payload.encode() if ext == "svg" else base64.b64decode(payload)
        self.ctx.job.outputs.mkdir(parents=True, exist_ok=True)
        (self.ctx.job.outputs / name).write_bytes(payload)
        say(f"image saved: outputs/{name}")


# --- the IPython shell ------------------------------------------------------------------------


def _make_shell(
    ctx: RankContext, writer: OutputWriter, notebook: NotebookCapture | None = None
) -> Any:
    """An InteractiveShell whose cells are named after their notebook index; what they show
    goes to the log and, when this rank keeps one, to the executed notebook."""
    from IPython.core.compilerop import CachingCompiler
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher
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

        def _showtraceback(self, etype: type, evalue: BaseException, stb: list[str]) -> None:
            self.last_traceback_text = self.InteractiveTB.stb2text(stb)
            if notebook is not None and not _exit_ok(evalue):
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
    assert shell.display_formatter is not None
    # display(fig) of a matplotlib figure becomes a PNG, as with JupyterLab's inline backend.
    shell.display_formatter.formatters["image/png"].for_type_by_name(
        "matplotlib.figure", "Figure", _figure_png
    )
    return shell


def _figure_png(figure: Any) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight")
    return buffer.getvalue()


def _flush_figures(shell: Any) -> None:
    """Show figures a cell left open, then close them (what the inline backend does)."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return
    try:
        for number in pyplot.get_fignums():
            shell.display_pub.publish(shell.display_formatter.format(pyplot.figure(number))[0])
    finally:
        pyplot.close("all")


# --- locating an error ------------------------------------------------------------------------


def _frames(exc: BaseException) -> list[tuple[str, int]]:
    frames = []
    tb: TracebackType | None = exc.__traceback__
    while tb is not None:
        frames.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno))
        tb = tb.tb_next
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        frames.append((exc.filename, exc.lineno))
    return frames


def line_in(exc: BaseException, filename: str) -> int | None:
    """The line of the deepest frame executing code from ``filename``."""
    lines = [line for name, line in _frames(exc) if name == filename]
    return lines[-1] if lines else None


def innermost_user_frame(
    exc: BaseException, cell_names: dict[str, int | None], workspace: Path
) -> dict[str, Any] | None:
    """Where the exception was raised in the user's own code: a cell or a workspace file."""
    for name, line in reversed(_frames(exc)):
        if name in cell_names:
            return {"cell_index": cell_names[name], "line": line}
        path = Path(name)
        if path.is_absolute() and path.resolve().is_relative_to(workspace):
            return {"file": path.resolve().relative_to(workspace).as_posix(), "line": line}
    return None


def _type_name(exc: BaseException) -> str:
    kind = type(exc)
    return (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )


def _exit_ok(exc: BaseException | None) -> bool:
    return isinstance(exc, SystemExit) and exc.code in (0, None)


# --- running ------------------------------------------------------------------------------------


def _cell_name(cell: BundleCell) -> str:
    return (
        "<trainhub-parameters>" if cell.cell_index is None else f"<trainhub-cell-{cell.cell_index}>"
    )


def run_cells(bundle_dir: Path, manifest: BundleManifest, ctx: RankContext) -> Failure | None:
    cells = read_cells(bundle_dir)
    with captured(ctx.job, cells, rank=ctx.rank, attempt=ctx.attempt) as notebook:
        return _run_cells(bundle_dir, cells, ctx, notebook)


def _run_cells(
    bundle_dir: Path, cells: list[BundleCell], ctx: RankContext, notebook: NotebookCapture | None
) -> Failure | None:
    workspace = (bundle_dir / WORKSPACE).resolve()
    writer = OutputWriter(ctx)
    shell = _make_shell(ctx, writer, notebook)
    compiler = shell.compile
    cell_names = {_cell_name(c): c.cell_index for c in cells}
    for position, cell in enumerate(cells):
        name = _cell_name(cell)
        compiler.labels[name] = (
            "parameters" if cell.cell_index is None else str(cell.cell_index + 1)
        )
        compiler.next_name = name
        writer.cell_index = cell.cell_index
        if not cell.injected:
            ctx.job.emit(
                "cell",
                rank=ctx.rank,
                attempt=ctx.attempt,
                cell_index=cell.cell_index,
                phase="start",
            )
            # A separator in the Logs tab; before the cell starts, so it is not in its output.
            print(cell_start(cell.cell_index, time.time()), end="", flush=True)
        started = time.monotonic()
        shell.last_traceback_text = ""
        if notebook is not None:
            notebook.start_cell(position, shell.execution_count)
        result = shell.run_cell(cell.source, store_history=True, cell_id=name)
        _flush_figures(shell)
        elapsed = round(time.monotonic() - started, 3)
        if notebook is not None:
            notebook.end_cell(result.success or _exit_ok(_error(result)), elapsed)
        if not cell.injected:
            ctx.job.emit(
                "cell",
                rank=ctx.rank,
                attempt=ctx.attempt,
                cell_index=cell.cell_index,
                phase="end",
                seconds=elapsed,
                ok=result.success or _exit_ok(_error(result)),
            )
        exc = _error(result)
        if exc is not None:
            if _exit_ok(exc):
                code = getattr(exc, "code", None)
                say(f"{cell_label(cell.cell_index)} called sys.exit({code}); the job stops here")
                return None
            text = shell.last_traceback_text or "".join(traceback.format_exception(exc))
            return Failure(
                exc=exc,
                traceback_text=text,
                cell_index=cell.cell_index,
                line=line_in(exc, name),
                raised_at=innermost_user_frame(exc, cell_names, workspace),
            )
        if shell.exit_now:  # exit() or quit() in a cell: stop, successfully
            say(f"{cell_label(cell.cell_index)} called exit(); the job stops here")
            return None
    return None


def _error(result: Any) -> BaseException | None:
    return result.error_before_exec or result.error_in_exec


def run_script(bundle_dir: Path, manifest: BundleManifest, ctx: RankContext) -> Failure | None:
    workspace = (bundle_dir / WORKSPACE).resolve()
    script = workspace / manifest.entry
    sys.argv = [str(script), *manifest.args]
    sys.path.insert(0, str(script.parent))
    ctx.job.emit("script", rank=ctx.rank, attempt=ctx.attempt, phase="start")
    started = time.monotonic()
    failure = None
    try:
        runpy.run_path(str(script), run_name="__main__")
    except BaseException as exc:  # the job's own code: anything it raises is its outcome
        if not _exit_ok(exc):
            where = innermost_user_frame(exc, {}, workspace)
            text = "".join(traceback.format_exception(exc))
            print(text, file=sys.stderr, end="")
            failure = Failure(
                exc=exc,
                traceback_text=text,
                file=manifest.entry,
                line=line_in(exc, str(script)),
                raised_at=where,
            )
    ctx.job.emit(
        "script",
        rank=ctx.rank,
        attempt=ctx.attempt,
        phase="end",
        seconds=round(time.monotonic() - started, 3),
        ok=failure is None,
    )
    return failure


def failure_status(failure: Failure) -> dict[str, Any]:
    exc = failure.exc
    type_name = _type_name(exc)
    message = f"exit status {exc.code}" if isinstance(exc, SystemExit) else str(exc)
    evidence = explain_exception(type_name, message, failure.traceback_text)
    if failure.cell_index is not None or failure.file is None:
        where = cell_label(failure.cell_index)
    else:
        where = failure.file
    if failure.line is not None:
        where += f", line {failure.line}"
    text = failure.traceback_text
    if len(text) > MAX_TRACEBACK_CHARS:
        text = "...(truncated)\n" + text[-MAX_TRACEBACK_CHARS:]
    return {
        "outcome": "error",
        "failure_class": evidence.failure_class.value,
        "evidence": evidence.to_dict(),
        "exception": type_name,
        "message": message,
        "cell_index": failure.cell_index,
        "file": failure.file,
        "line": failure.line,
        "where": where,
        "raised_at": failure.raised_at,
        "traceback": text,
    }


def run_bundle(bundle_dir: Path, ctx: RankContext) -> int:
    """Run the bundle in this process (output already redirected); returns the exit status."""
    status_path = ctx.job.rank_status(ctx.attempt, ctx.rank)
    try:
        manifest = read_manifest(bundle_dir)
        workdir = (bundle_dir / WORKSPACE / manifest.workdir).resolve()
        os.chdir(workdir)
        sys.path.insert(0, str(workdir))
    except Exception as exc:  # an unreadable bundle is the platform's fault, not the user's
        say(f"cannot load the bundle {bundle_dir}: {exc}")
        write_json_atomic(
            status_path,
            {
                "outcome": "error",
                "failure_class": FailureClass.INFRASTRUCTURE.value,
                "exception": _type_name(exc),
                "message": f"cannot load the bundle: {exc}",
                "cell_index": None,
                "line": None,
                "traceback": traceback.format_exc(),
            },
        )
        return 1
    # No display in a job. Set even when inherited (a kernel exports its inline backend).
    os.environ["MPLBACKEND"] = "Agg"
    warnings.filterwarnings("ignore", message="To exit: use 'exit', 'quit', or Ctrl-D.")
    say(
        f"rank {ctx.rank}/{ctx.world_size}, attempt {ctx.attempt}: "
        f"running {manifest.kind} {manifest.entry}"
    )
    run = run_cells if manifest.kind == "notebook" else run_script
    failure = run(bundle_dir, manifest, ctx)
    if failure is None and not _flush_checkpoints(status_path):
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    if failure is None:
        write_json_atomic(status_path, {"outcome": "ok"})
        say("finished")
        return 0
    status = failure_status(failure)
    write_json_atomic(status_path, status)
    ctx.job.emit(
        "cell_error",
        rank=ctx.rank,
        attempt=ctx.attempt,
        cell_index=status["cell_index"],
        file=status["file"],
        line=status["line"],
        exception=status["exception"],
        message=status["message"][:500],
        failure_class=status["failure_class"],
    )
    say(
        f"failed in {status['where']}: {status['exception']}: {status['message'][:500]} "
        f"({status['failure_class']} failure)"
    )
    return 1


def _flush_checkpoints(status_path: Path) -> bool:
    """Finish a background checkpoint save the code started, so none is lost at exit."""
    checkpoint = sys.modules.get("trainhub.checkpoint")
    if checkpoint is None:
        return True
    try:
        checkpoint.wait_all()
        return True
    except Exception as exc:  # a write that failed (disk full, lost mount) is the platform's side
        say(f"a checkpoint could not be written: {exc}")
        write_json_atomic(
            status_path,
            {
                "outcome": "error",
                "failure_class": FailureClass.INFRASTRUCTURE.value,
                "exception": _type_name(exc),
                "message": f"a checkpoint could not be written: {exc}",
                "cell_index": None,
                "line": None,
                "traceback": traceback.format_exc(),
            },
        )
        return False


def _stop_handler(ctx: RankContext) -> Any:
    """SIGTERM (preemption, suspension, a deleted pod, a cancel): run the callbacks the code
    registered with ``trainhub.checkpoint.on_stop``, finish their saves, then end by SIGTERM
    as a rank without a handler would."""
    from trainhub.checkpoint import stopping  # not in the handler: it may interrupt an import

    def handler(signum: int, frame: Any) -> None:
        signal.signal(signum, signal.SIG_IGN)  # once, however many signals follow
        name = signal.Signals(signum).name
        say(f"asked to stop ({name}): running the job's stop callbacks")
        ctx.job.emit("stop_requested", rank=ctx.rank, attempt=ctx.attempt, signal=name)
        checkpoint = sys.modules.get("trainhub.checkpoint")
        # A background save that failed earlier is said, and is no reason not to save now.
        errors = _errors_of(checkpoint.wait_all) if checkpoint else []
        errors += stopping.run_stop_callbacks()
        if checkpoint is not None:
            errors += _errors_of(checkpoint.wait_all)  # a callback's background save
        for error in errors:
            say(f"while stopping: {error}")
        sys.stdout.flush()
        sys.stderr.flush()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    return handler


def _errors_of(fn: Any) -> list[str]:
    try:
        fn()
        return []
    except Exception as exc:
        return [f"{type(exc).__name__}: {exc}"]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m trainhub.rank.runner <bundle_dir>", file=sys.stderr)
        return 2
    bundle_dir = Path(args[0]).resolve()
    ctx = RankContext.from_env(bundle_dir)
    redirect_output(ctx.job.rank_log(ctx.rank))
    signal.signal(signal.SIGTERM, _stop_handler(ctx))
    # A private IPython directory: no user profile or startup files change what a job runs.
    ipython_dir = tempfile.mkdtemp(prefix="trainhub-ipython-")
    os.environ["IPYTHONDIR"] = ipython_dir
    code = 1
    try:
        code = run_bundle(bundle_dir, ctx)
        return code
    finally:
        shutil.rmtree(ipython_dir, ignore_errors=True)


# --- requirements ---------------------------------------------------------------------------------


def install_requirements(
    bundle_dir: Path, log_path: Path, *, timeout_s: float = PIP_TIMEOUT_S
) -> tuple[bool, str]:
    """Run the bundle's ``pip install`` lines once, before any rank starts.

    pip's output is appended to ``log_path``.

    Returns (ok, detail); a failed install is an environment failure
    (``classify_exception(PIP_INSTALL_ERROR, detail, "")``).
    """
    from trainhub.bundle.requirements import (
        load_requirements,  # the supervisor's side, not a rank's
    )

    bundle_dir = Path(bundle_dir)
    requirements = load_requirements(bundle_dir)
    if not requirements:
        return True, "no packages to install"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    from trainhub.jobs.environment import admin_allowed, inherited

    # pip runs build hooks of what it installs: they get what a rank gets, not the server's tokens.
    env = {
        **inherited(os.environ, admin_allowed()),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_INPUT": "1",
    }
    started = time.monotonic()
    for req in requirements:
        argv = [sys.executable, "-m", "pip", "install", *req.argv]
        where = f"{cell_label(req.cell_index)}, line {req.line}"
        with open(log_path, "ab", buffering=0) as log:
            log.write(f"[trainhub] {where}: {req.source}\n".encode())
            start = log.tell()
            try:
                proc = subprocess.run(
                    argv,
                    cwd=bundle_dir,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    timeout=timeout_s,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                return False, f"`{req.source}` ({where}) ran over {timeout_s:.0f} s and was stopped"
        if proc.returncode != 0:
            tail = _last_lines(log_path, start)
            return False, f"`{req.source}` ({where}) exited with status {proc.returncode}: {tail}"
    return True, f"installed {len(requirements)} pip line(s) in {time.monotonic() - started:.1f} s"


def _last_lines(path: Path, start: int, count: int = 5) -> str:
    with open(path, "rb") as f:
        f.seek(start)
        text = f.read()[-8192:].decode("utf-8", "replace")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return " | ".join(lines[-count:]) or "no output"


if __name__ == "__main__":
    sys.exit(main())
