"""A job's %pip install, run by its supervisor before the first attempt: the bundle's
requirements installed into the job's layer (pip's output in rank 0's log), or, when that
fails, the ENVIRONMENT verdict and an executed notebook that says why no cell ran."""

from __future__ import annotations

from trainhub.bundle.requirements import load_requirements
from trainhub.bundle.schema import Requirement
from trainhub.jobs.directory import JobDir
from trainhub.jobs.models import Verdict
from trainhub.jobs.states import FailureClass
from trainhub.lifecycle.classify import PIP_INSTALL_ERROR


def install_job_requirements(jobdir: JobDir, attempt: int) -> Verdict | None:
    """Install the bundle's requirements; None when there are none or they installed."""
    if not load_requirements(jobdir.bundle):
        return None
    from trainhub.rank.install import install_requirements

    jobdir.emit("pip_install", phase="start")
    # pip's output goes where the job's output is read (rank 0's log), into the job's layer.
    ok, detail, failed = install_requirements(
        jobdir.bundle, jobdir.rank_log(0), prefix=jobdir.pip_prefix
    )
    jobdir.emit("pip_install", phase="end", ok=ok)
    if ok:
        return None
    _write_unstarted_notebook(jobdir, attempt, failed, detail)
    return Verdict(
        failure_class=FailureClass.ENVIRONMENT,
        reason=f"%pip install failed: {detail}",
        attempt=attempt,
        cell_index=failed.cell_index if failed else None,
        line=failed.line if failed else None,
    )


def _write_unstarted_notebook(
    jobdir: JobDir, attempt: int, failed: Requirement | None, detail: str
) -> None:
    """A notebook job whose %pip line failed still has its executed notebook: the cells as
    written, none run, pip's failure in the cell of that line."""
    from trainhub.bundle.layout import NOTEBOOK
    from trainhub.bundle.schema import read_cells, read_json
    from trainhub.rank.notebook import write_unstarted

    bundle = jobdir.bundle
    if not (bundle / NOTEBOOK).exists():
        return  # a script job
    error = {"output_type": "error", "ename": PIP_INSTALL_ERROR, "evalue": detail}
    write_unstarted(
        jobdir,
        read_cells(bundle),
        read_json(bundle / NOTEBOOK),
        attempt=attempt,
        cell_index=failed.cell_index if failed else None,
        error={**error, "traceback": [detail]},
    )
