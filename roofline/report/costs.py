"""The price table of ``roofline compare --prices FILE``: what each machine costs an hour and draws.

A small TOML file, one table per machine (its results folder name), both keys optional::

    [xeon-2core-vm]
    dollars_per_hour = 0.096   # what an hour of it costs (cloud list price, or your own)
    watts = 180                # what it draws under this load (the wall, a PDU, a datasheet's TDP)

Phoronix Test Suite's performance-per-dollar and per-watt views divide each result the same way.
The table is the user's: roofline never guesses a price or a power.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..errors import BadInput

#: The keys a machine's table may hold, with the unit each figure is divided by.
KEYS = {"dollars_per_hour": "$/hour", "watts": "W"}


@dataclass(frozen=True)
class Cost:
    """One machine's price an hour and power, None where the table does not say."""

    dollars_per_hour: float | None = None
    watts: float | None = None


def _number(machine: str, key: str, value: object, path: Path) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise BadInput(f"{path}: [{machine}] {key} = {value!r} is not a positive number")
    return float(value)


def read_costs(path: Path, machines: list[str]) -> tuple[dict[str, Cost], list[str]]:
    """The table at ``path`` for the ``machines`` compared, and a warning per machine it names that is not
    among them; BadInput when it cannot be read, holds an unknown key, or names none of them."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise BadInput(f"--prices {path}: cannot read it ({exc.strerror or exc})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BadInput(f"--prices {path}: not TOML ({exc})") from None
    costs: dict[str, Cost] = {}
    for name, entry in data.items():
        if not isinstance(entry, dict):
            raise BadInput(f"{path}: {name} = {entry!r}: give a table per machine ([{name}] then {', '.join(KEYS)})")
        unknown = sorted(set(entry) - set(KEYS))
        if unknown:
            raise BadInput(f"{path}: [{name}] has {unknown[0]!r}; the keys are {', '.join(KEYS)}")
        costs[name] = Cost(**{k: _number(name, k, v, path) for k, v in entry.items()})
    known = {n: c for n, c in costs.items() if n in machines}
    if not known:
        named = ", ".join(costs) or "no machine"
        raise BadInput(f"--prices {path} names {named}, none of the machines compared ({', '.join(machines)})")
    warnings = [f"--prices {path}: {n} is not among the machines compared; ignored" for n in costs if n not in known]
    return known, warnings
