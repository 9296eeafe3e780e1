"""What every roofline benchmark shares: one base class (scipy's and xarray's pattern).

asv files history under a benchmark's name, parameters and code (its version hash), so the classes
keep all three: their bodies still call the harness by the names they always used (``suite``,
``suite_backends``), which are part of that code. tests/golden/benchmarks.json holds them.
"""

import types

try:
    from roofline.units import better
except ImportError:  # an older roofline (asv runs benchmarks/ against every commit): asv's own names
    better = None


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

    def __init_subclass__(cls, **kwargs):
        """Name each ``track_`` with a direction in asv's HTML: asv reads every number as lower-is-better.

        asv shows ``pretty_name`` in its page; "[GFLOP/s, higher is better]" says which way a graph
        reads. An inherited track gets its own copy of the function first (same code, so the same
        asv version hash), so that the name says its own class.
        """
        super().__init_subclass__(**kwargs)
        for name in dir(cls):
            fn = getattr(cls, name)
            way = better(getattr(fn, "unit", "")) if better and name.startswith("track_") else None
            if way is None:
                continue
            if name not in vars(cls):
                own = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
                own.__dict__.update(fn.__dict__)
                own.__qualname__, own.__module__, own.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
                setattr(cls, name, own)
                fn = own
            fn.pretty_name = f"{cls.__name__}.{name} [{fn.unit}, {way} is better]"
