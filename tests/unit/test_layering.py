"""The dependency direction of the architecture document, checked in fresh interpreters and in
the import graph: no import cycle between any two modules of trainhub, its server extension or
its spawner, a child process never imports its parent's facade, and no module runs long.

Every import counts, also one inside a function: a lazy import hides a cycle from the
interpreter, not from the reader; so do the modules a package's ``__init__`` loads lazily by
name (its ``__getattr__`` table). Imports under ``if TYPE_CHECKING:`` are left out (they are
for the type checker alone). A package counts as its ``__init__`` module; importing a module
runs its packages' ``__init__`` first, so what those import at module level is loaded with it.
"""

from __future__ import annotations

import ast
import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = {
    "trainhub": ROOT / "trainhub",
    "trainhub_server": ROOT / "server_extension" / "trainhub_server",
    "trainhub_spawner": ROOT / "spawner" / "trainhub_spawner",
}


def module_name(top: str, base: Path, path: Path) -> str:
    parts = [top, *path.relative_to(base).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def all_modules() -> dict[str, Path]:
    return {
        module_name(top, base, path): path
        for top, base in SOURCES.items()
        for path in base.rglob("*.py")
    }


def _type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _function(node: ast.AST) -> bool:
    return isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)


def imported_names(
    module: str, path: Path, modules: set[str], *, module_level: bool = False
) -> set[str]:
    """Absolute names of the modules ``path`` imports: ``from x import y`` is x.y when that is a
    module, else x; in an ``__init__``, also the modules it names by string (a lazy table).
    ``module_level``: only what running the module itself imports, not its functions."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    skipped = {
        id(n)
        for block in ast.walk(tree)
        if _type_checking_block(block) or (module_level and _function(block))
        for n in ast.walk(block)
    }
    lazy = path.name == "__init__.py" and not module_level  # loaded on use, by __getattr__
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Constant) and lazy and node.value in modules:
            names.add(node.value)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                names.add(sub if sub in modules else source)
    return names


@functools.cache
def import_graph(*, module_level: bool = False) -> dict[str, set[str]]:
    modules = all_modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        # Importing a.b.c first runs a and a.b: for cycles that is the package's own business,
        # not a dependency of the importer, so only the module named counts (loaded() adds it).
        graph[name] = {
            n
            for n in imported_names(name, path, set(modules), module_level=module_level)
            if n in modules and n != name
        }
    return graph


def loaded(module: str, graph: dict[str, set[str]], on_import: dict[str, set[str]]) -> set[str]:
    """Every module that using ``module`` may load: what it imports (in its functions too), and
    for each module loaded, what its packages' ``__init__`` import when they run (``on_import``:
    the module-level imports; a package's lazy names load only when used by name)."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(graph.get(name, ()))
        parts = name.split(".")
        for package in (".".join(parts[:i]) for i in range(1, len(parts))):
            todo.extend(on_import.get(package, ()))
    return seen


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_every_module_and_its_imports() -> None:
    graph = import_graph()
    assert len(graph) > 60
    assert "trainhub.jobs.spec" in graph["trainhub.jobs.service"]
    assert "trainhub.backends.local.store" in graph["trainhub.backends.local.backend"]
    # A relative import resolves against the importing module's package.
    assert "trainhub_server.handlers.jobs" in graph["trainhub_server.routes"]


def test_cycles_are_found_when_they_exist() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("top", sorted(SOURCES))
def test_no_import_cycle_between_modules(top: str) -> None:
    found = [c for c in cycles(import_graph()) if any(m.split(".")[0] == top for m in c)]
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_a_package_init_counts_with_every_module_below_it() -> None:
    graph = {"a.b.c": {"d"}, "d": set(), "a": {"a.e"}, "a.e": {"f"}, "a.b": set(), "f": set()}
    on_import = {"a": {"a.e"}, "a.b": set()}
    assert loaded("a.b.c", graph, on_import) == {"a.b.c", "d", "a.e", "f"}
    # A lazy table's module is loaded on use only: running the package does not load it.
    assert loaded("a.b.c", graph, {"a": set()}) == {"a.b.c", "d"}
    assert "trainhub.api" in import_graph()["trainhub"]  # trainhub/__init__.py's lazy table
    assert "trainhub.api" not in import_graph(module_level=True)["trainhub"]


# Each process of the chain and the facades of the processes that start it (and of the front
# doors above them): a child never imports its parent's facade. The control plane's chain is
# front door (CLI, server, Python API: JobService, the backend) -> admitter -> launcher ->
# supervisor -> torchrun -> rank; on a cluster the pod's first process -> torchrun -> rank.
FRONT_DOORS = [
    "trainhub.api",
    "trainhub.cli",
    "trainhub.jobs.service",
    "trainhub.jobs.access",  # the service's parts (service.py hands each its work)
    "trainhub.jobs.control",
    "trainhub.jobs.submission",
    "trainhub.jobs.views",
    "trainhub.backends.factory",
    "trainhub.backends.local.backend",
    "trainhub.backends.kubernetes.backend",
    "trainhub_server",
]
PARENT_FACADES = {
    "trainhub.backends.local.launcher": FRONT_DOORS,
    "trainhub.backends.local.supervisor": [*FRONT_DOORS, "trainhub.backends.local.launcher"],
    "trainhub.rank.pod": FRONT_DOORS,
    "trainhub.rank.runner": [
        *FRONT_DOORS,
        "trainhub.backends.local.launcher",
        "trainhub.backends.local.supervisor",
        "trainhub.rank.pod",
    ],
}


@pytest.mark.parametrize("child", sorted(PARENT_FACADES))
def test_a_child_process_never_imports_its_parents_facade(child: str) -> None:
    graph, on_import = import_graph(), import_graph(module_level=True)
    assert child in graph
    found = loaded(child, graph, on_import) & set(PARENT_FACADES[child])
    assert not found, f"{child} imports its parent's facade: {sorted(found)}"


def test_the_lifecycle_rules_import_no_backend() -> None:
    """Both backends apply trainhub.lifecycle's rules; the rules know neither backend."""
    graph, on_import = import_graph(), import_graph(module_level=True)
    rules = [m for m in graph if m.split(".")[:2] == ["trainhub", "lifecycle"]]
    assert len(rules) > 5
    for module in rules:
        found = {m for m in loaded(module, graph, on_import) if m.startswith("trainhub.backends")}
        assert not found, f"{module} imports {sorted(found)}"


CORE = [
    "trainhub",
    "trainhub.api",
    "trainhub.cli",
    "trainhub.jobs.service",
    "trainhub.rank.runner",
    "trainhub.bundle.compile",
    "trainhub.checkpoint",
    "trainhub.checkpoint.layout",
    "trainhub.metrics.sampler",
    "trainhub.backends.local.supervisor",
    "trainhub.backends.local.admission",
]


def loaded_after(modules: list[str]) -> set[str]:
    code = (
        "import importlib, json, sys\n"
        + "".join(f"importlib.import_module({m!r})\n" for m in modules)
        + "print(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout))


def test_core_imports_neither_jupyter_server_nor_jupyterhub():
    loaded = loaded_after(CORE)
    assert not {
        m for m in loaded if m.split(".")[0] in {"jupyter_server", "jupyterhub", "kubespawner"}
    }


def test_import_trainhub_stays_light():
    loaded = loaded_after(["trainhub"])
    assert "torch" not in loaded and "pydantic" not in loaded and "IPython" not in loaded


@pytest.mark.parametrize(
    ("module", "forbidden"),
    [
        ("trainhub_server", "jupyterhub"),
        ("trainhub_spawner", "jupyter_server"),
    ],
)
def test_server_extension_and_spawner_stay_apart(module, forbidden):
    loaded = loaded_after([module])
    assert not {m for m in loaded if m.split(".")[0] == forbidden}


# "About 400": a module may pass it by a few lines (a docstring, an import) while it still
# reads as one thing; past this, it holds two and is split along the line between them.
LONGEST_MODULE = 420


def test_no_module_holds_two():
    """No module of the product (the extension's sources included, not its tests) is so long
    that it must hold more than one concern."""
    extension = ROOT / "labextension" / "src"
    sources = [p for base in SOURCES.values() for p in base.rglob("*.py")] + [
        p for p in extension.rglob("*.ts*") if "__tests__" not in p.parts
    ]
    assert len(sources) > 200  # the walk found the tree
    long = {
        str(p.relative_to(ROOT)): n
        for p in sources
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > LONGEST_MODULE
    }
    assert not long, f"split these along their lines: {long}"
