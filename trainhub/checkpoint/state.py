"""The state a checkpoint holds and the objects it comes from: modules, optimizers and
schedulers are saved as their state dicts, and a loaded state is handed back to them
(``load_state_dict``, tensors filled in place). torch is looked for, never imported, until
something is loaded."""

from __future__ import annotations

import sys
from collections.abc import Mapping, MutableMapping
from typing import Any


def as_state(state: Any) -> Any:
    """Modules, optimizers and schedulers become their state dicts (at the top two levels)."""
    if _has_state_dict(state):
        return state.state_dict()
    if isinstance(state, Mapping):
        return {k: v.state_dict() if _has_state_dict(v) else v for k, v in state.items()}
    return state


def _has_state_dict(obj: Any) -> bool:
    return callable(getattr(obj, "state_dict", None)) and not _is_tensor(obj)


def _is_tensor(obj: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


def apply_loaded(into: Mapping[str, Any], loaded: Mapping[str, Any]) -> Mapping[str, Any]:
    """Hand loaded state dicts to the objects that own them; tensors were filled in place."""
    import torch

    for key, target in into.items():
        if key not in loaded:
            raise KeyError(f"the checkpoint holds no {key!r} (it has {sorted(loaded)})")
        value = loaded[key]
        if _has_state_dict(target) and callable(getattr(target, "load_state_dict", None)):
            target.load_state_dict(value)
        elif isinstance(target, torch.Tensor) and value is not target:
            with torch.no_grad():
                target.copy_(value)
        elif isinstance(target, dict) and value is not target:
            target.update(value)
        elif not isinstance(target, torch.Tensor | dict) and isinstance(into, MutableMapping):
            into[key] = value  # plain values (a step count, a seed) are replaced
    return into
