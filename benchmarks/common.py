"""What every roofline benchmark shares: one base class (scipy's and xarray's pattern).

asv files history under a benchmark's name, parameters and code (its version hash), so the classes
keep all three: their bodies still call the harness by the names they always used (``suite``,
``suite_backends``), which are part of that code. tests/golden/benchmarks.json holds them.
"""


class Benchmark:
    """asv's settings for the suite.

    A generous timeout (the DRAM pools are large); for the ``time_`` twins one round in one
    process, where asv calibrates calls per sample and takes 3 to 10 samples within 10 s after a
    short warm-up (``track_`` benchmarks time themselves and ignore these).
    """

    timeout = 600
    rounds = 1
    repeat = (3, 10, 10.0)
    warmup_time = 0.05
