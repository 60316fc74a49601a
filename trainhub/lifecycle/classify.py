"""Why did a rank fail? Turns an exception into a failure class, with the evidence.

The class decides the retry policy (:class:`trainhub.jobs.specparts.RetryPolicy`): code errors
never retry, infrastructure errors retry from the latest checkpoint, environment errors
need a different image or packages. The rules are a table, read top to bottom; the first
rule that matches wins, and everything no rule claims is the user's code.

Pure: no I/O, no torch import. The runner, the supervisor and the Kubernetes backend all
call it with text they already have.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from trainhub.jobs.states import FailureClass

# The type name under which a failed pip install is classified
# (trainhub.rank.install.install_requirements).
PIP_INSTALL_ERROR = "PipInstallError"


@dataclass(frozen=True)
class Rule:
    """One line of the table. Every criterion given must hold for the rule to match."""

    name: str
    failure_class: FailureClass
    reason: str
    types: frozenset[str] = frozenset()  # exception type names, without module
    text: str | None = None  # regex searched in the message and the traceback
    context: str | None = None  # a second regex that must also be found there

    def matches(self, type_name: str, text: str) -> re.Match[str] | bool | None:
        if self.types and type_name not in self.types:
            return None
        if self.context and not re.search(self.context, text, re.IGNORECASE):
            return None
        if self.text:
            return re.search(self.text, text, re.IGNORECASE)
        return True


@dataclass(frozen=True)
class FailureEvidence:
    """What was decided and why, in words a researcher can check."""

    failure_class: FailureClass
    rule: str
    reason: str
    matched: str  # the type name or the piece of text the rule matched

    def to_dict(self) -> dict[str, str]:
        return {
            "failure_class": self.failure_class.value,
            "rule": self.rule,
            "reason": self.reason,
            "matched": self.matched,
        }


_DISTRIBUTED = (
    r"gloo|nccl|c10d|ProcessGroup|torch\.distributed"
    r"|all_reduce|allreduce|broadcast|barrier|all_gather|collective"
)

RULES: tuple[Rule, ...] = (
    # GPU memory exhaustion comes first because it also shows up wrapped in NCCL errors.
    # It is CODE: nearly always the batch size, sequence length or model size chosen in the
    # notebook, and retrying the same code on the same GPU fails the same way. (A process
    # killed by the kernel's OOM killer never raises; the supervisor sees the signal and
    # calls that infrastructure.)
    Rule(
        "cuda-out-of-memory",
        FailureClass.CODE,
        "the GPU ran out of memory: lower the batch size or model size",
        types=frozenset({"OutOfMemoryError"}),
    ),
    Rule(
        "cuda-out-of-memory-text",
        FailureClass.CODE,
        "the GPU ran out of memory: lower the batch size or model size",
        text=r"CUDA out of memory|CUDA error: out of memory",
    ),
    # The image does not fit the machine.
    Rule(
        "cuda-driver-too-old",
        FailureClass.ENVIRONMENT,
        "the NVIDIA driver on the node is older than the CUDA runtime in the image",
        text=r"CUDA driver version is insufficient|driver version is insufficient for CUDA runtime",
    ),
    Rule(
        "cuda-no-kernel-image",
        FailureClass.ENVIRONMENT,
        "the installed PyTorch was not built for this GPU's architecture",
        text=r"no kernel image is available for execution on the device",
    ),
    Rule(
        "nvml-driver-mismatch",
        FailureClass.ENVIRONMENT,
        "the NVIDIA driver and its user-space libraries disagree",
        text=r"Driver/library version mismatch",
    ),
    Rule(
        "libcuda-missing",
        FailureClass.ENVIRONMENT,
        "the CUDA driver library cannot be loaded in this image",
        text=r"libcuda\.so|libcuda\b|libcudart\.so|libnvidia-ml\.so",
    ),
    Rule(
        "shared-library",
        FailureClass.ENVIRONMENT,
        "a compiled package does not match the libraries in the image",
        text=r"undefined symbol:|GLIBC_?\d|GLIBCXX_\d|cannot open shared object file",
    ),
    Rule(
        "pip-install",
        FailureClass.ENVIRONMENT,
        "installing the notebook's packages failed",
        types=frozenset({PIP_INSTALL_ERROR}),
    ),
    # The machines or the network between them failed.
    Rule(
        "dist-network",
        FailureClass.INFRASTRUCTURE,
        "the network between ranks failed",
        types=frozenset({"DistNetworkError"}),
    ),
    Rule(
        "dist-store",
        FailureClass.INFRASTRUCTURE,
        "the rendezvous store could not be reached",
        types=frozenset({"DistStoreError"}),
    ),
    Rule(
        "dist-backend",
        FailureClass.INFRASTRUCTURE,
        "the communication backend (NCCL/gloo) failed",
        types=frozenset({"DistBackendError"}),
    ),
    Rule(
        "rendezvous",
        FailureClass.INFRASTRUCTURE,
        "the ranks could not meet (rendezvous failed or timed out)",
        types=frozenset(
            {
                "RendezvousTimeoutError",
                "RendezvousConnectionError",
                "RendezvousClosedError",
                "RendezvousError",
                "RendezvousStateError",
            }
        ),
    ),
    Rule(
        "world-superseded",
        FailureClass.INFRASTRUCTURE,
        "the rendezvous dropped this worker and a new world of ranks took over the job",
        types=frozenset({"WorldSuperseded"}),
    ),
    Rule(
        "world-superseded-peer",
        FailureClass.INFRASTRUCTURE,
        "rank 0's world of ranks was superseded by a new one, which took over the job",
        text=r"\bWorldSuperseded:",
    ),
    Rule(
        "nccl",
        FailureClass.INFRASTRUCTURE,
        "NCCL reported an error between ranks",
        text=r"\bNCCL (?:error|WARN|timeout)|ncclSystemError|ncclInternalError|ncclRemoteError"
        r"|ProcessGroupNCCL.*(?:timeout|timed out|abort)",
    ),
    Rule(
        "collective-timeout",
        FailureClass.INFRASTRUCTURE,
        "a collective operation timed out waiting for other ranks",
        text=r"Watchdog caught collective operation timeout|Timed out initializing process group"
        r"|Socket Timeout|timed out after \d+\S* while waiting",
    ),
    Rule(
        "peer-connection-lost",
        FailureClass.INFRASTRUCTURE,
        "another rank went away during a collective operation",
        text=r"Connection reset by peer|Connection closed by peer|Broken pipe",
        context=_DISTRIBUTED,
    ),
    Rule(
        "gpu-lost",
        FailureClass.INFRASTRUCTURE,
        "the GPU failed (ECC error, fell off the bus, or busy elsewhere)",
        text=r"uncorrectable ECC error|GPU is lost|fallen off the bus"
        r"|CUDA-capable device\(s\) is/are busy or unavailable",
    ),
    # Last of the specific rules: a missing module is the image's fault, not the cell's.
    Rule(
        "missing-module",
        FailureClass.ENVIRONMENT,
        "a module is not installed in the image",
        types=frozenset({"ModuleNotFoundError", "ImportError"}),
    ),
)

_USER_CODE = FailureEvidence(
    FailureClass.CODE, "user-code", "an exception raised by the job's own code", ""
)


def short_type_name(exc_type_name: str) -> str:
    """'torch.distributed.DistNetworkError' -> 'DistNetworkError'."""
    return exc_type_name.rsplit(".", 1)[-1]


def explain_exception(exc_type_name: str, message: str, traceback_text: str) -> FailureEvidence:
    """The failure class of an exception and the rule that decided it."""
    type_name = short_type_name(exc_type_name)
    text = f"{message}\n{traceback_text}"
    for rule in RULES:
        hit = rule.matches(type_name, text)
        if hit:
            matched = hit.group(0) if isinstance(hit, re.Match) else type_name
            return FailureEvidence(rule.failure_class, rule.name, rule.reason, matched)
    return FailureEvidence(_USER_CODE.failure_class, _USER_CODE.rule, _USER_CODE.reason, type_name)


def classify_exception(exc_type_name: str, message: str, traceback_text: str) -> FailureClass:
    return explain_exception(exc_type_name, message, traceback_text).failure_class
