"""The compiled bodies of :mod:`roofline.measure.kernels` (imports numba: import it through there).

Defined at module level so numba caches the machine code beside this file between processes.
"""

import numba

_jit = numba.njit(nogil=True, fastmath=True, cache=True, boundscheck=False)


@_jit
def load(a, reps):  # pragma: no cover - compiled
    """reps · sum(a): each pass reads a once; the sum carries over, so no pass can be skipped."""
    s = 0.0
    for _ in range(reps):
        for i in range(a.size):
            s += a[i]
    return s


@_jit
def update(a, reps, s):  # pragma: no cover - compiled
    """a ← s^reps · a, one read and one write per element per pass; ``s`` is only known at run time."""
    for _ in range(reps):
        for i in range(a.size):
            a[i] = s * a[i]
    return 0.0
