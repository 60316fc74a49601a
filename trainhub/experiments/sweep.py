"""Parameter sweeps as pure functions: the search space, its sampling, and the command-line
syntax of a dimension.

A dimension is a list of values, a range (``start``/``stop``/``step``, linear or log) or a
distribution (uniform, log-uniform, choice). The grid sampler walks the product of the lists
and ranges in order; the random sampler draws each trial from its own generator seeded by the
sweep's seed and the trial's number, so trial ``n`` has the same values however often and in
whatever order the trials are drawn.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, ValidationError, field_validator, model_validator

from trainhub.jobs.spec import JobSpec, SpecError, explain, field_error
from trainhub.jobs.specparts import Model

MAX_TRIALS = 1000
MAX_GRID_VALUES = 1000  # values of one list or range
_LINEAR_TOLERANCE = 1e-9  # a stop reached within rounding is reached


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not _finite(value):
        raise ValueError(f"{_shown(value)} is not a finite number")
    return value


def _finite(value: float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # a JSON integer too large for a float
        return False


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 24 else f"{text[:20]}... ({len(text)} characters)"


Number = Annotated[float | int, Field(union_mode="left_to_right")]


class _OneOf(Model):
    """One of the values given: each in turn on a grid, one drawn with equal chance."""

    kind: str  # each dimension's own Literal; declared here so that it stays the first field
    values: list[Any] = Field(min_length=1, max_length=MAX_GRID_VALUES)

    def grid(self) -> list[Any]:
        return list(self.values)

    def draw(self, rng: random.Random) -> Any:
        return rng.choice(self.values)


class Values(_OneOf):
    """One of these values (a list)."""

    kind: Literal["list"] = "list"


class Range(Model):
    """``start``, ``start + step``, ... up to ``stop`` included (``scale: log``: ``start``,
    ``start * step``, ...). Whole numbers stay whole in a linear range."""

    kind: Literal["range"] = "range"
    start: Number
    stop: Number
    step: Number
    scale: Literal["linear", "log"] = "linear"

    @model_validator(mode="after")
    def _finite_steps(self) -> Range:
        for name in ("start", "stop", "step"):
            try:
                _number(getattr(self, name))
            except ValueError as e:
                raise ValueError(f"{name}: {e}") from None
        if self.scale == "linear":
            if self.step <= 0:
                raise ValueError("step must be more than 0")
            if self.stop < self.start:
                raise ValueError("stop must be at least start")
            try:
                steps = (self.stop - self.start) / self.step
            except OverflowError:  # whole numbers whose quotient is past a float
                steps = math.inf
        else:
            if self.start <= 0 or self.stop <= 0:
                raise ValueError("a log range needs start and stop above 0")
            if self.step <= 1:
                raise ValueError("step of a log range is a factor, more than 1")
            if self.stop < self.start:
                raise ValueError("stop must be at least start")
            steps = (math.log(self.stop) - math.log(self.start)) / math.log(self.step)
        # Finite bounds can still make the span (or its ratio to the step) overflow a float.
        if not math.isfinite(steps) or steps >= MAX_GRID_VALUES:
            raise ValueError(f"gives more than {MAX_GRID_VALUES} values; at most {MAX_GRID_VALUES}")
        count = math.floor(steps + _LINEAR_TOLERANCE) + 1
        if count > MAX_GRID_VALUES:
            raise ValueError(f"gives {count} values; at most {MAX_GRID_VALUES}")
        return self

    def grid(self) -> list[Any]:
        whole = all(isinstance(v, int) for v in (self.start, self.stop, self.step))
        out: list[Any] = []
        i, value = 0, self.start
        while True:
            if self.scale == "linear":
                value = self.start + i * self.step
                if value > self.stop + _LINEAR_TOLERANCE * max(1.0, abs(self.stop)):
                    break
            elif value > self.stop * (1 + _LINEAR_TOLERANCE):
                break
            out.append(int(value) if whole else _tidy(value))
            i += 1
            if self.scale == "log":  # a product, not step**i, which overflows first
                value *= self.step
        return out

    def draw(self, rng: random.Random) -> Any:
        return rng.choice(self.grid())


class Uniform(Model):
    """A number drawn uniformly from [low, high] (``log``: its logarithm is uniform)."""

    kind: Literal["uniform", "loguniform"] = "uniform"
    low: Number
    high: Number

    @model_validator(mode="after")
    def _bounds(self) -> Uniform:
        for name in ("low", "high"):
            try:
                _number(getattr(self, name))
            except ValueError as e:
                raise ValueError(f"{name}: {e}") from None
        if self.high <= self.low:
            raise ValueError("high must be more than low")
        if self.kind == "loguniform" and self.low <= 0:
            raise ValueError("low of a log-uniform distribution must be above 0")
        if not math.isfinite(float(self.high) - float(self.low)):
            # Each draw would be infinite: refused now, not trial by trial.
            raise ValueError("high - low is past the largest number a trial can take")
        return self

    def draw(self, rng: random.Random) -> float:
        if self.kind == "loguniform":
            return _tidy(math.exp(rng.uniform(math.log(self.low), math.log(self.high))))
        return _tidy(rng.uniform(self.low, self.high))


class Choice(_OneOf):
    """One of these values, drawn with equal chance (on a grid: each in turn, like a list)."""

    kind: Literal["choice"] = "choice"


def _dimension_kind(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("kind", "list"))
    return getattr(value, "kind", "list")


Dimension = Annotated[
    Annotated[Values, Tag("list")]
    | Annotated[Range, Tag("range")]
    | Annotated[Uniform, Tag("uniform")]
    | Annotated[Uniform, Tag("loguniform")]
    | Annotated[Choice, Tag("choice")],
    Discriminator(_dimension_kind),
]


def _tidy(value: float) -> float:
    """12 significant digits: 0.1 * 3 is shown (and given to the notebook) as 0.3."""
    return float(f"{value:.12g}")


class EarlyStop(Model):
    """Stop lagging trials on ``metric`` (a scalar the notebook logs with ``trainhub.log``).

    ``median``: a trial whose best value so far is worse than the median of the other
    trials' best values up to the same step. ``halving`` (successive halving): at steps
    ``min_steps * eta**k`` only the best ``1/eta`` of the trials that reached that step go on.
    """

    rule: Literal["median", "halving"]
    metric: str = Field(min_length=1, max_length=200)
    mode: Literal["min", "max"] = "min"
    min_steps: int = Field(1, ge=1, le=10**9, description="Steps before any trial is judged")
    min_trials: int = Field(
        2, ge=1, le=MAX_TRIALS, description="median: other trials needed to compare with"
    )
    eta: int = Field(3, ge=2, le=100, description="halving: keep 1 in eta at each rung")


class SweepSpec(Model):
    """The space and the rules of a sweep; the job it varies is sent beside it."""

    space: dict[str, Dimension] = Field(min_length=1, max_length=50)
    sampler: Literal["grid", "random"] = "grid"
    trials: int | None = Field(
        None, ge=1, le=MAX_TRIALS, description="grid: default every combination; random: 10"
    )
    max_running: int = Field(2, ge=1, le=100, description="Trials active at once, at most")
    seed: int | None = Field(None, ge=0, le=2**63 - 1, description="random: default chosen once")
    early_stop: EarlyStop | None = None
    metric: str | None = Field(
        None, min_length=1, max_length=200, description="Ranks the trials; default early_stop's"
    )
    mode: Literal["min", "max"] = "min"

    @field_validator("space")
    @classmethod
    def _identifiers(cls, v: dict[str, Any]) -> dict[str, Any]:
        for key in v:
            if not key.isidentifier():
                raise ValueError(f"{key!r} is not a Python identifier; a parameter is a variable")
        return v

    @model_validator(mode="after")
    def _sampler_fits(self) -> SweepSpec:
        if self.sampler == "grid":
            drawn = [k for k, d in self.space.items() if isinstance(d, Uniform)]
            if drawn:
                raise ValueError(
                    f"{', '.join(drawn)}: a distribution is drawn, not walked; use --sampler "
                    "random, or give a list or a range"
                )
            size = grid_size(self)
            if self.trials is not None and self.trials > size:
                raise ValueError(
                    f"trials: the grid has {size} combination(s), fewer than {self.trials}"
                )
            if size > MAX_TRIALS and self.trials is None:
                raise ValueError(
                    f"the grid has {size} combinations; give trials (at most {MAX_TRIALS})"
                )
        return self

    def trial_count(self) -> int:
        if self.trials is not None:
            return self.trials
        return grid_size(self) if self.sampler == "grid" else 10


class CreateSweep(Model):
    """A sweep to start: the job each trial runs, varied by ``sweep.space``."""

    job: JobSpec
    sweep: SweepSpec

    @model_validator(mode="after")
    def _not_a_trial(self) -> CreateSweep:
        if self.job.sweep is not None:
            raise ValueError("job.sweep: a sweep's job is not a trial yet; leave it out")
        return self


def grid_size(sweep: SweepSpec) -> int:
    return math.prod(len(d.grid()) for d in sweep.space.values() if not isinstance(d, Uniform))


def trial_parameters(sweep: SweepSpec, trial: int, seed: int) -> dict[str, Any]:
    """The parameters of trial number ``trial`` (from 0): pure and reproducible."""
    if sweep.sampler == "grid":
        names = list(sweep.space)
        grids = [sweep.space[n].grid() for n in names]  # type: ignore[union-attr]
        combo = next(itertools.islice(itertools.product(*grids), trial, None))
        return dict(zip(names, combo, strict=True))
    rng = random.Random(f"{seed}:{trial}")  # str seeds hash the same in every process
    return {name: sweep.space[name].draw(rng) for name in sorted(sweep.space)}


def parse_sweep(data: dict[str, Any]) -> CreateSweep:
    """Validate a sweep request, raising :class:`SpecError` naming each bad field."""
    try:
        return CreateSweep.model_validate(data)
    except ValidationError as e:
        raise explain(e) from None


# --- the command line ---------------------------------------------------------------------
DIMENSION_SYNTAX = (
    "name=VALUE, name=[a,b,c], name=range:START:STOP:STEP, name=logrange:START:STOP:FACTOR, "
    "name=uniform:LOW:HIGH, name=loguniform:LOW:HIGH or name=choice:a,b,c"
)


def _scalar(text: str) -> Any:
    """JSON when it reads as JSON (3, 0.1, true, "x"), else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _numbers(field: str, parts: list[str], names: tuple[str, ...]) -> dict[str, Any]:
    if len(parts) != len(names):
        raise field_error(field, f"give {':'.join(n.upper() for n in names)}")
    out = {}
    for name, part in zip(names, parts, strict=True):
        value = _scalar(part)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise field_error(field, f"{name} {part!r} is not a number")
        out[name] = value
    return out


def parse_parameter(text: str) -> tuple[str, Any, bool]:
    """``name=...`` of ``trainhub sweep -p`` -> (name, dimension or value, whether swept).

    ``lr=loguniform:1e-4:1e-1``, ``batch=[32,64]``, ``epochs=3`` (the same in every trial).
    """
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise field_error("parameters", f"{text!r}: write {DIMENSION_SYNTAX}")
    field = f"parameters.{name}"
    value = value.strip()
    head, colon, rest = value.partition(":")
    kind = head.strip().lower()
    if value.startswith("[") and value.endswith("]"):
        try:
            values = json.loads(value)
        except ValueError:
            values = [_scalar(v.strip()) for v in value[1:-1].split(",") if v.strip()]
        return name, {"kind": "list", "values": values}, True
    if colon and kind in ("range", "logrange"):
        numbers = _numbers(field, rest.split(":"), ("start", "stop", "step"))
        scale = "log" if kind == "logrange" else "linear"
        return name, {"kind": "range", "scale": scale, **numbers}, True
    if colon and kind in ("uniform", "loguniform"):
        return name, {"kind": kind, **_numbers(field, rest.split(":"), ("low", "high"))}, True
    if colon and kind == "choice":
        values = [_scalar(v.strip()) for v in rest.split(",") if v.strip()]
        return name, {"kind": "choice", "values": values}, True
    return name, _scalar(value), False


def parse_early_stop(text: str) -> dict[str, Any]:
    """``RULE:METRIC[:min|max[:MIN_STEPS]]`` -> an :class:`EarlyStop` request.

    ``median:loss:min``, ``halving:accuracy:max:10``.
    """
    parts = [p.strip() for p in text.split(":")]
    if len(parts) < 2 or len(parts) > 4 or not all(parts):
        raise field_error("early_stop", f"{text!r}: write RULE:METRIC[:min|max[:MIN_STEPS]]")
    out: dict[str, Any] = {"rule": parts[0], "metric": parts[1]}
    if len(parts) > 2:
        out["mode"] = parts[2]
    if len(parts) > 3:
        if not parts[3].isdigit():
            raise field_error("early_stop.min_steps", f"{parts[3]!r} is not a whole number")
        out["min_steps"] = int(parts[3])
    return out


__all__ = [
    "Choice",
    "CreateSweep",
    "EarlyStop",
    "Range",
    "SpecError",
    "SweepSpec",
    "Uniform",
    "Values",
    "grid_size",
    "parse_early_stop",
    "parse_parameter",
    "parse_sweep",
    "trial_parameters",
]
