"""A job's environment, the same on every backend.

A rank sees three things: what trainhub sets (job id, directory, attempt, resume point,
datasets), what the user put in the spec's ``env``, and — on the local backend only — an
allowlisted part of the environment of whoever submitted the job. The submitter is usually
the Jupyter server, whose environment holds its own token and the hub's: one ``%pip``
package or a stray ``print(os.environ)`` in a job would publish them in its log. So nothing
is inherited unless it is named below (or by the admin, ``TRAINHUB_JOB_ENV_ALLOW``), and a
name that looks like a credential is never inherited, allowlisted or not. On Kubernetes the
image provides the rest of the environment, as the allowlist does locally.
"""

from __future__ import annotations

import os
import re
import sysconfig
from collections.abc import Mapping
from pathlib import PurePosixPath

from trainhub import datasets, outputs
from trainhub.jobs import limits

# What a Python training process needs from its host to behave as it does interactively.
INHERITED_NAMES = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TERM",
        "TMPDIR",
        "HOSTNAME",
        "VIRTUAL_ENV",
        "CONDA_PREFIX",
        "CONDA_DEFAULT_ENV",
        "PYTHONPATH",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONWARNINGS",
        "LD_LIBRARY_PATH",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "NO_COLOR",
    }
)
INHERITED_PREFIXES = (
    "LC_",
    "XDG_",
    "CUDA_",
    "NVIDIA_",
    "NCCL_",
    "GLOO_",
    "TORCH_",
    "PYTORCH_",
    "OMP_",
    "MKL_",
    "KMP_",
    "OPENBLAS_",
    "PIP_",
    "HF_",
)
# Never inherited: the server's and the hub's own settings, and anything named like a secret.
_NEVER = re.compile(
    r"^(JUPYTER|JPY_|JUPYTERHUB)|TOKEN|SECRET|PASSW|CREDENTIAL|API_?KEY|PRIVATE_?KEY|AUTH|COOKIE"
    r"|SESSION",
    re.IGNORECASE,
)
# Set by trainhub for each rank; a submitter's stale values must not leak into a new job.
_OWN_PREFIXES = ("TRAINHUB_", "TORCHELASTIC_")
# Where pip installs is the job's own layer (pip_layer), never the submitter's choice: their
# PIP_USER or PIP_TARGET would put a job's packages where later jobs and their kernel see them.
_PIP_PLACES = frozenset({"PIP_USER", "PIP_PREFIX", "PIP_TARGET", "PIP_ROOT"})
ALLOW_SETTING = "TRAINHUB_JOB_ENV_ALLOW"


def admin_allowed(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """Extra names the admin lets jobs inherit: ``TRAINHUB_JOB_ENV_ALLOW=NAME,NAME``."""
    value = (os.environ if environ is None else environ).get(ALLOW_SETTING, "")
    return frozenset(name.strip() for name in value.split(",") if name.strip())


def is_credential_name(name: str) -> bool:
    return bool(_NEVER.search(name))


def inherited(base: Mapping[str, str], extra: frozenset[str] = frozenset()) -> dict[str, str]:
    """The part of ``base`` (a submitter's environment) that a local job's ranks inherit."""
    return {
        name: value
        for name, value in base.items()
        if (name in INHERITED_NAMES or name in extra or name.startswith(INHERITED_PREFIXES))
        and not name.startswith(_OWN_PREFIXES)
        and name not in _PIP_PLACES
        and not is_credential_name(name)
    }


def dataset_variable(name: str) -> str:
    """``TRAINHUB_DATASET_<NAME>``: where a rank finds the dataset it asked for by name."""
    return datasets.variable(name)


def job_environment(
    user_env: Mapping[str, str],
    *,
    job_id: str,
    job_dir: str,
    attempt: int,
    resume_from: str | None,
    dataset_paths: Mapping[str, str],
) -> dict[str, str]:
    """What every rank of a job gets on every backend: the spec's ``env``, then trainhub's own."""
    env = dict(user_env)
    env.update(
        TRAINHUB_JOB_ID=job_id,
        TRAINHUB_JOB_DIR=job_dir,
        # The job's products (trainhub.outputs.path()): in the job directory, kept after it.
        TRAINHUB_OUTPUT_DIR=str(PurePosixPath(job_dir) / outputs.FOLDER),
        TRAINHUB_ATTEMPT=str(attempt),
        PYTHONUNBUFFERED="1",
        # NVML numbers GPUs in PCI bus order; make CUDA agree so the indices mean the same GPUs.
        CUDA_DEVICE_ORDER="PCI_BUS_ID",
    )
    # The rank caps its own log; an admin's lower (or higher) caps go with the job.
    env.update(limits.rank_settings())
    if resume_from:
        env["TRAINHUB_RESUME_FROM"] = resume_from
    for name, path in dataset_paths.items():
        env[dataset_variable(name)] = path
    if dataset_paths:  # what trainhub.datasets.path() tells a name it was not asked for
        env[datasets.NAMES_VARIABLE] = ",".join(dataset_paths)
    return env


def pip_layer(prefix: str | os.PathLike[str], env: Mapping[str, str]) -> dict[str, str]:
    """``PYTHONPATH`` and ``PATH`` that put a job's ``pip install --prefix`` layer in front of
    the interpreter's own packages: the job sees what its ``%pip`` lines installed, later jobs
    do not (each has its own prefix). pip installs into the prefix only what the interpreter
    lacks, so the layer holds the job's packages, not a copy of the environment."""
    *sites, scripts = layer_directories(prefix)
    return {
        "PYTHONPATH": os.pathsep.join([*sites, *filter(None, [env.get("PYTHONPATH")])]),
        "PATH": os.pathsep.join([scripts, *filter(None, [env.get("PATH")])]),
    }


def layer_directories(prefix: str | os.PathLike[str]) -> list[str]:
    """The directories of a ``pip install --prefix`` layer: its site-packages (one or two),
    then its scripts."""
    paths = {"base": str(prefix), "platbase": str(prefix)}
    sites = dict.fromkeys(sysconfig.get_path(kind, vars=paths) for kind in ("purelib", "platlib"))
    return [*sites, sysconfig.get_path("scripts", vars=paths)]


def pip_into(prefix: str | os.PathLike[str]) -> dict[str, str]:
    """Where the pip a rank runs itself installs (a cell's ``subprocess.run([sys.executable,
    "-m", "pip", "install", ...])``, ``get_ipython().run_line_magic("pip", ...)``): the job's
    layer, as its ``%pip`` lines, never the interpreter's environment or ``~/.local``
    (``PIP_USER=0`` outweighs a pip.conf's ``user = true``). pip refuses ``--user`` with a
    prefix, and ``--target`` unless the same command clears it (``--prefix=``)."""
    return {"PIP_PREFIX": str(prefix), "PIP_USER": "0"}
