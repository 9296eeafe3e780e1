"""What every roofline benchmark shares: the fixed grid, one base class, and the guarded package.

**The grid** is fixed here, in code: asv files history under each benchmark's name, parameters
and code (its version hash), so benchmarks.json must never change with the environment. The
``ROOFLINE_*`` variables choose which combinations run (:mod:`roofline.suite.params`); asv records
the others as skipped (NaN). ``roofline bench`` (``make bench``) reads this literal without
importing it, to check the variables and to run only the chosen combinations.

**The package under test** may be any commit's: asv builds the commit but takes benchmarks/ from
the working tree. Its modules are imported guarded (numpy's and scipy's way): a module or function
the commit lacks raises asv-runner's ``SkipNotImplemented`` (a ``NotImplementedError``) where a
benchmark reaches for it, in ``setup`` or in the benchmark's own body, and asv records the benchmark
as skipped, never failed. So every commit of the history can be benchmarked.
"""

import importlib
import time
import types

try:  # asv skips a benchmark whose body raises this; a plain NotImplementedError only in setup
    from asv_runner.benchmarks.mark import SkipNotImplemented as Absent
except ImportError:  # asv-runner < 0.2
    Absent = NotImplementedError

try:
    from roofline.units import better
except ImportError:  # an older roofline (asv runs benchmarks/ against every commit): asv's own names
    better = None

#: The suite's parameter grid. Each variable chooses among its values; their defaults are what ran
#: before the grid was fixed (roofline.suite.params), so the recorded history keeps its graphs.
GRID = {
    "ROOFLINE_N": (256, 1024, 2048, 8192),
    "ROOFLINE_CACHE_N": (256, 1024, 2048),
    "ROOFLINE_BATCH": (1, 8, 64, 512),
    "ROOFLINE_BACKEND_N": (256, 2048),
    "ROOFLINE_BACKEND_BATCH": (1, 64),
    "ROOFLINE_GPU_N": (8192, 16384),
    "ROOFLINE_GPU_BATCH": (1, 8, 64, 128, 192, 256, 512, 4096),
    "ROOFLINE_GPU_DTYPES": ("fp32", "tf32", "bf16", "fp16", "fp8"),
    "ROOFLINE_MODEL_BATCH": (1, 8, 64),
    "ROOFLINE_ENGINE_BATCH": (1, 2, 4, 8, 16, 32, 64),
}


class _Guarded:
    """A module of the package under test, or its absence: what this commit lacks raises :data:`Absent`."""

    def __init__(self, name):
        self._name = name
        try:
            self._module, self._why = importlib.import_module(name), None
        except Exception as exc:  # an older (or broken) commit's package: its benchmarks skip
            self._module, self._why = None, f"roofline at this commit has no {name} ({type(exc).__name__}: {exc})"

    def __getattr__(self, attr):
        if self._module is None:
            raise Absent(self._why)
        try:
            return getattr(self._module, attr)
        except AttributeError:
            raise Absent(f"roofline at this commit has no {self._name}.{attr}") from None


#: What the benchmarks call (roofline.suite.harness), guarded.
suite = _Guarded("roofline.suite.harness")

try:  # in asv's forkserver, torch once for every benchmark process forked from it
    suite.preload_for_forks()
except NotImplementedError:  # a commit from before it
    pass


def measured(function, *args):
    """What a ``setup_cache`` returns: the harness's measurement, or the reason it cannot be made at
    this commit (a string: every benchmark reading it is then skipped, where raising would fail them)."""
    try:
        return getattr(suite, function)(*args)
    except NotImplementedError as exc:
        return str(exc)


class Benchmark:
    """asv's settings for the suite.

    A generous timeout (the DRAM pools are large). The ``time_`` twins take their samples in three
    asv rounds, as the run times its decode points in passes (roofline.suite.run.PASSES): asv runs every twin once
    per round, the rounds one after another, so a twin's samples come from three moments of the run
    and a slow minute of a shared machine moves a third of them, not the median. Each round takes 10
    to 20 samples within 10 s after a short warm-up (fewer made ``asv continuous -a rounds=2`` miss a
    2× slowdown's significance), each of back-to-back steps lasting ≥ 0.1 s and no fewer than the
    run's own measurement timed per sample (:meth:`steps_back_to_back`); ``track_`` benchmarks read
    the run's measurement and ignore these.
    """

    timeout = 600
    rounds = 3
    repeat = (10, 20, 10.0)
    warmup_time = 0.05
    #: False for figures with no better way (the run's conditions): their names say no direction
    directional = True

    def __init_subclass__(cls, **kwargs):
        """Name each ``track_`` with a direction in asv's HTML: asv reads every number as lower-is-better.

        asv shows ``pretty_name`` in its page; "[GFLOP/s, higher is better]" says which way a graph
        reads. An inherited track gets its own copy of the function first (same code, so the same
        asv version hash), so that the name says its own class.
        """
        super().__init_subclass__(**kwargs)
        for name in dir(cls):
            fn = getattr(cls, name)
            way = better(getattr(fn, "unit", "")) if better and cls.directional and name.startswith("track_") else None
            if way is None:
                continue
            if name not in vars(cls):
                own = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
                own.__dict__.update(fn.__dict__)
                own.__qualname__, own.__module__, own.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
                setattr(cls, name, own)
                fn = own
            fn.pretty_name = f"{cls.__name__}.{name} [{fn.unit}, {way} is better]"

    def steps_back_to_back(self, twin, calls):
        """asv's timing for a ``time_`` twin: one call of ``twin`` runs its steps back to back, timed by its
        clock (seconds ÷ steps), so asv records seconds per step. asv-runner re-runs ``setup`` before every
        call when ``number`` > 1, which would time each step alone after setup's work. An older package's
        twin (one step a call, no clock) gets asv's ``number`` instead."""
        clock = getattr(twin, "clock", None)
        self.number, self.timer = (1, clock) if clock is not None else (calls, time.perf_counter)


class Measured(Benchmark):
    """Benchmarks that read this run's one measurement (roofline.suite.run): ceilings once, each
    decode point once, the sweep, and how quiet the machine was. The setup_cache below is the same
    function in every subclass, so asv keys them alike and measures once per run for all of them."""

    def setup_cache(self):
        return measured("measure_run", GRID)

    setup_cache.timeout = 3600
