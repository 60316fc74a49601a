"""Builds the curated images from images/ with buildah, cached by what defines them.

    python images/build.py [NAME ...] [--all] [--push REGISTRY]

Without names it builds ``TRAINHUB_IMAGES`` (names separated by spaces or commas, or ``all``),
by default ``base pytorch-cpu``; an image's parent is built first. The chain starts from
``debian``: a Debian 12 root filesystem made by mmdebstrap from the machine's Debian mirror.

Each image's content hash covers its Dockerfile, its parent's hash and what its build context
brings (the trainhub wheel's sources, the cached PyTorch wheels), so a run with nothing changed
builds nothing. Every built image is saved as a docker archive
``<cache>/images/<name>-<hash16>.tar`` named by its catalog reference, and listed in
``<cache>/images/index.json`` (see images/README.md); buildah keeps its storage, with the
layer cache, in ``<cache>/images/storage``. ``--push REGISTRY`` then pushes each named image as
``<REGISTRY>/<name>:<hash16>`` and records its reference by digest in the index.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "images"
# The checkout's own Dockerfile reader and catalog, whichever trainhub the environment installed.
sys.path[:0] = [str(ROOT), str(ROOT / "spawner")]
from trainhub_spawner.images import (  # noqa: E402
    build_args,
    dockerfile_sha256,
    instructions,
    load_catalog,
    pin_dockerfiles,
)

DEBIAN = "debian"
DEBIAN_REF = "localhost/trainhub/debian:12"
# What every session image starts from (images/session): Python, JupyterLab and what trainhub
# requires. Like the Debian root, not in the catalog and built only as a parent.
SESSION = "session"
SESSION_REF = "localhost/trainhub/session:0.1.0"
FOUNDATIONS = {DEBIAN: DEBIAN_REF, SESSION: SESSION_REF}
DEFAULT_IMAGES = ("base", "pytorch-cpu")
# Images that are not sessions' (not in catalog.yaml), built only when named: the hub, and the
# proxy that tests installing Zero-to-JupyterHub run (configurable-http-proxy from npm).
OTHER_IMAGES = {
    "hub": "ghcr.io/trainhub/hub:0.1.0",
    "proxy": "ghcr.io/trainhub/configurable-http-proxy:5.2.0",
}
INDEX_FORMAT = 1
# What every curated image needs from Debian; the rest comes from PyPI inside the Dockerfiles.
DEBIAN_PACKAGES = ("python3", "python3-venv", "ca-certificates", "git", "tini")
DEBIAN_SUITES = ("bookworm", "bookworm-updates", "bookworm-security")
# Documentation and translations are not needed in an image; copyright files stay.
DPKG_OPTIONS = (
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
    "path-exclude=/usr/share/locale/*",
)
# The files the trainhub wheel is made of (pyproject.toml's wheel target and shared data), the
# JupyterLab extension by its sources: its build (LABEXTENSION_BUILD, made by the wheel's build
# hook) is an output, absent from a fresh clone, and never part of the digest.
WHEEL_SOURCES = (
    "pyproject.toml",
    "README.md",
    "jupyter-config",
    "trainhub",
    "server_extension/trainhub_server",
    "spawner/trainhub_spawner",
    "package.json",
    "yarn.lock",
    ".yarnrc.yml",  # node_modules, not Plug'n'Play: the extension's build needs them
    "tsconfig.json",
    "labextension/src",
    "labextension/style",
    "labextension/schema",
)
LABEXTENSION_BUILD = "trainhub/labextension"
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


class BuildError(RuntimeError):
    pass


def log(message: str) -> None:
    print(f"[images] {message}", file=sys.stderr, flush=True)


# --- where things live ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Paths:
    cache: Path  # TRAINHUB_CACHE
    wheels: Path  # the wheelhouse scripts/setup-env.sh fills

    @property
    def out(self) -> Path:
        return self.cache / "images"

    @property
    def index(self) -> Path:
        return self.out / "index.json"

    @property
    def storage(self) -> Path:
        return self.out / "storage"

    def archive(self, name: str, key: str) -> Path:
        return self.out / f"{name}-{key[:16]}.tar"

    @classmethod
    def from_env(cls) -> Paths:
        cache = Path(os.environ.get("TRAINHUB_CACHE") or Path.home() / ".cache" / "trainhub")
        return cls(cache=cache, wheels=cache / "wheels")


# --- what an image is made of --------------------------------------------------------------------
@dataclass(frozen=True)
class Image:
    name: str
    reference: str  # the name it is saved under: the catalog's, or DEBIAN_REF
    dockerfile: Path
    parent: str | None  # another image built here, or None when it starts elsewhere
    uses_wheel: bool  # dist/trainhub-<version>-py3-none-any.whl from the build context
    uses_wheels: bool  # the cached PyTorch wheels, as the build context "wheels"
    declares: frozenset[str]  # its build arguments
    # dist/requirements-<extra>.txt it copies: what trainhub[extra] requires, installed in a
    # layer before the wheel's, so a change to trainhub alone rebuilds only that small layer
    requirements: frozenset[str] = frozenset()
    stages: tuple[str, ...] = ()  # its named stages (FROM ... AS <stage>), kept tagged
    files: tuple[Path, ...] = ()  # the other files of its folder, copied into the build context

    def local_ref(self, key: str, stage: str | None = None) -> str:
        name = self.name if stage is None else f"{self.name}-{stage}"
        return f"localhost/trainhub/{name}:{key[:16]}"


def images_of(images_dir: Path = IMAGES) -> dict[str, Image]:
    """Every image buildable from ``images_dir``: the catalog's, the hub's, the proxy's, the
    session layer and the Debian root."""
    refs = {i.name: i.image for i in load_catalog(images_dir / "catalog.yaml")}
    for name, ref in (OTHER_IMAGES | {SESSION: SESSION_REF}).items():
        if (images_dir / name / "Dockerfile").is_file():
            refs.setdefault(name, ref)
    by_ref = {ref: name for name, ref in refs.items()} | {DEBIAN_REF: DEBIAN}
    out = {DEBIAN: _image(images_dir, DEBIAN, DEBIAN_REF, by_ref)}
    for name, ref in refs.items():
        out[name] = _image(images_dir, name, ref, by_ref)
    return out


def _image(images_dir: Path, name: str, reference: str, by_ref: dict[str, str]) -> Image:
    dockerfile = images_dir / name / "Dockerfile"
    if not dockerfile.is_file():
        raise BuildError(f"{name}: no Dockerfile at {dockerfile}")
    text = dockerfile.read_text()
    steps = instructions(text)
    defaults = build_args(steps)
    first = next((s for s in steps if s.keyword == "FROM"), None)
    if first is None:
        raise BuildError(f"{dockerfile}: no FROM")
    base = first.args.split()[0]
    base = defaults.get("BASE_IMAGE", base) if base in {"${BASE_IMAGE}", "$BASE_IMAGE"} else base
    declared = frozenset(
        s.args.partition("=")[0].strip() for s in steps if s.keyword == "ARG" and s.args
    )
    return Image(
        name=name,
        reference=reference,
        dockerfile=dockerfile,
        parent=by_ref.get(base) if base != "scratch" else None,
        uses_wheel="dist/trainhub-" in text,
        uses_wheels="from=wheels" in text,
        declares=declared,
        requirements=frozenset(re.findall(r"dist/requirements-([a-z0-9_-]+)\.txt", text)),
        stages=tuple(
            parts[2]
            for s in steps
            if s.keyword == "FROM"
            and len(parts := s.args.split()) == 3
            and parts[1].upper() == "AS"
        ),
        files=tuple(
            sorted(p for p in dockerfile.parent.iterdir() if p.is_file() and p != dockerfile)
        ),
    )


def with_parents(names: Iterable[str], images: dict[str, Image]) -> list[str]:
    """The names in build order, each after its parents."""
    order: list[str] = []

    def visit(name: str) -> None:
        if name not in images:
            raise BuildError(f"no image {name!r}: the images are {', '.join(sorted(images))}")
        parent = images[name].parent
        if parent:
            visit(parent)
        if name not in order:
            order.append(name)

    for name in names:
        visit(name)
    return order


# --- content hashes ------------------------------------------------------------------------------
def tree_digest(root: Path, relative: Iterable[str]) -> str:
    """sha256 over the paths and bytes of the files under ``relative``; caches, the extension's
    tests and its build output left out."""
    h, output = hashlib.sha256(), root / LABEXTENSION_BUILD
    for rel in relative:
        top = root / rel
        files = sorted(top.rglob("*")) if top.is_dir() else [top] if top.exists() else []
        for path in files:
            if not path.is_file() or path.suffix == ".pyc" or path.is_relative_to(output):
                continue
            if {"__pycache__", "__tests__"} & set(path.parts):  # caches, the extension's tests
                continue
            h.update(str(path.relative_to(root)).encode() + b"\0")
            h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


class FileDigests:
    """sha256 of big files, remembered by (path, size, mtime) so that a warm run reads none."""

    def __init__(self, memo: Path):
        self.memo = memo
        try:
            self.known: dict[str, list] = json.loads(memo.read_text())
        except (OSError, ValueError):
            self.known = {}

    def __call__(self, path: Path) -> str:
        st = path.stat()
        seen = self.known.get(str(path))
        if seen and seen[:2] == [st.st_size, st.st_mtime_ns]:
            return seen[2]
        h = hashlib.sha256()
        with path.open("rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
        self.known[str(path)] = [st.st_size, st.st_mtime_ns, h.hexdigest()]
        return h.hexdigest()

    def save(self) -> None:
        write_atomic(self.memo, json.dumps(self.known, indent=1, sort_keys=True))


def wheels_digest(wheels: Path, digest: FileDigests) -> str:
    h = hashlib.sha256()
    for path in sorted(wheels.glob("*.whl")):
        h.update(f"{path.name}\0{digest(path)}\n".encode())
    return h.hexdigest()


def image_key(
    image: Image, parent_key: str | None, inputs: dict[str, str], build: dict[str, str]
) -> str:
    """The content hash of an image: its Dockerfile, its parent, the build arguments it is given
    and the digests of what its build context brings."""
    h = hashlib.sha256()
    h.update(f"{INDEX_FORMAT}\0{image.name}\0{image.reference}\0".encode())
    h.update(image.dockerfile.read_bytes())
    h.update(f"\0parent={parent_key or image.parent or ''}\0".encode())
    for k, v in sorted(build.items()):
        h.update(f"arg {k}={v}\0".encode())
    for k, v in sorted(inputs.items()):
        h.update(f"input {k}={v}\0".encode())
    return h.hexdigest()


# --- Debian --------------------------------------------------------------------------------------
def debian_sources(sources_dir: Path = Path("/etc/apt"), mirror: str | None = None) -> list[str]:
    """One-line apt sources for bookworm, from the machine's Debian mirror (deb822 or one-line
    files), else deb.debian.org; ``mirror`` (TRAINHUB_DEBIAN_MIRROR) overrides the main one."""
    uris: dict[str, str] = {}
    files = [sources_dir / "sources.list", *sorted((sources_dir / "sources.list.d").glob("*"))]
    for path in files:
        try:
            text = path.read_text()
        except OSError:
            continue
        for uri in _debian_uris(text):
            kind = "security" if uri.rstrip("/").endswith("-security") else "main"
            uris.setdefault(kind, uri.rstrip("/"))
    main = (mirror or uris.get("main") or "http://deb.debian.org/debian").rstrip("/")
    security = uris.get("security") or "http://deb.debian.org/debian-security"
    return [
        f"deb {security if suite.endswith('-security') else main} {suite} main"
        for suite in DEBIAN_SUITES
    ]


def _debian_uris(text: str) -> list[str]:
    found = []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if words[:1] == ["URIs:"]:
            found += words[1:]
        elif words[:1] == ["deb"]:
            found += [w for w in words[1:] if "://" in w][:1]
    return [u for u in found if u.rstrip("/").endswith(("/debian", "/debian-security"))]


def mmdebstrap_argv(target: Path, sources: list[str]) -> list[str]:
    return [
        "mmdebstrap",
        "--variant=minbase",
        "--include=" + ",".join(DEBIAN_PACKAGES),
        *(f"--dpkgopt={o}" for o in DPKG_OPTIONS),
        '--aptopt=Acquire::Languages "none"',
        "--format=tar",
        "bookworm",
        str(target),
        *sources,
    ]


# --- buildah -------------------------------------------------------------------------------------
class Buildah:
    def __init__(self, paths: Paths):
        self.paths = paths
        self.driver = os.environ.get("TRAINHUB_IMAGES_STORAGE_DRIVER", "overlay")

    def argv(self, *args: str) -> list[str]:
        return [
            "buildah",
            "--root",
            str(self.paths.storage),
            "--runroot",
            str(self.paths.out / "run"),
            "--storage-driver",
            self.driver,
            *args,
        ]

    def env(self) -> dict[str, str]:
        # No container runtime is needed: RUN steps are chrooted.
        tmp = self.paths.out / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        return {**os.environ, "BUILDAH_ISOLATION": "chroot", "TMPDIR": str(tmp)}

    def run(self, *args: str, quiet: bool = False) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            self.argv(*args),
            env=self.env(),
            text=True,
            stdout=subprocess.PIPE if quiet else sys.stderr,
            stderr=subprocess.PIPE if quiet else sys.stderr,
        )
        if proc.returncode:
            detail = (proc.stderr or "").strip()[-2000:] if quiet else "see the output above"
            raise BuildError(f"buildah {args[0]} failed ({proc.returncode}): {detail}")
        return proc

    def drop_other_builds(self, kept: dict[str, str]) -> None:
        """Leave each name's kept build (``{name: ref}``, an image's and its stages') the only
        one of that name in storage (what it shares with others stays): each change of
        trainhub's sources makes a new build, and the PyTorch ones are gigabytes. A build that
        cannot be removed now is said and left."""
        listed = self.run("images", "--format", "{{.Name}}:{{.Tag}}", quiet=True).stdout.split()
        old = sorted(
            {
                ref
                for name, keep in kept.items()
                for ref in listed
                if ref != keep
                and re.fullmatch(rf"localhost/trainhub/{re.escape(name)}:[0-9a-f]{{16}}", ref)
            }
        )
        name = ", ".join(kept)
        # A build cut short (its run interrupted) leaves its working container, which holds
        # its base image: every later removal failed on it, and the prune after it never ran.
        # Builds run one at a time per storage (main's lock), so none is some build's now.
        steps = [("rm", "--all"), *([("rmi", *old)] if old else []), ("rmi", "--prune")]
        for step in steps:  # the layers nothing else holds go last
            try:
                self.run(*step, quiet=True)
            except BuildError as e:
                log(f"{name}: earlier builds left in storage: {e}")

    def has(self, ref: str) -> bool:
        return (
            subprocess.run(
                self.argv("inspect", "--type", "image", ref),
                env=self.env(),
                capture_output=True,
            ).returncode
            == 0
        )


# --- the build -----------------------------------------------------------------------------------
def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def read_index(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {"format": INDEX_FORMAT, "images": {}}
    if data.get("format") != INDEX_FORMAT or not isinstance(data.get("images"), dict):
        return {"format": INDEX_FORMAT, "images": {}}
    return data


def trainhub_version(root: Path = ROOT) -> str:
    return tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"]


def trainhub_requirements(pyproject: dict, extra: str) -> list[str]:
    """What ``trainhub[extra]`` requires, as its pyproject.toml says (an extra naming trainhub's
    own other extras brings theirs): the lines of an image's requirements file."""
    project = pyproject["project"]
    own = re.compile(rf"{re.escape(project['name'])}\[([^\]]+)\]")
    out: set[str] = set(project.get("dependencies", []))
    if extra not in project.get("optional-dependencies", {}):
        raise BuildError(f"pyproject.toml: trainhub has no extra {extra!r}")
    for requirement in project["optional-dependencies"][extra]:
        if (named := own.fullmatch(requirement.replace(" ", ""))) is not None:
            for other in named.group(1).split(","):
                out.update(trainhub_requirements(pyproject, other))
        else:
            out.add(requirement)
    return sorted(out)


class Builder:
    def __init__(self, paths: Paths, images: dict[str, Image], root: Path = ROOT):
        self.paths, self.images, self.root = paths, images, root
        self.buildah = Buildah(paths)
        self.digests = FileDigests(paths.out / "file-digests.json")
        self.keys: dict[str, str] = {}
        self.version = trainhub_version(root)
        self._source_digest: str | None = None
        self._wheels_digest: str | None = None
        self._wheel: Path | None = None
        self._stage_refs: dict[tuple[str, str], str] = {}

    # what an image's key is made of
    def build_args(self, image: Image) -> dict[str, str]:
        args = {}
        if image.parent:
            args["BASE_IMAGE"] = self.images[image.parent].local_ref(self.keys[image.parent])
        if "TRAINHUB_VERSION" in image.declares:
            args["TRAINHUB_VERSION"] = self.version
        for stage in image.stages:  # a stage's files, mounted from its tagged build (build())
            if (arg := f"{stage.upper()}_STAGE") in image.declares:
                args[arg] = self.stage_ref(image, stage)
        return args

    def stage_ref(self, image: Image, stage: str) -> str:
        """A stage's tag, by what it is made of: the image's inputs but trainhub's code (what
        trainhub requires is), so that a change to trainhub alone finds it built and tagged.
        Worked out once per build: its key, its build and its cleanup each ask."""
        if (image.name, stage) not in self._stage_refs:
            self._stage_refs[image.name, stage] = self._stage_ref(image, stage)
        return self._stage_refs[image.name, stage]

    def _stage_ref(self, image: Image, stage: str) -> str:
        pyproject = tomllib.loads((self.root / "pyproject.toml").read_text())
        made_of = {
            **{k: v for k, v in self.inputs(image).items() if k != "trainhub"},
            "dockerfile": dockerfile_sha256(image.dockerfile),
            "parent": self.key(image.parent) if image.parent else None,
            "requirements": {e: trainhub_requirements(pyproject, e) for e in image.requirements},
        }
        digest = hashlib.sha256(json.dumps(made_of, sort_keys=True).encode()).hexdigest()
        return image.local_ref(digest, stage)

    def inputs(self, image: Image) -> dict[str, str]:
        out = {}
        for path in image.files:
            out[f"file {path.name}"] = hashlib.sha256(path.read_bytes()).hexdigest()
        if image.name == DEBIAN:
            out["mmdebstrap"] = json.dumps(mmdebstrap_argv(Path("rootfs.tar"), self.sources()))
        if image.requirements:  # what trainhub requires, apart from the wheel's sources
            pyproject = tomllib.loads((self.root / "pyproject.toml").read_text())
            for extra in sorted(image.requirements):
                out[f"requirements {extra}"] = json.dumps(trainhub_requirements(pyproject, extra))
        if image.uses_wheel:
            if self._source_digest is None:
                self._source_digest = tree_digest(self.root, WHEEL_SOURCES)
            out["trainhub"] = self._source_digest
        if image.uses_wheels:
            if self._wheels_digest is None:
                if not any(self.paths.wheels.glob("torch-*.whl")):
                    raise BuildError(
                        f"{image.name}: no PyTorch wheel in {self.paths.wheels} "
                        "(scripts/setup-env.sh caches it)"
                    )
                self._wheels_digest = wheels_digest(self.paths.wheels, self.digests)
            out["wheels"] = self._wheels_digest
        return out

    def sources(self) -> list[str]:
        return debian_sources(mirror=os.environ.get("TRAINHUB_DEBIAN_MIRROR"))

    def key(self, name: str) -> str:
        if name not in self.keys:
            image = self.images[name]
            parent_key = self.key(image.parent) if image.parent else None
            self.keys[name] = image_key(
                image, parent_key, self.inputs(image), self.build_args(image)
            )
        return self.keys[name]

    # the steps
    def ensure(self, names: list[str]) -> dict:
        """Builds what is missing of ``names`` (parents first); returns the index."""
        order = with_parents(names, self.images)
        for name in order:
            self.key(name)
        self.digests.save()
        index = read_index(self.paths.index)
        for name in order:
            image, key = self.images[name], self.keys[name]
            archive = self.paths.archive(name, key)
            entry = index["images"].get(name, {})
            if archive.is_file() and entry.get("content_hash") == key:
                log(f"{name}: up to date ({archive})")
                if "dockerfile_sha256" not in entry:  # an index written before it was kept
                    entry["dockerfile_sha256"] = dockerfile_sha256(image.dockerfile)
                    write_atomic(
                        self.paths.index, json.dumps(index, indent=2, sort_keys=True) + "\n"
                    )
                continue
            started = time.monotonic()
            if image.parent:
                self.load(image.parent, index)
            self.build(image, key)
            # One archive per image, the older gone before the new is written: the PyTorch
            # ones are gigabytes, and two of them at once fill a small disk.
            for old in self.paths.out.glob(f"{name}-*.tar"):
                if old != archive and re.fullmatch(rf"{re.escape(name)}-[0-9a-f]{{16}}", old.stem):
                    old.unlink()
            self.save(image, key, archive)
            index["images"][name] = {
                "reference": image.reference,
                "archive": str(archive),
                "format": "docker-archive",
                "content_hash": key,
                "dockerfile_sha256": dockerfile_sha256(image.dockerfile),
                "local_reference": image.local_ref(key),
                "parent": image.parent,
                "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "build_seconds": round(time.monotonic() - started, 1),
            }
            write_atomic(self.paths.index, json.dumps(index, indent=2, sort_keys=True) + "\n")
            kept = {name: image.local_ref(key)}
            kept |= {f"{name}-{stage}": self.stage_ref(image, stage) for stage in image.stages}
            self.buildah.drop_other_builds(kept)
            log(f"{name}: built in {time.monotonic() - started:.0f}s ({archive})")
        return index

    def load(self, name: str, index: dict) -> None:
        """A built image in buildah's storage: already there, or from its archive."""
        image, key = self.images[name], self.keys[name]
        ref = image.local_ref(key)
        if self.buildah.has(ref):
            return
        archive = self.paths.archive(name, key)
        if not archive.is_file():
            raise BuildError(f"{name}: neither in storage nor saved at {archive}")
        log(f"{name}: loading {archive} into buildah's storage")
        self.buildah.run("pull", "--quiet", f"docker-archive:{archive}", quiet=True)
        self.buildah.run("tag", image.reference, ref, quiet=True)

    def build(self, image: Image, key: str) -> None:
        context = self.paths.out / "context" / image.name
        shutil.rmtree(context, ignore_errors=True)
        context.mkdir(parents=True)
        try:
            if image.name == DEBIAN:
                self.rootfs(context / "rootfs.tar")
            for path in image.files:
                shutil.copyfile(path, context / path.name)
            if image.uses_wheel or image.requirements:
                (context / "dist").mkdir()
            if image.uses_wheel:
                wheel = self.wheel()
                os.link(wheel, context / "dist" / wheel.name)
            pyproject = tomllib.loads((self.root / "pyproject.toml").read_text())
            for extra in sorted(image.requirements):
                lines = trainhub_requirements(pyproject, extra)
                (context / "dist" / f"requirements-{extra}.txt").write_text("\n".join(lines) + "\n")
            argv = [
                "build",
                "--layers",
                "--isolation",
                "chroot",
                "-f",
                str(image.dockerfile),
                "--label",
                f"io.trainhub.content-hash={key}",
                "--label",
                f"io.trainhub.image={image.reference}",
            ]
            if image.parent:
                argv += ["--pull=never"]
            for k, v in self.build_args(image).items():
                argv += ["--build-arg", f"{k}={v}"]
            if image.uses_wheels:
                argv += ["--build-context", f"wheels={self.paths.wheels}"]
            if HOST_CA_BUNDLE.is_file():
                # This machine's trust store (its TLS proxy's CA, say) for pip while building,
                # mounted only: nothing of it stays in the image.
                argv += ["-v", f"{HOST_CA_BUNDLE}:/etc/ssl/certs/ca-certificates.crt:ro"]
            # Each named stage tagged first: untagged, its layers (a compiler, wheels built
            # from source) would be pruned with every earlier build, and made again each time.
            for stage in image.stages:
                self.buildah.run(
                    *argv, "--target", stage, "-t", self.stage_ref(image, stage), str(context)
                )
            tags = ["-t", image.reference, "-t", image.local_ref(key)]
            self.buildah.run(*argv, *tags, str(context))
        finally:
            shutil.rmtree(context, ignore_errors=True)

    def rootfs(self, target: Path) -> None:
        log("debian: making the root filesystem with mmdebstrap")
        proc = subprocess.run(
            mmdebstrap_argv(target, self.sources()), stdout=sys.stderr, stderr=sys.stderr
        )
        if proc.returncode:
            raise BuildError(f"mmdebstrap failed ({proc.returncode}): see the output above")

    def wheel(self) -> Path:
        """The trainhub wheel built from the checkout, once per run."""
        if self._wheel is None:
            out = self.paths.out / "wheel"
            shutil.rmtree(out, ignore_errors=True)
            # The build hook skips the extension's build when one is there, which may be of
            # other sources than the digest's: it builds it from them, always.
            shutil.rmtree(self.root / LABEXTENSION_BUILD, ignore_errors=True)
            log("trainhub: building the wheel (and the JupyterLab extension) from the checkout")
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "wheel",
                    "-q",
                    "--no-deps",
                    "-w",
                    str(out),
                    str(self.root),
                ],
                stdout=sys.stderr,
                stderr=sys.stderr,
            )
            expected = out / f"trainhub-{self.version}-py3-none-any.whl"
            if proc.returncode or not expected.is_file():
                raise BuildError(f"building the trainhub wheel failed: no {expected}")
            self._wheel = expected
        return self._wheel

    def push(self, name: str, index: dict, registry: str, tls_verify: bool = True) -> str:
        """Pushes the built image ``name`` to ``registry`` (a host, optionally with a path:
        ``registry.example.org/ml``) under its content tag, ``<registry>/<name>:<hash16>``, and
        records it in the index; returns its reference by digest, the one to put in a catalog."""
        image, key = self.images[name], self.keys[name]
        self.load(name, index)
        repository = f"{registry.rstrip('/')}/{name}"
        digestfile = self.paths.out / "tmp" / f"{name}.digest"
        digestfile.parent.mkdir(parents=True, exist_ok=True)
        self.buildah.run(
            "push",
            "--quiet",
            f"--tls-verify={'true' if tls_verify else 'false'}",
            "--digestfile",
            str(digestfile),
            image.local_ref(key),
            f"docker://{repository}:{key[:16]}",
            quiet=True,
        )
        pinned = f"{repository}@{digestfile.read_text().strip()}"
        index["images"][name].setdefault("pushed", {})[registry] = pinned
        write_atomic(self.paths.index, json.dumps(index, indent=2, sort_keys=True) + "\n")
        log(f"{name}: pushed as {repository}:{key[:16]} ({pinned})")
        return pinned

    def save(self, image: Image, key: str, archive: Path) -> None:
        tmp = archive.with_name(f".{archive.name}.tmp")
        tmp.unlink(missing_ok=True)
        try:
            self.buildah.run(
                "push",
                "--quiet",
                image.local_ref(key),
                f"docker-archive:{tmp}:{image.reference}",
                quiet=True,
            )
        except BaseException:
            tmp.unlink(missing_ok=True)  # a full disk's half archive would keep it full
            raise
        os.replace(tmp, archive)


def requested(argv_names: list[str], everything: bool, images: dict[str, Image]) -> list[str]:
    catalog = [n for n in images if n not in FOUNDATIONS and n not in OTHER_IMAGES]
    if everything:
        return catalog
    names = argv_names or os.environ.get("TRAINHUB_IMAGES", "").replace(",", " ").split()
    if names == ["all"]:
        return catalog
    return names or list(DEFAULT_IMAGES)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="images to build (default: base pytorch-cpu)")
    parser.add_argument("--all", action="store_true", help="every catalog image")
    parser.add_argument(
        "--checkout", type=Path, default=ROOT, help="the checkout to build from (default: this one)"
    )
    parser.add_argument(
        "--pin-dockerfiles",
        action="store_true",
        help="write each catalog entry's dockerfile_sha256 into images/catalog.yaml, build nothing",
    )
    parser.add_argument(
        "--push",
        metavar="REGISTRY",
        help="then push each named image to REGISTRY (host[:port][/path]) as <name>:<hash16>",
    )
    parser.add_argument(
        "--insecure-registry",
        action="store_true",
        help="push over plain HTTP or without verifying the certificate (a registry on loopback)",
    )
    args = parser.parse_args(argv)
    root = args.checkout.resolve()
    if args.pin_dockerfiles:
        changed = pin_dockerfiles(root / "images" / "catalog.yaml", root / "images")
        log(f"dockerfile_sha256 written for: {', '.join(changed) or 'none (all current)'}")
        return 0
    paths = Paths.from_env()
    paths.out.mkdir(parents=True, exist_ok=True)
    try:
        images = images_of(root / "images")
        names = requested(args.names, args.all, images)
        with (paths.out / "lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time per cache
            builder = Builder(paths, images, root)
            index = builder.ensure(names)
            for name in names if args.push else ():
                builder.push(name, index, args.push, tls_verify=not args.insecure_registry)
    except BuildError as e:
        print(f"images/build.py: {e}", file=sys.stderr)
        return 1
    print(paths.index)
    return 0


if __name__ == "__main__":
    sys.exit(main())
