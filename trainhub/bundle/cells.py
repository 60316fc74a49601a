"""A notebook's cells: reading the .ipynb, choosing the cells a job runs, injecting parameters.

Cells are chosen by the submitted selection (all, indices, tags); ``trainhub:skip`` and
nbclient's ``skip-execution`` always leave a cell out. The cell tagged ``parameters``
(papermill's convention) gets the submitted overrides injected right after it. A cell tagged
``raises-exception`` (nbclient's) may raise: its error is its output and the run goes on.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from math import isfinite
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainhub.bundle.errors import BundleError
from trainhub.bundle.schema import BundleCell, cell_label

if TYPE_CHECKING:
    from trainhub.jobs.sources import CellSelection

SKIP_TAGS = ("trainhub:skip", "skip-execution")
PARAMETERS_TAG = "parameters"
INJECTED_TAG = "injected-parameters"
RAISES_TAG = "raises-exception"


@dataclass(frozen=True)
class Notebook:
    """The parts of an .ipynb a bundle needs."""

    cells: list[dict[str, Any]]
    nbformat: int
    doc: dict[str, Any]  # the whole notebook, nbformat 4


def read_notebook(path: Path, raw: bytes | None = None) -> Notebook:
    """Read the notebook's JSON directly.

    nbformat's full schema validation loads jsonschema's format checkers, which costs seconds
    on every submit; a bundle needs only the cells, so check just what it relies on. An older
    notebook (nbformat 2 or 3) is upgraded as nbconvert and papermill do (``nbformat.convert``).
    """
    try:
        doc = json.loads((path.read_bytes() if raw is None else raw).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BundleError(f"{path.name} is not a readable notebook: {e}") from None
    major = doc.get("nbformat") if isinstance(doc, dict) else None
    if major in (2, 3):
        doc = _upgraded(path.name, doc, major)
    if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list):
        raise BundleError(f"{path.name} is not a readable notebook: it has no list of cells")
    if major not in (2, 3, 4):
        raise BundleError(
            f"{path.name}: nbformat {major!r} is not a notebook format trainhub reads "
            "(nbformat 4, or 2 and 3, which are upgraded)"
        )
    for index, cell in enumerate(doc["cells"]):
        if not isinstance(cell, dict) or not isinstance(cell.get("cell_type"), str):
            raise BundleError(
                f"{path.name}: {cell_label(index)} (index {index}) is not a valid cell"
            )
        source = cell.get("source", "")
        if not (
            isinstance(source, str)
            or (isinstance(source, list) and all(isinstance(x, str) for x in source))
        ):
            raise BundleError(
                f"{path.name}: {cell_label(index)} (index {index}) has an invalid source"
            )
    _check_python(path.name, doc.get("metadata"))
    return Notebook(cells=doc["cells"], nbformat=4, doc=doc)


def _upgraded(name: str, doc: dict[str, Any], major: int) -> dict[str, Any]:
    import nbformat  # rare: not on every submit's path

    try:
        return json.loads(nbformat.writes(nbformat.convert(nbformat.from_dict(doc), 4)))
    except Exception as e:  # nbformat's own reason, whatever it raises
        raise BundleError(
            f"{name} is nbformat {major} and nbformat could not upgrade it to 4: {e}"
        ) from None


def _check_python(name: str, metadata: Any) -> None:
    """Ranks run cells in a Python interpreter; a notebook of another kernel is refused."""
    metadata = metadata if isinstance(metadata, dict) else {}
    kernelspec = metadata.get("kernelspec") if isinstance(metadata.get("kernelspec"), dict) else {}
    info = metadata.get("language_info") if isinstance(metadata.get("language_info"), dict) else {}
    language = kernelspec.get("language") or info.get("name")
    if not isinstance(language, str) or language.strip().lower() in ("python", "python3", ""):
        return
    kernel = kernelspec.get("display_name") or kernelspec.get("name") or language
    raise BundleError(
        f"{name} is a notebook for the {str(kernel)[:80]!r} kernel ({language[:40]}); "
        "trainhub runs Python notebooks only"
    )


# --- cell selection -----------------------------------------------------------------------


def _tags(cell: Any) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []) or [])


def _source(cell: Any) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def select_cells(
    notebook: Any, selection: CellSelection, notebook_path: str, warnings: list[str]
) -> list[BundleCell]:
    """The code cells ``selection`` picks, in notebook order; the skip tags always exclude."""
    nb_cells = notebook.cells
    if selection.mode == "indices":
        for index in selection.indices:
            if index >= len(nb_cells):
                raise BundleError(
                    f"{notebook_path}: cell index {index} ({cell_label(index)}) does not exist; "
                    f"the notebook has {len(nb_cells)} cells (indices 0-{len(nb_cells) - 1})"
                )
            kind = nb_cells[index].get("cell_type")
            if kind != "code":
                raise BundleError(
                    f"{notebook_path}: {cell_label(index)} (index {index}) is a {kind} cell, "
                    "not a code cell"
                )
        candidates = sorted(set(selection.indices))
    elif selection.mode == "tags":
        wanted = set(selection.tags)
        candidates = [
            i
            for i, c in enumerate(nb_cells)
            if c.get("cell_type") == "code" and wanted & set(_tags(c))
        ]
        if not candidates:
            raise BundleError(
                f"{notebook_path}: no code cell is tagged {', '.join(sorted(wanted))}"
            )
    else:
        candidates = [i for i, c in enumerate(nb_cells) if c.get("cell_type") == "code"]

    chosen = []
    for i in candidates:
        tags = _tags(nb_cells[i])
        skip = next((tag for tag in SKIP_TAGS if tag in tags), None)
        if skip is not None:
            if selection.mode == "indices":
                warnings.append(f"{cell_label(i)} is tagged {skip} and was left out")
            continue
        source = _source(nb_cells[i])
        if source.strip():
            chosen.append(BundleCell(cell_index=i, source=source, tags=tags))
    if not chosen:
        raise BundleError(f"{notebook_path}: the selection contains no code to run")
    return chosen


# --- parameters ---------------------------------------------------------------------------


def _parameters_cell(notebook: Any) -> int | None:
    for i, cell in enumerate(notebook.cells):
        if cell.get("cell_type") == "code" and PARAMETERS_TAG in _tags(cell):
            return i
    return None


def _literal(name: str, value: Any) -> str:
    if isinstance(value, float) and not isfinite(value):
        return f"float({str(value)!r})"
    text = repr(value)
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise BundleError(f"parameters.{name}: {text} is not a Python literal") from None
    return text


def parameters_source(parameters: dict[str, Any]) -> str:
    lines = ["# Parameters injected by trainhub"]
    lines += [f"{name} = {_literal(name, value)}" for name, value in parameters.items()]
    return "\n".join(lines) + "\n"


def assigned_names(source: str) -> set[str] | None:
    """Names a cell assigns at top level; None when it cannot be parsed."""
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        tree = ast.parse(TransformerManager().transform_cell(source))
    except SyntaxError:
        return None
    names: set[str] = set()
    for node in tree.body:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        for target in targets:
            for sub in ast.walk(target):
                if isinstance(sub, ast.Name):
                    names.add(sub.id)
    return names


def inject_parameters(
    notebook: Any,
    cells: list[BundleCell],
    parameters: dict[str, Any],
    warnings: list[str],
    *,
    allow_new: bool = False,
) -> list[BundleCell]:
    """Insert the parameters cell right after the cell tagged ``parameters`` (papermill's rule).

    A name that cell does not assign is refused, naming those it does, unless ``allow_new``:
    a typo would otherwise run the whole job with the notebook's default.
    """
    if not parameters:
        return cells
    injected = BundleCell(
        cell_index=None, source=parameters_source(parameters), tags=[INJECTED_TAG], injected=True
    )
    at = _parameters_cell(notebook)
    if at is None:
        warnings.append(
            f"no cell is tagged '{PARAMETERS_TAG}'; the parameters "
            f"({', '.join(parameters)}) are set before the first cell"
        )
        return [injected, *cells]
    if all(c.cell_index != at for c in cells):
        warnings.append(
            f"{cell_label(at)}, tagged '{PARAMETERS_TAG}', is not selected; "
            "the parameters are set where it would have run"
        )
    known = assigned_names(_source(notebook.cells[at]))
    if known is None:
        warnings.append(
            f"{cell_label(at)} (parameters) could not be parsed to check parameter names"
        )
    else:
        unknown = [name for name in parameters if name not in known]
        if unknown and not allow_new:
            raise BundleError(unknown_parameters(unknown, known, cell_label(at)))
        for name in unknown:
            warnings.append(
                f"parameter '{name}' is not assigned in {cell_label(at)} (parameters); "
                "it is set anyway"
            )
    position = next(
        (k for k, c in enumerate(cells) if c.cell_index is not None and c.cell_index > at),
        len(cells),
    )
    return [*cells[:position], injected, *cells[position:]]


def unknown_parameters(unknown: list[str], known: set[str], where: str) -> str:
    """The refusal of parameters the notebook does not assign: the field is the first of them."""
    names = ", ".join(unknown)
    verb = "is" if len(unknown) == 1 else "are"
    assigned = ", ".join(sorted(known)) if known else "nothing"
    return (
        f"parameters.{unknown[0]}: {names} {verb} not assigned in {where} (parameters), which "
        f"assigns {assigned}; to set {'it' if len(unknown) == 1 else 'them'} anyway, submit "
        "with allow_new_parameters (trainhub submit --allow-new-parameter)"
    )
