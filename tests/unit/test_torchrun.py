from trainhub.backends.local.torchrun import (
    Attempt,
    gpu_slices,
    rank_environment,
    single_process_env,
    torchrun_argv,
)
from trainhub.jobs.spec import parse_spec


def test_single_worker_uses_a_loopback_c10d_rendezvous():
    argv = torchrun_argv(
        "py", "/j/bundle", workers=1, node_rank=0, nproc_per_worker=2, master_port=1234, run_id="r"
    )
    assert argv[:3] == ["py", "-m", "torch.distributed.run"]
    assert "--nproc-per-node=2" in argv and "--rdzv-endpoint=127.0.0.1:1234" in argv
    assert argv[-3:] == ["-m", "trainhub.rank.runner", "/j/bundle"]


def test_several_workers_rendezvous_statically_by_node_rank():
    argv = torchrun_argv(
        "py", "b", workers=3, node_rank=2, nproc_per_worker=1, master_port=9, run_id="r"
    )
    assert {"--nnodes=3", "--node-rank=2", "--rdzv-backend=static", "--master-port=9"} <= set(argv)


def test_gpus_are_split_between_workers_in_order():
    assert gpu_slices([4, 5, 6, 7], workers=2, per_worker=2) == [[4, 5], [6, 7]]
    assert gpu_slices([], workers=2, per_worker=0) == [[], []]


def test_rank_environment_sets_trainhub_variables_and_hides_unassigned_gpus():
    spec = parse_spec(
        {
            "name": "t",
            "source": {"path": "a.ipynb"},
            "env": {"MY_FLAG": "1"},
            "datasets": [{"name": "im-net", "path": "/d"}],
        }
    )
    attempt = Attempt(
        python="py",
        base_env={"PATH": "/bin", "TRAINHUB_JOB_ID": "stale"},
        spec=spec,
        job_id="t-1",
        job_dir="/j",
        bundle="/j/bundle",
        number=2,
        port=1234,
        resume_from="/c/0000000019",
    )
    env = rank_environment(attempt, gpus=[])
    assert env["TRAINHUB_JOB_ID"] == "t-1" and env["TRAINHUB_ATTEMPT"] == "2"
    assert env["CUDA_VISIBLE_DEVICES"] == "" and env["MY_FLAG"] == "1"
    # The job's own %pip layer comes first: its scripts, then its packages.
    assert env["PATH"] == "/j/env/bin:/bin"
    assert env["PYTHONPATH"].startswith("/j/env/lib/python")
    assert env["TRAINHUB_RESUME_FROM"] == "/c/0000000019" and env["TRAINHUB_DATASET_IM_NET"] == "/d"


def test_a_single_process_gets_what_torchrun_would_set():
    env = single_process_env(4321, "run")
    assert (
        env["RANK"] == env["LOCAL_RANK"] == "0"
        and env["WORLD_SIZE"] == "1"
        and env["MASTER_PORT"] == "4321"
    )


def test_launch_plan_has_one_agent_per_worker_with_its_own_gpus():
    from trainhub.backends.local.torchrun import launch_plan

    spec = parse_spec(
        {
            "name": "t",
            "source": {"path": "a.ipynb"},
            "resources": {"workers": 2, "gpus_per_worker": 2},
        }
    )
    plan = launch_plan(_attempt(spec, env={}, number=1, port=29500), [4, 5, 6, 7])
    agents = plan["agents"]
    assert [a["env"]["CUDA_VISIBLE_DEVICES"] for a in agents] == ["4,5", "6,7"]
    assert ["--node-rank=0" in a["argv"] for a in agents] == [True, False]
    assert all(
        "--nproc-per-node=2" in a["argv"] and a["env"]["TRAINHUB_ATTEMPT"] == "1" for a in agents
    )


def test_each_torchrun_agent_starts_the_runner_with_its_workers_gpus():
    from trainhub.backends.local.torchrun import launch_plan

    spec = parse_spec(
        {
            "name": "t",
            "source": {"path": "a.ipynb"},
            "resources": {"workers": 2, "processes_per_worker": 2, "gpus_per_worker": 2},
        }
    )
    plan = launch_plan(_attempt(spec, env={"PATH": "/bin"}, number=0, port=29500), [0, 1, 2, 3])
    assert list(plan) == ["agents"]
    assert all(
        a["argv"][-3:] == ["-m", "trainhub.rank.runner", "/j/bundle"] for a in plan["agents"]
    )
    assert [a["env"]["CUDA_VISIBLE_DEVICES"] for a in plan["agents"]] == ["0,1", "2,3"]


def test_a_one_process_plan_starts_the_runner_itself():
    from trainhub.backends.local.torchrun import launch_plan

    spec = parse_spec({"name": "t", "source": {"path": "a.ipynb"}})
    plan = launch_plan(_attempt(spec, env={}, number=0, port=1234), [])
    (agent,) = plan["agents"]
    assert agent["argv"] == ["py", "-m", "trainhub.rank.runner", "/j/bundle"]
    assert agent["env"]["RANK"] == "0" and agent["env"]["MASTER_PORT"] == "1234"


def _attempt(spec, *, env, number, port):
    return Attempt(
        python="py",
        base_env=env,
        spec=spec,
        job_id="t-1",
        job_dir="/j",
        bundle="/j/bundle",
        number=number,
        port=port,
        resume_from=None,
    )
