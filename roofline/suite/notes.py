"""Why a benchmark recorded no figure, from the process that knew, to the report of the same run.

asv records a skipped combination as NaN and a failed one as null: the reason reaches asv's output only,
and a report built from the results could only guess ("not chosen, or skipped, or failed"). So where
``roofline bench`` names a file in :data:`NOTES_VARIABLE`, the processes of its asv run append one JSON
line per combination that has no figure: the setup_caches of the model and engine classes (their grid's
skipped and failed outcomes, with the reason each carries) and asv's plugin (a class it left out, with
its line). ``roofline bench`` reads them back (:func:`read_notes`) for the report it prints. Without the
variable nothing is written: a plain ``asv run`` is unchanged.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..outcome import Failed, Outcome

#: The file the processes of ``roofline bench``'s asv run note reasons in (JSON lines; appended).
NOTES_VARIABLE = "ROOFLINE_NOTES"


@dataclass(frozen=True)
class Note:
    """Why ``benchmark_class`` at ``params`` (a combination; empty: every one) recorded no figure.

    ``kind``: "not chosen" (a variable), "skipped" (something this run lacks) or "failed" (an error).
    """

    benchmark_class: str
    params: tuple[object, ...]
    kind: str
    reason: str

    def matches(self, benchmark_class: str, params: tuple[object, ...]) -> bool:
        return self.benchmark_class == benchmark_class and (not self.params or self.params == params)

    def text(self) -> str:
        """The reason as a row says it: "failed: …", "skipped: …", or the variable's own "not chosen this run (…)"."""
        return self.reason if self.reason.startswith(self.kind) else f"{self.kind}: {self.reason}"


def notes_of(benchmark_class: str, grid: Mapping[object, Outcome]) -> list[Note]:
    """A note for each combination of a setup_cache's grid that has no figure: failed, or skipped, or a skip
    that a variable chose ("not chosen this run (...)"). A key that is not a tuple is a one-parameter one."""
    notes = []
    for key, outcome in grid.items():
        if outcome.ok:
            continue
        params = key if isinstance(key, tuple) else (key,)
        if isinstance(outcome, Failed):
            kind = "failed"
        else:
            kind = "not chosen" if outcome.reason.startswith("not chosen") else "skipped"
        notes.append(Note(benchmark_class, params, kind, outcome.reason))
    return notes


def write_notes(notes: list[Note], environ: Mapping[str, str] = os.environ) -> None:
    """Append ``notes`` to the file :data:`NOTES_VARIABLE` names (nothing where it is unset or unwritable)."""
    path = environ.get(NOTES_VARIABLE)
    if not path or not notes:
        return
    lines = "".join(
        json.dumps({"class": n.benchmark_class, "params": list(n.params), "kind": n.kind, "reason": n.reason}) + "\n"
        for n in notes
    )
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(lines)
    except OSError:
        pass


def read_notes(path: Path) -> tuple[Note, ...]:
    """The notes in ``path`` (none where it is missing; unreadable lines are skipped)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError:
        return ()
    notes = []
    for line in text.splitlines():
        try:
            d = json.loads(line)
            notes.append(Note(str(d["class"]), tuple(d["params"]), str(d["kind"]), str(d["reason"])))
        except (ValueError, KeyError, TypeError):
            continue
    return tuple(notes)


def reason_for(notes: tuple[Note, ...], benchmark_class: str, params: tuple[object, ...]) -> str | None:
    """The last note about ``benchmark_class`` at ``params`` (a combination's own before its class's)."""
    own = [n for n in notes if n.benchmark_class == benchmark_class and n.params == params]
    whole = [n for n in notes if n.matches(benchmark_class, params)]
    found = own or whole
    return found[-1].text() if found else None
