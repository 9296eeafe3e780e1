"""roofline: where LLM decoding stops waiting on memory and starts waiting on arithmetic.

The layers, lowest first. A module imports from its own layer and the layers before it, never
from a later one (tests/test_layers.py reads this table; the README points here):

    errors, units, host, files, interrupt  errors and input checks, numbers for people, this machine,
                                           atomic writes, stopping on a signal
    model      pure arithmetic, no clock: dtypes, hardware, roofline, catalogue, LLMs, knee, regimes, guards
    measure    allocates, runs and times: pools, numpy and torch steps, timing, ceilings, sweep, overhead
    suite      the asv side: parameters, what benchmarks call, names, preflight, machine file, results,
               merging results, the gallery, the fleet's check
    report     answers for people: reports live, from results and of a GPU; compare and its page, gate, plots, specs
    bench, cli, __main__  the commands; the only code that prints (with suite.harness, to asv's stderr)
"""

__version__ = "0.1.0"
