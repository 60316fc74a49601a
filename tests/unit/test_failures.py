"""Failure classification: exception text as PyTorch, NCCL, CUDA and pip really print it."""

from __future__ import annotations

import traceback

import pytest

from trainhub.jobs.states import FailureClass
from trainhub.lifecycle.classify import (
    PIP_INSTALL_ERROR,
    RULES,
    classify_exception,
    explain_exception,
    short_type_name,
)

CODE, ENV, INFRA = FailureClass.CODE, FailureClass.ENVIRONMENT, FailureClass.INFRASTRUCTURE

CASES = [
    # (exception type, message, traceback text, expected class, expected rule)
    ("ModuleNotFoundError", "No module named 'transformers'", "", ENV, "missing-module"),
    ("ImportError", "cannot import name 'foo' from 'bar'", "", ENV, "missing-module"),
    (
        "RuntimeError",
        "The NVIDIA driver on your system is too old (found version 11040). "
        "CUDA driver version is insufficient for CUDA runtime version",
        "",
        ENV,
        "cuda-driver-too-old",
    ),
    (
        "torch.AcceleratorError",
        "CUDA error: no kernel image is available for execution on the device\n"
        "CUDA kernel errors might be asynchronously reported",
        "",
        ENV,
        "cuda-no-kernel-image",
    ),
    (
        "OSError",
        "libcuda.so.1: cannot open shared object file: No such file or directory",
        "",
        ENV,
        "libcuda-missing",
    ),
    (
        "RuntimeError",
        "Failed to initialize NVML: Driver/library version mismatch",
        "",
        ENV,
        "nvml-driver-mismatch",
    ),
    (
        "ImportError",
        "/usr/lib/python3/site-packages/flash_attn_2_cuda.so: "
        "undefined symbol: _ZN3c104cuda9SetDevicei",
        "",
        ENV,
        "shared-library",
    ),
    (
        PIP_INSTALL_ERROR,
        "`%pip install nosuchpkg` (cell 2, line 1) exited with status 1",
        "",
        ENV,
        "pip-install",
    ),
    (
        "torch.distributed.DistNetworkError",
        "The client socket has timed out after 1800000ms while trying to connect to "
        "(10.0.0.3, 29500).",
        "",
        INFRA,
        "dist-network",
    ),
    (
        "torch.distributed.DistStoreError",
        "Timed out after 901 seconds waiting for clients. 1/2 clients joined.",
        "",
        INFRA,
        "dist-store",
    ),
    (
        "torch.distributed.DistBackendError",
        "NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, "
        "unhandled system error",
        "",
        INFRA,
        "dist-backend",
    ),
    (
        "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError",
        "",
        "",
        INFRA,
        "rendezvous",
    ),
    (
        "trainhub.jobs.world.WorldSuperseded",
        "not writing checkpoint step 80: this world of 1 (rank 0 on job-0 since 10:00:02 UTC)"
        " is no longer the job's: a world of 1 started on job-1 at 10:00:15 UTC. ...",
        "",
        INFRA,
        "world-superseded",
    ),
    (
        "trainhub.checkpoint.CheckpointError",
        "checkpoint step 80 failed publishing: rank 0: WorldSuperseded: not publishing ...",
        "",
        INFRA,
        "world-superseded-peer",
    ),
    (
        "RuntimeError",
        "NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:219, unhandled system error, "
        "NCCL version 2.18.1\nncclSystemError: System call (e.g. socket, malloc) failed.",
        "",
        INFRA,
        "nccl",
    ),
    (
        "RuntimeError",
        "[Rank 1] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=12, OpType=ALLREDUCE) "
        "ran for 600010 milliseconds before timing out.",
        "",
        INFRA,
        "collective-timeout",
    ),
    (
        "RuntimeError",
        "[../third_party/gloo/gloo/transport/tcp/pair.cc:534] "
        "Connection closed by peer [10.1.2.3]:57114",
        "",
        INFRA,
        "peer-connection-lost",
    ),
    (
        "RuntimeError",
        "Connection reset by peer",
        '  File "x.py", line 4, in step\n    dist.all_reduce(t)\n',
        INFRA,
        "peer-connection-lost",
    ),
    ("RuntimeError", "CUDA error: uncorrectable ECC error encountered", "", INFRA, "gpu-lost"),
    # GPU memory is the notebook's batch size: code, even when the text mentions NCCL.
    (
        "torch.OutOfMemoryError",
        "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB",
        "",
        CODE,
        "cuda-out-of-memory",
    ),
    (
        "RuntimeError",
        "NCCL error: unhandled cuda error: CUDA error: out of memory",
        "",
        CODE,
        "cuda-out-of-memory-text",
    ),
    # The user's own mistakes.
    ("ValueError", "boom on line 3", "", CODE, "user-code"),
    ("KeyError", "'labels'", "", CODE, "user-code"),
    ("SystemExit", "exit status 2", "", CODE, "user-code"),
    # A reset connection outside torch.distributed is the code's own network call.
    (
        "ConnectionResetError",
        "[Errno 104] Connection reset by peer",
        '  File "fetch.py", line 3, in get\n    urllib.request.urlopen(url)\n',
        CODE,
        "user-code",
    ),
]


@pytest.mark.parametrize(("type_name", "message", "tb", "expected", "rule"), CASES)
def test_classification_table(type_name, message, tb, expected, rule):
    evidence = explain_exception(type_name, message, tb)
    assert (evidence.failure_class, evidence.rule) == (expected, rule)
    assert classify_exception(type_name, message, tb) is expected


def test_chained_cause_in_the_traceback_decides():
    # The user's code re-raises a store timeout as its own error: the cause still decides.
    def connect():
        raise TimeoutError("Timed out initializing process group in store based barrier")

    try:
        try:
            connect()
        except TimeoutError as e:
            raise RuntimeError("training setup failed") from e
    except RuntimeError as exc:
        text = "".join(traceback.format_exception(exc))
        assert classify_exception("RuntimeError", str(exc), text) is INFRA
        assert classify_exception("RuntimeError", str(exc), "") is CODE


def test_evidence_names_what_matched():
    evidence = explain_exception("RuntimeError", "oops: CUDA out of memory. Tried to allocate", "")
    record = evidence.to_dict()
    assert record["failure_class"] == "code"
    assert record["matched"] == "CUDA out of memory"
    assert "batch size" in record["reason"]


def test_every_rule_is_reachable():
    names = [rule.name for rule in RULES]
    assert len(names) == len(set(names))
    exercised = {case[4] for case in CASES}
    assert set(names) <= exercised, f"rules without a test case: {set(names) - exercised}"


def test_short_type_name():
    assert short_type_name("torch.distributed.DistNetworkError") == "DistNetworkError"
    assert short_type_name("ValueError") == "ValueError"
