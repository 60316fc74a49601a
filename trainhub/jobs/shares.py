"""A fraction of one GPU, as sessions and jobs ask for it: ``"1/4"`` is one of four shares of
a GPU (a time-sliced replica, or a MIG partition), which quota and usage count as 0.25 GPU.

Pure: the text's check and the words people read; the pools that offer shares are in the
teams file (:mod:`trainhub.teams.sharing`).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

MAX_SHARES = 16  # shares of one GPU: NVIDIA's time-slicing takes more, but past 16 none is usable

# NVIDIA's device plugin, time-slicing with renameByDefault: each GPU is advertised N times
# under this name, so a pod asking for nvidia.com/gpu never gets a slice by accident.
SHARED_GPU = "nvidia.com/gpu.shared"
MIG_PREFIX = "nvidia.com/mig-"

_WORDS = {2: "½", 3: "⅓", 4: "¼", 5: "⅕", 6: "⅙", 7: "⅐", 8: "⅛", 9: "⅑", 10: "⅒"}


def parse_share(value: Any) -> Fraction:
    """``"1/4"`` -> Fraction(1, 4); anything else is a ValueError saying what a share is."""
    text = str(value).strip() if isinstance(value, str | int) else None
    numerator, slash, denominator = (text or "").partition("/")
    if (
        not slash
        or numerator.strip() != "1"
        or not denominator.strip().isdigit()
        or not 2 <= int(denominator) <= MAX_SHARES
    ):
        raise ValueError(
            f"{value!r} is not a GPU share: write 1/N, one of N shares of a GPU "
            f"(N from 2 to {MAX_SHARES})"
        )
    return Fraction(1, int(denominator))


def share_text(share: Fraction) -> str:
    return f"{share.numerator}/{share.denominator}"


def share_words(share: Fraction, strategy: str) -> str:
    """ "¼ of a GPU (time-sliced with 3 others)", as the session shows it."""
    part = _WORDS.get(share.denominator, share_text(share)) if share.numerator == 1 else None
    part = part or share_text(share)
    others = share.denominator - 1
    how = (
        f"time-sliced with {others} other{'s' if others != 1 else ''}"
        if strategy == "time-slicing"
        else "a MIG partition"
    )
    return f"{part} of a GPU ({how})"
