"""The compiled bodies of :mod:`roofline.measure.kernels` (imports numba: import it through there).

Defined at module level so numba caches the machine code beside this file between processes.
"""

import numba

_jit = numba.njit(nogil=True, fastmath=True, cache=True, boundscheck=False)

@_jit
def load(a, reps):  # pragma: no cover - compiled
    """reps · sum(a): each pass reads a once; the sum carries over, so no pass can be skipped.

    Four quarters (kernels.PARTS) are summed side by side: LLVM vectorises each with its own vector accumulators (16 in
    flight at 512 bits, 8 at 256), enough to cover an FP add's latency at two adds per cycle. An add
    consumes each load, so the adds bound the rate: at two per cycle, 64 B a cycle per core with 256-bit
    vectors, 128 with 512-bit ones (Golden Cove's two 64-byte loads; kernels.py says how the width is
    chosen). With one sum (four accumulators) a Zen 3 read 80 GB/s per core against likwid-bench
    load_avx's 140-150: the loop waited on its adds, not on L1. A pass ends in a horizontal sum of its
    accumulators; the next pass's accumulators start at zero, so the core overlaps the two.
    """
    s = 0.0
    q = a.size // 4
    for _ in range(reps):
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        s4 = 0.0
        for i in range(q):
            s1 += a[i]
            s2 += a[q + i]
            s3 += a[2 * q + i]
            s4 += a[3 * q + i]
        s += (s1 + s2) + (s3 + s4)
        for i in range(4 * q, a.size):
            s += a[i]
    return s


@_jit
def update(a, reps, s):  # pragma: no cover - compiled
    """a ← s^reps · a, one read and one write per element per pass; ``s`` is only known at run time."""
    for _ in range(reps):
        for i in range(a.size):
            a[i] = s * a[i]
    return 0.0
