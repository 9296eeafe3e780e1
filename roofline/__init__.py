"""roofline: where LLM decoding stops waiting on memory and starts waiting on arithmetic.

The layers, lowest first. A module imports from its own layer and the layers before it, never
from a later one (tests/test_layers.py reads this table; the README points here):

    errors, outcome, units, host, files, interrupt  errors and input checks, a part's outcome, numbers for
                                                    people, this machine, atomic writes, stopping on a signal
    model      pure, no clock: dtypes, hardware, arithmetic (the roofline formula), catalogue, llm, llm_estimate,
               knee, regimes, guards, intervals, plateaus, hierarchy, conditions, microarch (the cores' limits)
    measure    allocates, runs and times: pools, numpy and torch steps, timing, ceilings, sweep, overhead,
               levels, compute, likwid (the referee), cuda ceilings, a real model decoded
    suite      the asv side: params, harness (what benchmarks call), run (and measure_roofs, the one way this
               machine's roofs are measured), gpu (a GPU's run), live (the live report's run), names,
               preflight, machine file, asv files (the one reader and writer of asv's results folder), results,
               merge, gallery, reframe_jobs (what the fleet's ReFrame jobs need), offline HTML
    report     answers for people, rendered from typed results: cpu (the report), from_run, from_results, summary
               (one machine's run), gpu, compare (costs, its page), gate, plot, page, llm_estimate, specs
    asv_driver, bench, regress, publish, asv_plugin, cli, __main__  the commands (cli: a module per command), the
                                                                   asv driver bench and regress share, and asv's
                                                                   plugin; the only code that prints (with
                                                                   suite.harness, to asv's stderr)
"""

__version__ = "0.1.0"
