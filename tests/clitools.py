"""The shape every CLI error must have: one line, one prefix, no traceback."""

from __future__ import annotations

import re

#: "roofline: error: ..." or, for a subcommand's usage error, "roofline decode: error: ...".
ONE_LINE_ERROR = re.compile(r"roofline(?: [a-z]+)?: error: (?P<message>[^\n]+)\n")


def one_line_error(err: str) -> str:
    """Assert ``err`` is one well-formed error line; return its message."""
    m = ONE_LINE_ERROR.fullmatch(err)
    assert m, f"not one error line with one prefix: {err!r}"
    assert "error: roofline" not in err, f"doubled prefix: {err!r}"
    return m.group("message")


#: The gallery machine (examples/results) recorded at the current suite: the one the report tests read
#: (a machine recorded at an older suite shows fewer figures; several machines need --machine).
EXAMPLE_MACHINE = "epyc-zen4-2core-32mib-l3"
