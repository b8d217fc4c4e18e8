"""How close a name is to another: the typo helpers of the machine and region lookups."""
from __future__ import annotations

import re

_SEPARATORS = re.compile(r"[\s_.]+")


def normalize(name: str) -> str:
    """``N1_Standard 8`` → ``n1-standard-8``: lower case, ``_``/``.``/spaces folded to ``-``."""
    return _SEPARATORS.sub("-", name.strip().lower())


def within(a: str, b: str, limit: int) -> bool:
    """Whether ``a`` is at most ``limit`` edits from ``b``. The lengths are compared first:
    they differ by no more than the distance, so a 10 kB name costs nothing (the full
    distance over it took 29 s for the regions alone)."""
    return abs(len(a) - len(b)) <= limit and distance(a, b) <= limit


def distance(a: str, b: str) -> int:
    """Optimal-string-alignment distance (Levenshtein plus adjacent transpositions)."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cost = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cost = min(cost, prev2[j - 2] + 1)
            cur.append(cost)
        prev2, prev = prev, cur
    return prev[-1]
