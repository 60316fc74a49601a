"""Caching by inputs, as Kubeflow Pipelines does: a step whose inputs are all unchanged reuses
the outputs of the earlier job that ran with them, instead of running again.

:func:`cache_key` decides, in one place, what "unchanged" means. The key is a sha256 over:

- ``code``: the bundle's content hash (trainhub.bundle.hashing.content_hash): the cells that
  run with the parameters injected, the ``%pip`` lines, every workspace file the bundle
  carries. Comments and outputs saved in the notebook count where they change a cell's source.
- ``parameters``: what the step is given (its own and the pipeline's it names).
- ``image``: the reference the image policy resolved (a digest where the catalog pins one) and,
  where the backend knows it at submit, what the ranks run in (locally the Python environment).
- ``datasets``: each dataset's fingerprint as the lineage records it (file count, bytes, newest
  change; a content hash where the dataset asks for one).
- ``inputs``: which job's which output each input takes. An upstream step that reused an
  earlier result passes that job's outputs on, so its downstream steps can hit too; an
  upstream step that ran again made new outputs, so they run again (Kubeflow's rule: an
  artifact is its producer's, not its bytes).
- ``outputs``: the names the step declares (a step asked for more than it made before runs).

What is not in it, as in Kubeflow: resources (workers, GPUs), retries, priority, queue, time
limit — how a step runs, not what it computes. A run with ``cache: false`` (``--no-cache``)
runs every step.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

KEY_FORMAT = 1  # raised when what goes into the key changes: older keys then never match


def cache_key(
    *,
    code: str,
    parameters: Mapping[str, Any],
    image: Mapping[str, Any],
    datasets: Sequence[Mapping[str, Any]],
    inputs: Mapping[str, str],
    outputs: Sequence[str],
) -> str:
    """The key of a step's inputs (see the module's text). Pure."""
    document = {
        "format": KEY_FORMAT,
        "code": code,
        "parameters": dict(parameters),
        "image": dict(image),
        "datasets": sorted((_fingerprint(d) for d in datasets), key=lambda d: str(d["name"])),
        "inputs": dict(inputs),
        "outputs": sorted(outputs),
    }
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def _fingerprint(dataset: Mapping[str, Any]) -> dict[str, Any]:
    """What of a lineage's dataset record says its content: not where it was read from."""
    return {k: dataset.get(k) for k in ("name", "by_name", "fingerprint", "error")}
