"""A pipeline as a graph: which step waits for which, the mistakes of its wiring, the order
its steps can run in. Pure; the cycle is found by the standard library's ``graphlib``.
"""

from __future__ import annotations

import graphlib
from collections.abc import Iterable, Mapping
from typing import Any

from trainhub.jobs.spec import FieldError
from trainhub.pipelines.spec import Pipeline, refused


def producer(reference: str) -> tuple[str, str] | None:
    """``'train.model'`` -> ``('train', 'model')``: the step and the output an input takes."""
    step, dot, output = reference.partition(".")
    return (step, output) if dot and step and output else None


def dependencies(pipeline: Pipeline) -> dict[str, set[str]]:
    """Each step's direct upstream steps: those it names in ``depends_on``, and those whose
    outputs it takes (Kubeflow Pipelines' rule: using an output waits for it). Names of steps
    that do not exist are left out (:func:`wiring_errors` names them)."""
    deps: dict[str, set[str]] = {}
    for name, step in pipeline.steps.items():
        upstream = set(step.depends_on)
        upstream.update(p[0] for ref in step.inputs.values() if (p := producer(ref)) is not None)
        deps[name] = {u for u in upstream if u in pipeline.steps}
    return deps


def wiring_errors(pipeline: Pipeline, given: Iterable[str] = ()) -> list[FieldError]:
    """Every mistake of the steps' wiring, each naming its step and field: an unknown step
    depended on, an input that names no step or an output the step does not declare, an
    unknown pipeline parameter (asked for by a step, or ``given`` to the run), a parameter set
    twice, a cycle."""
    errors: list[FieldError] = []
    steps = pipeline.steps
    for name, step in steps.items():
        at = f"steps.{name}"
        for i, dep in enumerate(step.depends_on):
            if dep == name:
                errors.append(refused(f"{at}.depends_on.{i}", "a step cannot depend on itself"))
            elif dep not in steps:
                errors.append(refused(f"{at}.depends_on.{i}", f"no step {dep!r}{_known(steps)}"))
        for input_name, ref in step.inputs.items():
            errors += _input_errors(pipeline, name, f"{at}.inputs.{input_name}", ref)
        for i, param in enumerate(step.pipeline_parameters):
            if param not in pipeline.parameters:
                errors.append(
                    refused(
                        f"{at}.pipeline_parameters.{i}",
                        f"the pipeline has no parameter {param!r}{_known(pipeline.parameters)}",
                    )
                )
            elif param in step.parameters:
                errors.append(
                    refused(
                        f"{at}.parameters.{param}",
                        "also given as a pipeline parameter; set it in one place",
                    )
                )
    for param in given:
        if param not in pipeline.parameters:
            errors.append(
                refused(
                    f"parameters.{param}",
                    f"the pipeline has no parameter {param!r}{_known(pipeline.parameters)}",
                )
            )
    errors += _cycle_errors(pipeline)
    return errors


def _input_errors(pipeline: Pipeline, step: str, at: str, ref: str) -> list[FieldError]:
    found = producer(ref)
    if found is None:
        return [refused(at, f"{ref!r} is not '<step>.<output>'")]
    source, output = found
    if source == step:
        return [refused(at, "a step cannot take its own output")]
    if source not in pipeline.steps:
        return [refused(at, f"no step {source!r}{_known(pipeline.steps)}")]
    declared = pipeline.steps[source].outputs
    if output not in declared:
        has = f"; it declares {', '.join(declared)}" if declared else "; it declares no outputs"
        return [refused(at, f"step {source!r} has no output {output!r}{has}")]
    return []


def _cycle_errors(pipeline: Pipeline) -> list[FieldError]:
    try:
        order(pipeline)
    except graphlib.CycleError as e:
        cycle = e.args[1]  # [a, b, ..., a]
        path = " -> ".join(reversed(cycle))
        return [refused(f"steps.{cycle[0]}.depends_on", f"a cycle: {path}")]
    return []


def order(pipeline: Pipeline) -> list[str]:
    """The steps in an order they can run in (each after its upstream steps), ties in the
    file's order; ``graphlib.CycleError`` where there is none."""
    deps = dependencies(pipeline)
    sorter = graphlib.TopologicalSorter({name: sorted(deps[name]) for name in pipeline.steps})
    position = {name: i for i, name in enumerate(pipeline.steps)}
    sorter.prepare()
    result: list[str] = []
    while sorter.is_active():
        ready = sorted(sorter.get_ready(), key=position.__getitem__)
        result += ready
        sorter.done(*ready)
    return result


def downstream(deps: Mapping[str, set[str]], step: str) -> set[str]:
    """Every step that waits, directly or not, for ``step``."""
    below: set[str] = set()
    frontier = [step]
    while frontier:
        current = frontier.pop()
        for name, ups in deps.items():
            if current in ups and name not in below:
                below.add(name)
                frontier.append(name)
    return below


def _known(names: Mapping[str, Any]) -> str:
    return f" (it has {', '.join(names)})" if names else ""
