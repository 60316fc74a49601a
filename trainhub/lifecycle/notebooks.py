"""The executed notebooks of an attempt that ended where their ranks could not say how (killed,
crashed, exited past the runner, stopped): closed once the verdict is known, by whoever saw
the end (the local supervisor; on Kubernetes the reconcile that records it, or the cancel).
A notebook its rank closed itself as ``completed`` or ``failed`` is left as it is.

Once the job's end is recorded, the same process hands each executed notebook to nbformat
(:func:`finish_notebooks`): checked against the notebook schema and written as Jupyter writes
notebooks. Ranks write the file as they go with the standard library alone (importing nbformat
costs a rank start a second or more on a busy machine); nbformat has the last word."""

from __future__ import annotations

import json

from trainhub.jobs import confined, limits
from trainhub.jobs.directory import JobDir, notebook_name
from trainhub.jobs.models import Verdict
from trainhub.jobs.spec import JobSpec
from trainhub.jobs.states import FailureClass
from trainhub.rank.nbcells import dumps

# Verdicts of a stop: a notebook its rank left running is "stopped" by them, not "failed".
_STOPS = frozenset({FailureClass.CANCELLED, FailureClass.STOPPED_EARLY})


def close_notebooks(
    jobdir: JobDir, spec: JobSpec, attempt: int, verdict: Verdict, *, suspended: bool = False
) -> None:
    """Close the executed notebooks of ``attempt`` (each rank the spec keeps one for) that
    their ranks left unfinished, saying ``verdict``'s reason. A suspension or a stop leaves
    them ``stopped``; any other verdict is a failure."""
    failed = verdict.failure_class not in _STOPS and not suspended
    for rank in _notebook_ranks(spec):
        try:
            close_unfinished(jobdir, rank, attempt, verdict.reason, failed=failed)
        except OSError as e:  # a full disk: the verdict still stands, the log has it all
            jobdir.emit("notebook", rank=rank, error=str(e))


def finish_notebooks(jobdir: JobDir, spec: JobSpec) -> None:
    """Have nbformat validate and write the executed notebooks of a job that has ended (each
    rank the spec keeps one for). Called after the end is recorded: nothing waits for it."""
    for rank in _notebook_ranks(spec):
        try:
            finish_notebook(jobdir, rank)
        except OSError as e:  # a full disk: the rank's own file stays
            jobdir.emit("notebook", rank=rank, error=str(e))


def finish_notebook(job: JobDir, rank: int) -> bool:
    """Rewrite a rank's executed notebook with nbformat (its strings kept whole, as the rank
    wrote them), once it validates; one that does not stays as it is, and the job's events say
    why. Whether it was rewritten."""
    import nbformat

    try:
        with confined.opened(job.root, notebook_name(rank)) as f:
            text = f.read()
    except (OSError, confined.NotAJobFile):
        return False  # none written (the rank never started, or keeps none)
    try:
        node = nbformat.from_dict(json.loads(text))
        nbformat.validate(node)
    except (ValueError, nbformat.ValidationError) as e:
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        job.emit("notebook", rank=rank, error=f"not a valid notebook (nbformat 4): {reason}")
        return False
    data = nbformat.v4.writes(node, split_lines=False).encode()
    # The file cap holds for this form too: nbformat's indentation may not push it over.
    if data == text or len(data) > max(len(text), limits.current().notebook_bytes):
        return False
    confined.replace(job.root, notebook_name(rank), data)
    return True


def _notebook_ranks(spec: JobSpec) -> list[int]:
    world = spec.resources.world_size
    ranks = range(world) if spec.notebook_ranks == "all" else spec.notebook_ranks
    return [r for r in ranks if r < world]


def close_unfinished(
    job: JobDir, rank: int, attempt: int, reason: str, *, failed: bool = True
) -> bool:
    """Say in a rank's executed notebook how the attempt ended when the rank could not (killed,
    crashed, exited past the runner): ``state`` failed, the cell it was in ``error``, and the
    verdict's ``reason`` in ``metadata.trainhub.ended``. A notebook its rank closed as
    ``stopped`` (on SIGTERM) is one of them too unless the stop was a person's or a rule's
    (``failed``: the verdict is a failure). Whether it changed anything."""
    try:
        with confined.opened(job.root, notebook_name(rank)) as f:
            doc = json.loads(f.read())
    except (OSError, ValueError, confined.NotAJobFile):
        return False
    unfinished = {"running", "stopped"} if failed else {"running"}
    meta = doc.get("metadata", {}).get("trainhub", {})
    if meta.get("attempt") != attempt or meta.get("state") not in unfinished:
        return False
    meta.update(state="failed" if failed else "stopped", ended=reason)
    for cell in doc.get("cells", []):
        ran = cell.get("metadata", {}).get("trainhub", {})
        if ran.get("status") in unfinished:
            ran["status"] = "error" if failed else "stopped"
    confined.replace(job.root, notebook_name(rank), dumps(doc).encode())
    return True
