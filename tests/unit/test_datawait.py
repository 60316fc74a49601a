"""Input stalls: the rank's meter around a real DataLoader's iterator, the job's figures and the
advice sentence from its records, and the wait as a part of goodput."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import textwrap

import pytest

from trainhub.metrics.datawait import advice, data_wait, fraction, read_wait_records
from trainhub.rank.datawait import DataWaitMeter, patch
from trainhub.usage.compute import attempt_spans, cpu_seconds
from trainhub.usage.goodput import goodput


class Ticks:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_meter_counts_the_wait_inside_next_and_the_step_between_batches():
    clock, written = Ticks(), []
    meter = DataWaitMeter(written.append, {"rank": 3}, interval_s=100, clock=clock)

    def loads(it):  # each batch takes 2 s to arrive; the third call ends the epoch
        clock.now += 2.0
        if it.pop() is None:
            raise StopIteration
        return "batch"

    next_of = meter.timed(loads)
    source = [None, 1, 1]
    for _ in range(2):
        assert next_of(source) == "batch"
        clock.now += 3.0  # the step's compute
    with pytest.raises(StopIteration):
        next_of(source)
    clock.now += 50.0  # between epochs: no step time
    meter.flush()
    (record,) = written
    # Waits 2+2+2; compute counted between the first return and the second call only.
    assert record["data_wait_s"] == pytest.approx(6.0)
    assert record["step_s"] == pytest.approx(6.0 + 3.0)
    assert record["batches"] == 2 and record["rank"] == 3
    meter.flush()
    assert len(written) == 1  # no batch, no record


def test_a_record_is_written_once_an_interval_at_a_batch():
    clock, written = Ticks(), []
    meter = DataWaitMeter(written.append, interval_s=10, clock=clock)
    next_of = meter.timed(lambda it: clock.__setattr__("now", clock.now + 1.0) or 7)
    for _ in range(25):
        next_of(None)
    assert [r["batches"] for r in written] == [10, 10]


def test_the_meter_leaves_a_real_dataloader_as_it_was():
    import torch.utils.data as torch_data
    import torch.utils.data.dataloader as dataloader

    written: list[dict] = []
    meter = DataWaitMeter(written.append, {"rank": 0}, interval_s=1000)
    original = dataloader._BaseDataLoaderIter.__next__
    assert patch(dataloader, meter)
    try:
        assert not patch(dataloader, meter)  # never wrapped twice

        class Broken(torch_data.Dataset):
            def __len__(self):
                return 4

            def __getitem__(self, i):
                if i == 2:
                    raise KeyError("validation")
                return i

        loader = torch_data.DataLoader(list(range(10)), batch_size=3, pin_memory=False)
        it = iter(loader)
        assert type(it) is dataloader._SingleProcessDataLoaderIter
        assert len(loader) == 4 and len(it) == 4
        assert [b.tolist() for b in it] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
        assert pickle.loads(pickle.dumps(loader)).batch_size == 3
        with pytest.raises(KeyError, match="validation"):
            list(torch_data.DataLoader(Broken(), batch_size=1))
        workers = torch_data.DataLoader(list(range(8)), batch_size=2, num_workers=2)
        assert sum(len(b) for b in workers) == 8
        meter.flush()
        assert written[-1]["num_workers"] == 2 and written[-1]["pin_memory"] is False
        assert written[-1]["batches"] == 4 + 2 + 4
    finally:
        dataloader._BaseDataLoaderIter.__next__ = original


def test_the_rank_patches_torch_when_the_notebook_imports_it():
    code = textwrap.dedent(
        """
        import json, sys
        from trainhub.rank.datawait import DataWaitMeter, install
        written = []
        meter = DataWaitMeter(written.append, {"rank": 1})
        install(meter)
        assert "torch" not in sys.modules
        from torch.utils.data import DataLoader
        for _ in DataLoader(range(6), batch_size=2):
            pass
        meter.flush()
        print(json.dumps(written))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # One record, or two where importing torch outlasted the meter's interval (a busy machine).
    records = json.loads(out.stdout)
    assert 1 <= len(records) <= 2 and sum(r["batches"] for r in records) == 3
    assert all(r["rank"] == 1 and r["num_workers"] == 0 for r in records)


def test_fraction_and_advice():
    assert fraction(0, 0) is None and fraction(3, 12) == 0.25 and fraction(5, 4) == 1.0
    assert advice(0.62, 0, False) == (
        "62 % of each step waits for data: try num_workers=4, pin_memory=True "
        "(the DataLoader has num_workers=0)"
    )
    assert advice(0.5, 4, True) == (
        "50 % of each step waits for data: try num_workers=8 (the DataLoader has num_workers=4)"
    )
    assert advice(0.9) == "90 % of each step waits for data: try num_workers=4, pin_memory=True"
    assert advice(0.30) is None and advice(None) is None
    assert advice(0.2, threshold=0.1) is not None


def wait(t, rank, w, s, **more):
    return {"time": t, "rank": rank, "data_wait_s": w, "step_s": s, "batches": 5, **more}


def test_the_jobs_figures_per_rank_and_overall():
    records = [
        {"time": 1, "rank": 0, "pid": 9, "cpu_percent": 50.0, "rss_bytes": 1},  # the sampler's
        wait(10, 0, 6.0, 10.0, num_workers=0, pin_memory=False),
        wait(10, 1, 2.0, 10.0, num_workers=0, pin_memory=False),
        wait(20, 0, 7.0, 10.0, num_workers=2, pin_memory=False),
        wait(20, 1, 1.0, 10.0, num_workers=2, pin_memory=False),
        {"time": 30, "rank": 0, "data_wait_s": 5, "step_s": 1},  # not a record: wait > step
    ]
    figures = data_wait(records)
    assert figures.fraction == pytest.approx(16 / 40)
    assert figures.ranks == {0: pytest.approx(0.65), 1: pytest.approx(0.15)}
    assert figures.num_workers == 2 and figures.pin_memory is False
    assert figures.advice.startswith("40 % of each step waits for data: try num_workers=4")
    assert data_wait(records[:1]) is None
    assert data_wait([wait(1, 0, 1.0, 10.0)]).advice is None


def test_the_records_are_read_from_the_system_file_alone(tmp_path):
    from trainhub.jobs.directory import JobDir, append_jsonl

    job = JobDir(tmp_path)
    path = job.metrics / "system.jsonl"
    path.parent.mkdir()
    append_jsonl(path, {"time": 1, "rank": 0, "pid": 9, "cpu_percent": 5.0, "rss_bytes": 1})
    append_jsonl(path, wait(2, 0, 1.0, 2.0))
    with open(path, "ab") as f:
        f.write(b'{"time": 3, "data_wait_s": 1')  # still being written
    assert read_wait_records(job) == [wait(2, 0, 1.0, 2.0)]
    assert read_wait_records(JobDir(tmp_path / "none")) == []


def test_the_wait_counts_against_goodput_and_not_as_cpu():
    # Running 0..100, steps 0..89 from 10; two ranks wrote their waits (30 s and 10 s).
    events = [
        {"time": 0, "type": "state", "state": "running"},
        {"time": 100, "type": "state", "state": "succeeded"},
    ]
    scalars = [
        {"time": 10 + i, "step": i, "name": "loss", "value": 1.0, "rank": 0} for i in range(90)
    ]
    system = [
        wait(5, 0, 4.0, 5.0),  # before the first step: start-up already
        wait(50, 0, 15.0, 40.0),
        wait(50, 1, 5.0, 40.0),
        wait(101, 0, 15.0, 40.0),  # written as the rank ended
        wait(101, 1, 5.0, 40.0),
        {"time": 50, "rank": 0, "pid": 9, "cpu_percent": 100.0, "rss_bytes": 1},
        {"time": 51, "rank": 0, "pid": 9, "cpu_percent": 100.0, "rss_bytes": 1},
    ]
    spans = attempt_spans(events, 0, 100)
    g = goodput(spans, events, scalars, gpus=2, system=system)
    assert g.data_wait_s == pytest.approx((30 + 10) / 2)
    assert g.gpu_data_wait_s == pytest.approx(2 * 20)
    assert g.startup_s == pytest.approx(10)
    assert g.goodput == pytest.approx((100 - 10 - 20) / 100)
    # The waits' records are not CPU samples: rank 0's CPU is its two samples' seconds.
    assert cpu_seconds(system, spans) == pytest.approx(2.0)
