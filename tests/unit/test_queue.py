from trainhub.backends.local.admission import (
    Capacity,
    Free,
    Waiting,
    admit,
    demand_for,
    free_capacity,
    never_fits,
    wait_reason,
)


def test_demand_counts_gpus_or_cpu_slots():
    assert demand_for(total_gpus=4, world_size=4).slots == 0
    assert demand_for(total_gpus=0, world_size=3).slots == 3


def test_admission_is_strict_priority_fifo_and_assigns_distinct_gpus():
    free = free_capacity(Capacity(gpus=(0, 1, 2, 3), slots=8), [([1], 0)])
    queue = [
        Waiting("a", demand_for(2, 2)),
        Waiting("b", demand_for(2, 2)),
        Waiting("c", demand_for(1, 1)),
    ]
    admitted, blocked = admit(queue, free)
    assert [a.id for a in admitted] == ["a"] and admitted[0].gpus == [0, 2]
    # "c" would fit in the one free GPU, but never overtakes the blocked head "b".
    assert blocked.id == "b" and free.gpus == [3]


def test_cpu_jobs_use_slots():
    free = Free(gpus=[], slots=2)
    admitted, blocked = admit(
        [Waiting("a", demand_for(0, 2)), Waiting("b", demand_for(0, 1))], free
    )
    assert [a.id for a in admitted] == ["a"] and blocked.id == "b"


def test_wait_reasons_are_sentences():
    assert (
        wait_reason(demand_for(2, 2), Free(gpus=[3], slots=0), ahead=3)
        == "needs 2 GPUs, 1 free; 3 jobs ahead"
    )
    assert (
        wait_reason(demand_for(1, 1), Free(gpus=[], slots=0), ahead=0)
        == "needs 1 GPU, 0 free; next in line"
    )
    assert (
        wait_reason(demand_for(0, 2), Free(gpus=[], slots=1), ahead=1)
        == "needs 2 CPU slots, 1 free; 1 job ahead"
    )


def test_jobs_that_can_never_fit_are_named():
    cap = Capacity(gpus=(0, 1), slots=2)
    assert never_fits(demand_for(4, 4), cap) == "needs 4 GPUs, but this machine has 2 GPUs"
    assert "offers 2" in never_fits(demand_for(0, 8), cap)
    assert never_fits(demand_for(2, 2), cap) is None
    assert (
        never_fits(demand_for(1, 1), Capacity(gpus=(), slots=2))
        == "needs 1 GPU, but this machine has no GPUs"
    )
