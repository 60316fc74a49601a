"""The curated images as images/build.py builds them with buildah: what their archives say,
the job's and the session's entrypoints run inside them as the non-root user the Kubernetes
manifests ask for, and a second build with nothing changed builds nothing.

The first test of a cold cache builds the Debian root, base and pytorch-cpu (minutes); the test
command has usually built them already (images/build.sh), so the fixture finds them up to date.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from trainhub.backends.kubernetes import manifests
from trainhub.bundle.compile import compile_bundle
from trainhub.jobs.models import JobRecord
from trainhub.jobs.spec import parse_spec
from trainhub.jobs.states import JobState
from trainhub.teams import load_teams

ROOT = Path(__file__).resolve().parents[2]
IMAGES = ROOT / "images"
TEAMS = load_teams(ROOT / "tests" / "unit" / "golden" / "teams.yaml")
BUILT = ("base", "pytorch-cpu")

pytestmark = pytest.mark.timeout(3600)


def load_build() -> ModuleType:
    spec = importlib.util.spec_from_file_location("trainhub_build_images", IMAGES / "build.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


build = load_build()


def run_build(checkout: Path, *names: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(IMAGES / "build.py"), "--checkout", str(checkout), *names],
        capture_output=True,
        text=True,
        timeout=3600,
    )


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the images are made of, copied: the checkout may change while the tests run, and
    the same content gives the same hashes (those of the test command's build)."""
    copy = tmp_path_factory.mktemp("checkout")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for rel in ("images", *build.WHEEL_SOURCES):
        source = ROOT / rel
        if source.is_dir():
            shutil.copytree(source, copy / rel, ignore=ignore)
        elif source.exists():
            shutil.copy2(source, copy / rel)
    return copy


@pytest.fixture(scope="module")
def index(checkout: Path) -> dict:
    if not (shutil.which("buildah") and shutil.which("mmdebstrap")):
        pytest.fail("buildah and mmdebstrap are needed: images/build.sh installs them")
    proc = run_build(checkout, *BUILT)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(Path(proc.stdout.strip().splitlines()[-1]).read_text())


def archive_config(archive: Path) -> tuple[list[str], dict]:
    """(RepoTags, image config) of a docker archive, read as containerd's import reads it."""
    with tarfile.open(archive) as tar:
        manifest = json.load(tar.extractfile("manifest.json"))
        assert len(manifest) == 1
        config = json.load(tar.extractfile(manifest[0]["Config"]))
    return manifest[0]["RepoTags"], config


@pytest.fixture
def container(index: dict) -> Iterator:
    """Makes working containers of built images; removes them afterwards."""
    buildah = build.Buildah(build.Paths.from_env())
    made: list[str] = []

    def make(name: str) -> tuple[build.Buildah, str]:
        proc = buildah.run(
            "from", "--pull=never", index["images"][name]["local_reference"], quiet=True
        )
        made.append(proc.stdout.strip().splitlines()[-1])
        return buildah, made[-1]

    yield make
    for ctr in made:
        subprocess.run(buildah.argv("rm", ctr), env=buildah.env(), capture_output=True)


# --- the build chain, pure -----------------------------------------------------------------------
def test_each_image_is_built_after_its_parent() -> None:
    images = build.images_of(IMAGES)
    # Every session image starts from the session layer, which starts from the Debian root.
    assert images["session"].parent == build.DEBIAN
    assert images["base"].parent == images["pytorch-cpu"].parent == build.SESSION
    assert images["pytorch"].parent == build.SESSION
    assert images["pytorch-nlp"].parent == "pytorch"
    assert build.with_parents(["pytorch-cpu", "base"], images) == [
        "debian",
        "session",
        "pytorch-cpu",
        "base",
    ]
    assert build.with_parents(["pytorch-nlp"], images) == [
        "debian",
        "session",
        "pytorch",
        "pytorch-nlp",
    ]
    assert build.requested([], True, images) == ["base", "pytorch-cpu", "pytorch", "pytorch-nlp"]
    with pytest.raises(build.BuildError, match=r"no image 'jax': the images are base, debian"):
        build.with_parents(["jax"], images)


def test_the_hub_and_proxy_start_from_the_debian_root_and_are_built_only_when_named(
    tmp_path: Path,
) -> None:
    images = build.images_of(IMAGES)
    assert images["hub"].parent == images["proxy"].parent == build.DEBIAN
    assert images["hub"].reference == "ghcr.io/trainhub/hub:0.1.0"
    assert images["proxy"].reference == "ghcr.io/trainhub/configurable-http-proxy:5.2.0"
    assert images["hub"].uses_wheel and not images["proxy"].uses_wheel
    assert [p.name for p in images["hub"].files] == ["requirements.txt"]
    assert not {"hub", "proxy"} & set(build.requested([], True, images))
    assert build.requested(["hub", "proxy"], False, images) == ["hub", "proxy"]
    # The files beside a Dockerfile are part of its image's content hash.
    shutil.copytree(IMAGES, tmp_path / "images")
    paths = build.Paths(tmp_path, tmp_path / "wheels")

    def pins_digest() -> str:
        builder = build.Builder(paths, build.images_of(tmp_path / "images"))
        return builder.inputs(builder.images["hub"])["file requirements.txt"]

    before = pins_digest()
    (tmp_path / "images" / "hub" / "requirements.txt").write_text("jupyterhub==5.5.1\n")
    assert pins_digest() != before


def test_trainhubs_dependencies_are_a_layer_of_their_own_before_its_wheel() -> None:
    """Each image that installs trainhub installs what trainhub[extra] requires first, from the
    requirements file the build writes from pyproject.toml, then the wheel without them: a
    change to trainhub's code alone rebuilds one small layer. The hub's wheel-building stage
    holds none of trainhub's code, and is kept tagged so that no prune removes it."""
    images = build.images_of(IMAGES)
    # The session images' dependencies are their parent's layer, the wheel theirs.
    assert images["session"].requirements == {"server"} and not images["session"].uses_wheel
    assert images["base"].requirements == images["pytorch-cpu"].requirements == frozenset()
    assert images["hub"].requirements == {"hub"} and images["hub"].stages == ("build",)
    assert images["base"].stages == () and images["proxy"].requirements == frozenset()
    assert images["hub"].local_ref("0123456789abcdef99", "build") == (
        "localhost/trainhub/hub-build:0123456789abcdef"
    )
    pyproject = {
        "project": {
            "name": "trainhub",
            "dependencies": ["pydantic>=2.7,<3", "pyyaml>=6"],
            "optional-dependencies": {
                "server": ["kubernetes>=31", "pyyaml>=6"],
                "hub": ["jupyterhub>=5.2,<6"],
                "all": ["trainhub[server, hub]", "pytest>=8"],
            },
        }
    }
    assert build.trainhub_requirements(pyproject, "server") == [
        "kubernetes>=31",
        "pydantic>=2.7,<3",
        "pyyaml>=6",
    ]
    assert build.trainhub_requirements(pyproject, "all") == [
        "jupyterhub>=5.2,<6",
        "kubernetes>=31",
        "pydantic>=2.7,<3",
        "pytest>=8",
        "pyyaml>=6",
    ]
    with pytest.raises(build.BuildError, match="trainhub has no extra 'gpu'"):
        build.trainhub_requirements(pyproject, "gpu")
    for name in ("base", "pytorch-cpu", "pytorch", "hub"):
        image = images[name]
        text = image.dockerfile.read_text()
        if image.requirements:
            assert text.index("requirements-") < text.index("COPY dist/trainhub-"), name
        else:  # installed by the layer it starts from
            assert images[image.parent or ""].requirements == {"server"}, name
        assert "--no-deps" in text and "pip check" in text, name


# The layer of each image that holds what trainhub requires and none of its code, by its name
# in storage: the session layer under the session images (its key), the hub's wheel-building
# stage (its tag, which the hub mounts), with a requirement of that extra to change.
REQUIREMENTS_LAYERS = {
    "base": (lambda b: b.key("session"), ('"tornado>=6.4",', '"tornado>=6.5",')),
    "hub": (
        lambda b: b.build_args(b.images["hub"])["BUILD_STAGE"],
        ('"jupyterhub>=5.2,<6",', '"jupyterhub>=5.3,<6",'),
    ),
}


@pytest.mark.parametrize("name", REQUIREMENTS_LAYERS)
def test_what_trainhub_requires_is_a_layer_kept_through_a_change_to_its_code(
    tmp_path: Path, name: str
) -> None:
    """A change to trainhub's code keeps the layer of what it requires (neither it nor the
    PyTorch layer above the session layer is built again), a change to what it requires makes
    a new one; the image's own key follows both."""
    layer, (requirement, changed_requirement) = REQUIREMENTS_LAYERS[name]
    checkout = tmp_path / "checkout"
    (checkout / "trainhub").mkdir(parents=True)
    shutil.copy2(ROOT / "pyproject.toml", checkout / "pyproject.toml")
    (checkout / "trainhub" / "a.py").write_text("1")
    images = build.images_of(IMAGES)

    def refs() -> tuple[str, str]:
        builder = build.Builder(build.Paths(tmp_path, tmp_path / "wheels"), images, checkout)
        key = builder.key(name)  # and its parents': what a stage's build arguments name
        return layer(builder), key

    kept, key = refs()
    if name == "hub":
        assert re.fullmatch(r"localhost/trainhub/hub-build:[0-9a-f]{16}", kept), kept
    (checkout / "trainhub" / "a.py").write_text("2")
    assert refs()[0] == kept and refs()[1] != key
    pyproject = (checkout / "pyproject.toml").read_text()
    changed = pyproject.replace(requirement, changed_requirement, 1)
    assert changed != pyproject
    (checkout / "pyproject.toml").write_text(changed)
    assert refs()[0] != kept


def test_the_content_hash_follows_every_input(tmp_path: Path) -> None:
    shutil.copytree(IMAGES, tmp_path / "images")
    image = build.images_of(tmp_path / "images")["pytorch-cpu"]
    inputs, args = {"trainhub": "a", "wheels": "b"}, {"BASE_IMAGE": "localhost/x:1"}
    key = build.image_key(image, "p", inputs, args)
    assert build.image_key(image, "p", dict(inputs), dict(args)) == key
    assert build.image_key(image, "q", inputs, args) != key
    assert build.image_key(image, "p", {**inputs, "wheels": "c"}, args) != key
    assert build.image_key(image, "p", inputs, {"BASE_IMAGE": "localhost/x:2"}) != key
    image.dockerfile.write_text(image.dockerfile.read_text() + "\n# a comment\n")
    assert build.image_key(image, "p", inputs, args) != key


def test_the_trainhub_digest_covers_the_wheel_sources_only(tmp_path: Path) -> None:
    ignored = (
        "trainhub/__pycache__/a.cpython-311.pyc",
        "docs/x.md",
        "labextension/src/__tests__/a.spec.ts",
        # The extension's build: absent from a fresh clone, made by the wheel's build hook.
        "trainhub/labextension/static/style.js",
    )
    for rel in ("trainhub/a.py", "labextension/src/index.ts", *ignored):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("1")
    before = build.tree_digest(tmp_path, build.WHEEL_SOURCES)
    for rel in ignored:
        (tmp_path / rel).write_text("2")
    assert build.tree_digest(tmp_path, build.WHEEL_SOURCES) == before
    shutil.rmtree(tmp_path / "trainhub/labextension")
    assert build.tree_digest(tmp_path, build.WHEEL_SOURCES) == before
    for rel in ("trainhub/a.py", "labextension/src/index.ts"):
        (tmp_path / rel).write_text("2")
        assert build.tree_digest(tmp_path, build.WHEEL_SOURCES) != before
        (tmp_path / rel).write_text("1")


def test_wheel_digests_are_remembered_until_the_file_changes(tmp_path: Path) -> None:
    wheel = tmp_path / "torch-1-py3-none-any.whl"
    wheel.write_bytes(b"one")
    digests = build.FileDigests(tmp_path / "memo.json")
    first = build.wheels_digest(tmp_path, digests)
    digests.save()
    memo = json.loads((tmp_path / "memo.json").read_text())
    assert memo[str(wheel)][2] == __import__("hashlib").sha256(b"one").hexdigest()
    wheel.write_bytes(b"two!")
    assert build.wheels_digest(tmp_path, build.FileDigests(tmp_path / "memo.json")) != first


def test_debian_sources_follow_the_machines_mirror(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm\nComponents: main\n\n"
        "Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\n"
    )
    (tmp_path / "sources.list").write_text("deb https://apt.example/node nodistro main\n")
    assert build.debian_sources(tmp_path) == [
        "deb http://mirror.example/debian bookworm main",
        "deb http://mirror.example/debian bookworm-updates main",
        "deb http://mirror.example/debian-security bookworm-security main",
    ]
    assert build.debian_sources(tmp_path, mirror="http://other/debian/")[0] == (
        "deb http://other/debian bookworm main"
    )
    assert (
        build.debian_sources(tmp_path / "none")[0]
        == "deb http://deb.debian.org/debian bookworm main"
    )


def test_pytorch_cpu_installs_the_torch_the_environment_pins() -> None:
    pins = dict(
        line.split("==")
        for line in (ROOT / "scripts" / "constraints.txt").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    )
    steps = build.instructions((IMAGES / "pytorch-cpu" / "Dockerfile").read_text())
    assert build.build_args(steps)["TORCH_VERSION"] == pins["torch"]


# --- the built images ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", BUILT)
def test_the_archive_names_the_catalog_reference_and_runs_as_the_user(
    index: dict, name: str
) -> None:
    entry = index["images"][name]
    catalog = {i.name: i.image for i in build.load_catalog(IMAGES / "catalog.yaml")}
    archive = Path(entry["archive"])
    assert archive.name == f"{name}-{entry['content_hash'][:16]}.tar"
    assert entry["reference"] == catalog[name] and entry["format"] == "docker-archive"
    tags, config = archive_config(archive)
    # The catalog reference first (the name a pod uses), then the build's own exact name.
    assert tags == [catalog[name], entry["local_reference"]]
    c = config["config"]
    assert c["User"] == "1000:100"
    assert c["Entrypoint"] == ["tini", "--"] and c["Cmd"] == ["jupyterhub-singleuser"]
    assert c["WorkingDir"] == "/home/jovyan"
    assert c["Labels"]["io.trainhub.content-hash"] == entry["content_hash"]
    assert c["Labels"]["io.trainhub.image"] == catalog[name]
    assert c["Labels"]["org.opencontainers.image.title"] == f"trainhub-{name}"
    env = dict(e.split("=", 1) for e in c["Env"])
    assert env["PATH"].startswith("/opt/venv/bin:") and env["HOME"] == "/home/jovyan"


def test_the_session_starts_as_the_images_user(container) -> None:
    buildah, ctr = container("base")
    # No --user: the image's own USER, as the spawner's pod runs it (runAsUser 1000, group 100).
    script = (
        "id -u; id -g; touch $HOME/written && echo home-writable; "
        "jupyterhub-singleuser --version; "
        "python -c 'import torch' 2>&1 | tail -n 1; "
        "jupyter server extension list 2>&1 | grep -c 'trainhub_server.*OK'; "
        "jupyter labextension list 2>&1 | grep -c 'trainhub v.*enabled.*OK'"
    )
    proc = buildah.run("run", ctr, "--", "sh", "-c", script, quiet=True)
    steps = build.instructions((IMAGES / "session" / "Dockerfile").read_text())
    assert proc.stdout.splitlines() == [
        "1000",
        "100",
        "home-writable",
        build.build_args(steps)["JUPYTERHUB_VERSION"],
        "ModuleNotFoundError: No module named 'torch'",  # base has no deep-learning framework
        "1",  # the server extension, enabled and loading
        "1",  # the lab extension
    ], proc.stdout


def job_record(job_dir: str) -> JobRecord:
    spec = parse_spec(
        {
            "name": "allreduce",
            "source": {"path": "train.ipynb"},
            "team": "vision",
            "resources": {"workers": 1, "processes_per_worker": 2},
        }
    )
    return JobRecord(
        id="allreduce-0a1b2c3d",
        name="allreduce",
        user="ada@example.org",
        team="vision",
        priority=1,
        state=JobState.QUEUED,
        spec=spec,
        job_dir=job_dir,
        gpus=0,
        created_at=1700000000.0,
    )


def test_the_job_pod_command_runs_in_pytorch_cpu_as_the_pods_user(
    container, index: dict, tmp_path: Path
) -> None:
    """The Job manifest's container (torchrun -m trainhub.rank.runner, its environment, working
    directory and the pod's runAsUser/runAsGroup) run two gloo ranks in the image."""
    team, pool = TEAMS.team("vision"), TEAMS.pool("t4")
    shared = team.shared_volume.mount_path
    record = job_record(f"{shared}/jobs/allreduce-0a1b2c3d")
    image = index["images"]["pytorch-cpu"]["reference"]
    job = manifests.job_manifest(record, team=team, pool=pool, image=image)
    pod = job["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert c["image"] == image

    host_shared = tmp_path / "shared"
    host_job = host_shared / Path(record.job_dir).relative_to(shared)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    cells = [
        "import os, torch, torch.distributed as dist",
        "dist.init_process_group('gloo')\n"
        "t = torch.ones(1) * (dist.get_rank() + 1)\n"
        "dist.all_reduce(t)\n"
        "print('sum', int(t.item()), 'uid', os.getuid(), 'gid', os.getgid(), 'torch', "
        "torch.__version__, 'home', os.path.expanduser('~'))",
    ]
    nbformat.write(new_notebook(cells=[new_code_cell(s) for s in cells]), workspace / "train.ipynb")
    host_job.mkdir(parents=True)
    compile_bundle(record.spec, workspace, host_job / "bundle")
    # The shared volume is the pod's by fsGroup: here, by owner.
    uid, gid = pod["securityContext"]["runAsUser"], pod["securityContext"]["runAsGroup"]
    for path in [host_shared, *host_shared.rglob("*")]:
        os.chown(path, uid, gid)

    env = {e["name"]: e["value"] for e in c["env"] if "value" in e}
    env["NODE_RANK"] = "0"  # the completion index of the only worker
    command = [re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], a) for a in c["command"]]
    buildah, ctr = container("pytorch-cpu")
    proc = subprocess.run(
        buildah.argv(
            "run",
            "--user",
            f"{uid}:{gid}",
            "--workingdir",
            c["workingDir"],
            "-v",
            f"{host_shared}:{shared}",
            *(f"--env={k}={v}" for k, v in sorted(env.items())),
            ctr,
            "--",
            *command,
        ),
        env=buildah.env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    logs = {r: (host_job / "logs" / f"rank-{r}.log").read_text() for r in (0, 1)}
    assert proc.returncode == 0, (proc.stderr[-3000:], logs)
    steps = build.instructions((IMAGES / "pytorch-cpu" / "Dockerfile").read_text())
    version = build.build_args(steps)["TORCH_VERSION"]
    for log in logs.values():
        assert re.search(
            rf"sum 3 uid {uid} gid {gid} torch {re.escape(version)}\S* home /home/jovyan", log
        ), log


def test_a_second_build_with_nothing_changed_builds_nothing(index: dict, checkout: Path) -> None:
    archives = {n: Path(index["images"][n]["archive"]) for n in BUILT}
    before = {n: a.stat() for n, a in archives.items()}
    proc = run_build(checkout, *BUILT)
    assert proc.returncode == 0, proc.stderr[-4000:]
    for name in ("debian", "session", *BUILT):
        assert f"[images] {name}: up to date" in proc.stderr
    assert "built in" not in proc.stderr and "buildah" not in proc.stderr
    after = json.loads(Path(proc.stdout.strip().splitlines()[-1]).read_text())
    assert after == index
    for name, archive in archives.items():
        st = archive.stat()
        assert (st.st_ino, st.st_mtime_ns) == (before[name].st_ino, before[name].st_mtime_ns)


def test_one_build_of_each_image_stays_in_storage(index: dict) -> None:
    """Each change of trainhub's sources makes a new build; the earlier ones leave buildah's
    storage (gigabytes each, for the PyTorch images), as their archives leave the cache."""
    buildah = build.Buildah(build.Paths.from_env())
    listed = buildah.run("images", "--format", "{{.Name}}:{{.Tag}}", quiet=True).stdout.split()
    for name in ("debian", "session", *BUILT):
        own = re.compile(rf"localhost/trainhub/{re.escape(name)}:[0-9a-f]{{16}}")
        assert [ref for ref in listed if own.fullmatch(ref)] == [
            index["images"][name]["local_reference"]
        ], listed
