"""The values a notebook's ``parameters`` cell assigns, for prefilling the submit dialog."""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path
from typing import Any

from trainhub.bundle.cells import PARAMETERS_TAG, read_notebook
from trainhub.jobs.spec import FieldError, SpecError


def _json_value(value: Any) -> bool:
    """True when ``value`` survives a JSON round trip unchanged (so a resubmit keeps its type)."""
    if isinstance(value, float) and not math.isfinite(value):
        return False
    try:
        again = json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError):
        return False
    return type(again) is type(value) and again == value


def cell_parameters(source: str) -> tuple[dict[str, Any], list[str], dict[str, str]]:
    """``name -> value`` for each top-level ``name = <expression>`` of a cell.

    Literals that JSON keeps exactly come back as values; anything else (tuples, calls,
    expressions) as its source text, whose names are listed second. Third, every value's
    source text as the cell writes it: ``0.0`` stays a float where JSON's reader (a
    browser's) makes it 0.
    """
    from IPython.core.inputtransformer2 import TransformerManager

    python = TransformerManager().transform_cell(source)  # magics become plain calls
    try:
        tree = ast.parse(python)
    except SyntaxError as e:
        raise ValueError(f"the parameters cell does not parse: {e.msg} (line {e.lineno})") from None
    values: dict[str, Any] = {}
    literal: dict[str, bool] = {}
    texts: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value_node = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value_node = node.target, node.value
        else:
            continue
        if not isinstance(target, ast.Name):
            continue
        text = ast.get_source_segment(python, value_node) or ast.unparse(value_node)
        try:
            value = ast.literal_eval(value_node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            value, exact = text, False
        else:
            exact = _json_value(value)
        values[target.id] = value if exact else text
        literal[target.id] = exact
        texts[target.id] = text
    return values, [name for name, exact in literal.items() if not exact], texts


def notebook_parameters(root: Path, relative: str) -> dict[str, Any]:
    """``{parameters, cell_index, source_text, texts}`` for the notebook at ``relative``
    under ``root``."""
    if not relative:
        raise SpecError([FieldError(field="path", message="name the notebook")])
    root = root.resolve()
    path = (root / relative).resolve()
    if not path.is_relative_to(root):
        raise SpecError([FieldError(field="path", message=f"{relative} is outside the workspace")])
    if path.suffix != ".ipynb":
        raise SpecError(
            [FieldError(field="path", message=f"{relative} is not a notebook (.ipynb)")]
        )
    if not path.is_file():
        raise FileNotFoundError(f"no such notebook: {relative}")
    notebook = read_notebook(path)
    for index, cell in enumerate(notebook.cells):
        tags = cell.get("metadata", {}).get("tags", []) or []
        if cell.get("cell_type") == "code" and PARAMETERS_TAG in tags:
            source = cell.get("source", "")
            source = "".join(source) if isinstance(source, list) else str(source)
            values, as_source, texts = cell_parameters(source)
            return {
                "parameters": values,
                "cell_index": index,
                "source_text": as_source,
                "texts": texts,
            }
    return {"parameters": {}, "cell_index": None, "source_text": [], "texts": {}}
