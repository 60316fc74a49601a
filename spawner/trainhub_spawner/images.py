"""The curated image catalog (``images/catalog.yaml``) and a small Dockerfile linter.

The catalog is a list of :class:`trainhub.teams.Image` entries (so a teams file can name it
as its ``image_catalog``); each entry's Dockerfile is ``images/<name>/Dockerfile`` and
declares its framework versions as ``ARG <FRAMEWORK>_VERSION=...``, which must agree
with the catalog. The linter checks what makes an image reproducible and safe to run:

- every ``FROM`` names a base pinned by a tag other than ``latest``, or by a digest;
- the last ``USER`` is not root;
- no ``ADD`` of a URL (unverified downloads; use ``RUN`` with a checksum);
- every ``RUN`` that installs apt packages removes ``/var/lib/apt/lists`` in the same layer;
- every ``pip install`` names exact versions (``==``), a requirements/constraints file or a
  local path.

Building the images needs a container engine; the checks here need none.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from trainhub.teams import CatalogError, Image, Teams, load_catalog

_PINNED = re.compile(r"^[^\s@]+(:(?!latest$)[\w][\w.-]{0,127}|@sha256:[0-9a-f]{64})$")
_VAR = re.compile(r"\$\{?(\w+)\}?")


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass(frozen=True)
class Instruction:
    line: int
    keyword: str
    args: str


def instructions(text: str) -> list[Instruction]:
    """Dockerfile instructions with continuation lines joined and comments dropped."""
    out: list[Instruction] = []
    buf, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not buf and (not stripped or stripped.startswith("#")):
            continue
        if buf and stripped.startswith("#"):
            continue  # comment lines inside a continued instruction
        if not buf:
            start = number
        if stripped.endswith("\\"):
            buf += stripped[:-1] + " "
            continue
        buf += stripped
        keyword, _, args = buf.partition(" ")
        out.append(Instruction(start, keyword.upper(), args.strip()))
        buf = ""
    if buf:
        keyword, _, args = buf.partition(" ")
        out.append(Instruction(start, keyword.upper(), args.strip()))
    return out


def build_args(steps: list[Instruction]) -> dict[str, str]:
    """``ARG NAME=default`` values (the last one wins), as the build would see them."""
    args: dict[str, str] = {}
    for step in steps:
        if step.keyword == "ARG" and "=" in step.args:
            name, _, value = step.args.partition("=")
            args[name.strip()] = value.strip().strip('"')
    return args


def _expand(text: str, args: dict[str, str]) -> str:
    return _VAR.sub(lambda m: args.get(m.group(1), m.group(0)), text)


def _pip_problem(command: str) -> str | None:
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    for i, word in enumerate(words):
        if word != "install" or i == 0 or not words[i - 1].endswith("pip"):
            continue
        rest = words[i + 1 :]
        skip_next = False
        for arg in rest:
            if arg in {"&&", ";", "||"}:
                break
            if skip_next:
                skip_next = False
                continue
            if arg in {
                "-r",
                "-c",
                "--requirement",
                "--constraint",
                "--index-url",
                "--extra-index-url",
                "-i",
                "--find-links",
                "-f",
                "--prefix",
                "--target",
                "-t",
            }:
                skip_next = True
                continue
            if arg.startswith("-") or arg.startswith(("/", ".")) or "==" in arg:
                continue
            return (
                f"pip install {arg!r} is not pinned: "
                "give an exact version (==) or a constraints file"
            )
    return None


def lint_dockerfile(text: str, path: str = "Dockerfile") -> list[Finding]:
    steps = instructions(text)
    args = build_args([s for s in steps if s.keyword == "ARG"])
    findings: list[Finding] = []
    stages: set[str] = set()
    last_user: Instruction | None = None
    if not any(s.keyword == "FROM" for s in steps):
        findings.append(Finding(path, 1, "no FROM: a Dockerfile starts from a pinned base image"))
    for step in steps:
        if step.keyword == "FROM":
            words = step.args.split()
            words = [w for w in words if not w.startswith("--platform")]
            image = _expand(words[0], args) if words else ""
            if len(words) >= 3 and words[1].upper() == "AS":
                stages.add(words[2].lower())
            if image.lower() in stages or image == "scratch":
                continue
            if "$" in image:
                findings.append(
                    Finding(path, step.line, f"FROM {words[0]}: the build argument has no default")
                )
            elif not _PINNED.match(image):
                findings.append(
                    Finding(
                        path,
                        step.line,
                        f"FROM {image}: pin the base image by a tag other "
                        "than 'latest' or by an @sha256: digest",
                    )
                )
        elif step.keyword == "USER":
            last_user = step
        elif step.keyword == "ADD" and re.search(r"(^|\s)(https?|ftp)://", step.args):
            findings.append(
                Finding(
                    path,
                    step.line,
                    "ADD of a URL downloads without verification: "
                    "use RUN with a checksum check, or COPY",
                )
            )
        elif step.keyword == "RUN":
            if (
                re.search(r"\bapt(-get)?\s+(-\S+\s+)*install\b", step.args)
                and "rm -rf /var/lib/apt/lists" not in step.args
            ):
                findings.append(
                    Finding(
                        path,
                        step.line,
                        "apt-get install without 'rm -rf /var/lib/apt/lists/*' "
                        "in the same RUN leaves the package lists in the layer",
                    )
                )
            problem = _pip_problem(step.args)
            if problem:
                findings.append(Finding(path, step.line, problem))
    if last_user is None:
        findings.append(
            Finding(
                path,
                len(text.splitlines()) or 1,
                "no USER: the image would run as root; end with a non-root USER",
            )
        )
    else:
        user = _expand(last_user.args.split(":")[0].strip(), args)
        if user in {"root", "0"}:
            findings.append(
                Finding(
                    path,
                    last_user.line,
                    f"USER {last_user.args}: the image must end as a non-root user",
                )
            )
    return findings


# --- the catalog -------------------------------------------------------------------------------
def dockerfile_sha256(path: Path) -> str:
    """The hash a catalog entry records of the Dockerfile it is built from: sha256 of its bytes,
    the same bytes images/build.py puts into the image's content hash."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pin_dockerfiles(catalog_path: Path, images_dir: Path) -> list[str]:
    """Write each entry's ``dockerfile_sha256`` into the catalog file in place (comments and
    order kept); returns the names whose hash changed."""
    lines = catalog_path.read_text().splitlines(keepends=True)
    out: list[str] = []
    changed: list[str] = []
    name: str | None = None

    def close_entry() -> None:
        # The hash line goes at the end of the entry before, replacing an older one.
        if name is None:
            return
        dockerfile = images_dir / name / "Dockerfile"
        if not dockerfile.is_file():
            return
        digest = dockerfile_sha256(dockerfile)
        old = next((i for i in range(start, len(out)) if _HASH_LINE.match(out[i])), None)
        line = f"    dockerfile_sha256: {digest}\n"
        if old is None:
            end = len(out)
            while end > start and not out[end - 1].strip():
                end -= 1
            out.insert(end, line)
            changed.append(name)
        elif out[old] != line:
            out[old] = line
            changed.append(name)

    start = 0
    for raw in lines:
        m = _ENTRY_LINE.match(raw)
        if m:
            close_entry()
            name, start = m.group(1), len(out)
        out.append(raw)
    close_entry()
    if changed:
        catalog_path.write_text("".join(out))
    return changed


_ENTRY_LINE = re.compile(r"^  - name:\s*([a-z0-9-]+)\s*$")
_HASH_LINE = re.compile(r"^    dockerfile_sha256:")


def check_catalog(images_dir: Path) -> list[str]:
    """Every catalog entry has a Dockerfile that passes the linter and declares the catalog's
    framework versions; returns the problems (empty when all is well)."""
    problems: list[str] = []
    try:
        catalog = load_catalog(images_dir / "catalog.yaml")
    except CatalogError as e:
        return e.problems
    by_ref = {i.image: i.name for i in catalog}
    for image in catalog:
        dockerfile = images_dir / image.name / "Dockerfile"
        if not dockerfile.is_file():
            problems.append(f"{image.name}: no Dockerfile at {dockerfile}")
            continue
        problems += [str(f) for f in lint_dockerfile(dockerfile.read_text(), str(dockerfile))]
        if image.dockerfile_sha256 != dockerfile_sha256(dockerfile):
            problems.append(
                f"{image.name}: the catalog's dockerfile_sha256 is not that of {dockerfile} "
                "(python images/build.py --pin-dockerfiles writes it)"
            )
        declared = _declared_versions(images_dir, image.name, by_ref)
        for framework, version in image.frameworks.items():
            arg = f"{framework.upper().replace('-', '_')}_VERSION"
            if arg not in declared:
                problems.append(
                    f"{image.name}: the catalog says {framework} {version}, "
                    f"but {dockerfile} declares no ARG {arg}"
                )
                continue
            have, where = declared[arg]
            if not (have == version or have.startswith(version + ".")):
                problems.append(
                    f"{image.name}: the catalog says {framework} {version}, "
                    f"but {where} builds {have}"
                )
    return problems


def _declared_versions(
    images_dir: Path, name: str, by_ref: dict[str, str], seen: frozenset[str] = frozenset()
) -> dict[str, tuple[str, Path]]:
    """The image's ARGs, each with the Dockerfile that declares it, over those of its parent
    when the parent is built here too: a catalog image, or a layer of images_dir that no
    catalog lists (``localhost/trainhub/<name>:<tag>``, the session layer)."""
    path = images_dir / name / "Dockerfile"
    if name in seen or not path.is_file():
        return {}
    steps = instructions(path.read_text())
    own = build_args(steps)
    base = next((_expand(s.args.split()[0], own) for s in steps if s.keyword == "FROM"), "")
    local = _LOCAL_REF.fullmatch(base)
    parent = by_ref.get(base) or (local.group(1) if local else None)
    inherited = _declared_versions(images_dir, parent, by_ref, seen | {name}) if parent else {}
    return {**inherited, **{arg: (value, path) for arg, value in own.items()}}


_LOCAL_REF = re.compile(r"localhost/trainhub/([a-z0-9-]+):[\w.-]+")


def check_teams_images(teams: Teams, catalog: list[Image]) -> list[str]:
    """Every image a teams file offers is a catalog image, with the same reference, and does
    not claim framework versions the catalog does not."""
    by_name = {i.name: i for i in catalog}
    problems = []
    for image in teams.images:
        known = by_name.get(image.name)
        if known is None:
            problems.append(
                f"image {image.name!r} is not in the catalog ({', '.join(sorted(by_name))})"
            )
            continue
        if known.image != image.image:
            problems.append(
                f"image {image.name!r}: the teams file says {image.image}, "
                f"the catalog {known.image}"
            )
        for framework, version in image.frameworks.items():
            if known.frameworks.get(framework) != version:
                problems.append(
                    f"image {image.name!r}: the teams file says {framework} {version}, "
                    f"the catalog {known.frameworks.get(framework, 'nothing')}"
                )
    return problems
