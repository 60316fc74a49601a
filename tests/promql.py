"""The metric names a Grafana dashboard's PromQL queries read, and those a scrape holds: the
dashboard in hub_config/ may name only metrics the exporters really emit."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

DASHBOARD = (
    Path(__file__).resolve().parents[1] / "charts" / "trainhub" / "files" / "grafana-dashboard.json"
)
# PromQL's aggregation operators, functions and keywords: never metric names.
_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset"}
_KEYWORDS |= {"and", "or", "unless", "inf", "nan"}
_IDENT = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")


def metric_names(expr: str) -> set[str]:
    """The metric names in one PromQL expression: identifiers that are neither a function or
    aggregation (followed by '('), nor a keyword, nor a label inside {...}, by (...) and the
    like, nor in a range [...] or a string."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    names = set()
    for m in _IDENT.finditer(e):
        if m.start() > 0 and (e[m.start() - 1].isdigit() or e[m.start() - 1] == "."):
            continue  # the exponent or suffix of a number
        if e[m.end() :].lstrip().startswith("(") or m.group(0).lower() in _KEYWORDS:
            continue
        names.add(m.group(0))
    return names


def dashboard_queries(path: Path = DASHBOARD) -> list[str]:
    def walk(node: Any) -> list[str]:
        if isinstance(node, dict):
            found = [node["expr"]] if isinstance(node.get("expr"), str) else []
            return found + [q for v in node.values() for q in walk(v)]
        if isinstance(node, list):
            return [q for v in node for q in walk(v)]
        return []

    return walk(json.loads(path.read_text()))


def scraped_names(text: str) -> set[str]:
    """Every sample name in a scrape (``x_total``, ``x_bucket``, ``x_sum``, ``x_count``...)."""
    return {s.name for fam in text_string_to_metric_families(text) for s in fam.samples}


def samples(text: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """Values of the samples called ``name``, by their sorted labels."""
    return {
        tuple(sorted(s.labels.items())): s.value
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
        if s.name == name
    }
