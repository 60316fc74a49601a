"""Printing benchmark rows as a table (and as markdown for benchmarks/RESULTS.md)."""

from __future__ import annotations


def print_table(title: str, rows: list[dict]) -> str:
    columns: list[str] = []
    for row in rows:
        columns += [c for c in row if c not in columns]
    widths = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in columns}
    lines = [
        f"## {title}",
        "",
        "| " + " | ".join(c.ljust(widths[c]) for c in columns) + " |",
        "|" + "|".join("-" * (widths[c] + 2) for c in columns) + "|",
    ]
    for row in rows:
        lines.append(
            "| " + " | ".join(str(row.get(c, "")).ljust(widths[c]) for c in columns) + " |"
        )
    text = "\n".join(lines)
    print(text, flush=True)
    return text
