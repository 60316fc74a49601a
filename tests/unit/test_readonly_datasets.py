"""A local job's process starts with its datasets behind read-only bind mounts of its own: a
write fails with EROFS (root included), the job directory inside a dataset stays writable,
and the host's mounts are untouched. Real processes, real mount namespaces."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from trainhub.backends.local.readonly import wrap

REPO = Path(__file__).resolve().parents[2]
WRITE = (
    "import os, sys\n"
    "for p in sys.argv[1:]:\n"
    "    try:\n"
    "        open(p, 'a').close()\n"
    "        print('wrote', os.path.basename(p))\n"
    "    except OSError as e:\n"
    "        print('refused', os.path.basename(p), e.strerror)\n"
    "print('state', os.environ.get('TRAINHUB_DATASETS_READ_ONLY'))\n"
)


def run(python: str, argv: list[str], user: list[str] | None = None) -> list[str]:
    proc = subprocess.run(
        [*(user or []), *argv],
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def mounted() -> str:
    return Path("/proc/self/mountinfo").read_text()


def test_a_dataset_is_read_only_and_the_job_directory_inside_it_is_not(tmp_path):
    data = tmp_path / "data"
    job = data / "jobs" / "j-1"  # a job directory that happens to lie inside the dataset
    job.mkdir(parents=True)
    other = tmp_path / "other"
    other.mkdir()
    python = sys.executable
    argv = wrap(
        python,
        str(job),
        [str(data)],
        [python, "-c", WRITE, str(data / "new"), str(job / "log"), str(other / "x")],
    )
    assert argv[:4] == [python, "-m", "trainhub.backends.local.readonly", str(job)]
    before = mounted()
    out = run(python, argv)
    if out[-1] == "state 0":
        pytest.skip("this kernel gives no private mount namespace: " + " ".join(out))
    assert out == [
        "refused new Read-only file system",
        "wrote log",
        "wrote x",
        "state 1",
    ]
    assert not (data / "new").exists() and (job / "log").exists()
    assert mounted() == before  # nothing reached the host's namespace
    assert wrap(python, str(job), [], ["cmd"]) == ["cmd"]


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root")
def test_an_unprivileged_user_gets_it_through_a_user_namespace():
    # Not below pytest's own temporary directory, which only root may enter.
    tmp_path = Path(tempfile.mkdtemp(prefix="trainhub-ro-"))
    tmp_path.chmod(0o755)
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o777)  # the files' permissions would let anyone write
    python = "/usr/bin/python3"  # readable by another user, unlike a venv under /root
    if not Path(python).exists():
        pytest.skip("no system python")
    nobody = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]
    argv = wrap(python, str(tmp_path / "job"), [str(data)], [python, "-c", WRITE, str(data / "n")])
    out = run(python, argv, user=nobody)
    if out[-1] == "state 0":
        pytest.skip("unprivileged user namespaces are off here")
    assert out == ["refused n Read-only file system", "state 1"]
    # Without the wrapper the same user writes there.
    assert run(python, [python, "-c", WRITE, str(data / "n")], user=nobody)[0] == "wrote n"
    shutil.rmtree(tmp_path)


def test_usage_is_explained():
    proc = subprocess.run(
        [sys.executable, "-m", "trainhub.backends.local.readonly", "only-a-dir"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert proc.returncode == 2 and "usage:" in proc.stderr
