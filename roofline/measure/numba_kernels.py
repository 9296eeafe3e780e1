"""The compiled bodies of :mod:`roofline.measure.kernels` (imports numba: import it through there).

Defined at module level so numba caches the machine code beside this file between processes.
"""

import numba

_jit = numba.njit(nogil=True, fastmath=True, cache=True, boundscheck=False)


@_jit
def load(a, reps):  # pragma: no cover - compiled
    """reps · sum(a): each pass reads a once; the sum carries over, so no pass can be skipped.

    The two halves are summed side by side: LLVM vectorises each with four vector accumulators, so
    eight independent adds are in flight, enough to cover an FP add's latency at two adds per cycle.
    With one sum (four accumulators) the loop waits on its adds, not on L1: half of what L1 delivers
    (80 against likwid-bench load_avx's 140-150 GB/s per core on a Zen 3), and no step from L1 to L2.
    """
    s = 0.0
    h = a.size // 2
    for _ in range(reps):
        s1 = 0.0
        s2 = 0.0
        for i in range(h):
            s1 += a[i]
            s2 += a[h + i]
        s += s1 + s2
        for i in range(2 * h, a.size):
            s += a[i]
    return s


@_jit
def update(a, reps, s):  # pragma: no cover - compiled
    """a ← s^reps · a, one read and one write per element per pass; ``s`` is only known at run time."""
    for _ in range(reps):
        for i in range(a.size):
            a[i] = s * a[i]
    return 0.0
