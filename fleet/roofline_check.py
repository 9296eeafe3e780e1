"""ReFrame check: the roofline asv suite on every system:partition, results gathered in one folder.

    reframe -C fleet/config/local.py -c fleet/roofline_check.py -r --exec-policy=serial \
        -S results_dir=/shared/roofline-results

Each job runs ``roofline bench --python-same`` (asv in the partition's own Python, torch and CUDA
included) under the asv machine name ``<system>.<partition>``, in its stage folder with its own
asv results; when the job is done, ReFrame (on the host it runs on) merges that shard into
``results_dir`` with ``roofline merge``'s rules (a conflict fails the test, nothing is lost). GPU
partitions (feature ``gpu``) run the CUDA class; CPU partitions leave it out. The performance
gate reads batch-1 GB/s, batch-512 GFLOP/s, the measured bandwidth roof and the observed
crossover (plus the CUDA class's figures on GPU partitions) against ``references.toml``.

Variables (``-S name=value``): ``results_dir``, ``bench`` (asv --bench regex; default: the whole
suite), ``references_file``, ``bw_batch`` (1), ``flops_batch`` (512), ``gpu_dtype`` (bf16),
``force`` (false: a job whose results conflict with recorded ones fails; true: its results win and
the recorded ones are kept aside).
Partition ``extras``: ``roofline_root`` (the checkout on that partition's nodes) and
``roofline_python`` (its Python with roofline installed); defaults: this checkout and the Python
running ReFrame. Sizes: the ``ROOFLINE_*`` variables ReFrame runs with are passed to every job.
See docs/fleet.md.
"""

import json
import os
import shlex
import sys
from pathlib import Path

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_after, run_before, sanity_function, variable

from roofline.errors import BadInput
from roofline.suite import reframe_jobs as jobs
from roofline.suite.merge import merge
from roofline.suite.results import read_results

ROOT = Path(__file__).resolve().parents[1]


def _load_asv_config() -> dict:
    from asv.util import load_json  # asv's reader: asv.conf.json has comments

    return load_json(str(ROOT / "asv.conf.json"), js_comments=True)


@rfm.simple_test
class RooflineSuite(rfm.RunOnlyRegressionTest):
    descr = "roofline asv suite: where LLM decoding turns from memory-bound to compute-bound"
    valid_systems = ["*"]
    # one environment, so one run (one asv machine, commit and environment) per partition;
    # -S valid_prog_environs=NAME picks a site's module environment instead
    valid_prog_environs = ["builtin"]
    sourcesdir = None
    tags = {"roofline", "benchmark"}
    exclusive_access = True  # a benchmark shares its node with nothing
    time_limit = "2h"
    keep_files = ["results", "merge.log"]

    results_dir = variable(str, value=str(ROOT / ".fleet" / "results"))
    bench = variable(str, value="")
    references_file = variable(str, value=str(Path(__file__).with_name("references.toml")))
    bw_batch = variable(int, value=1)
    flops_batch = variable(int, value=512)
    gpu_dtype = variable(str, value="bf16")
    #: on a conflict (this machine and commit already recorded with other figures: a re-run) take the
    #: job's results; the recorded ones are kept in <results_dir>.displaced-<time>/
    force = variable(bool, value=False)
    #: measure even when other processes take the CPUs (roofline bench --allow-busy: the run is flagged)
    allow_busy = variable(bool, value=False)

    @run_after("init")
    def load_references(self):
        self.reference = jobs.load_references(self.references_file)

    @property
    def machine(self) -> str:
        return jobs.machine_name(self.current_system.name, self.current_partition.name)

    @property
    def gpu(self) -> bool:
        return "gpu" in self.current_partition.features

    @run_before("run")
    def prepare_job(self):
        extras = self.current_partition.extras
        root = str(extras.get("roofline_root", ROOT))
        conf = jobs.job_asv_config(_load_asv_config(), root)
        Path(self.stagedir, "asv.conf.json").write_text(json.dumps(conf, indent=4))
        self.executable = str(extras.get("roofline_python", sys.executable))
        self.executable_opts = ["-m", "roofline", "bench", "--python-same", "--machine", self.machine]
        self.executable_opts += ["--results", "results", "--html", "html"]
        if self.allow_busy:
            self.executable_opts.append("--allow-busy")
        regex = jobs.bench_regex(self.bench or None, self.gpu)
        if regex:
            self.executable_opts += ["--bench", shlex.quote(regex)]
        # roofline bench asks git for the commit from the stage folder: point git at the checkout
        self.prerun_cmds = [f'export GIT_DIR="$(git -C {shlex.quote(root)} rev-parse --absolute-git-dir)"']
        self.env_vars.update({k: v for k, v in os.environ.items() if k.startswith("ROOFLINE_")})

    @run_after("run")
    def stage_results(self):
        """Merge this job's shard into the shared results folder (here, where ReFrame runs)."""
        if self.is_dry_run():
            return
        shard = Path(self.stagedir, "results")
        log = Path(self.stagedir, "merge.log")
        if not (shard / "benchmarks.json").is_file():
            log.write_text(f"no results in {shard}: nothing merged\n")
            return
        Path(self.results_dir).parent.mkdir(parents=True, exist_ok=True)
        try:
            plan = merge([shard], self.results_dir, force=self.force)
        except BadInput as exc:
            log.write_text(f"merge failed: {exc}\n")
            self._merge_error = str(exc)
            return
        log.write_text("\n".join([*plan.summary(), *(f"warning: {w}" for w in plan.warnings)]) + "\n")

    _merge_error = None

    def _figures(self) -> list:
        results = read_results(Path(self.stagedir, "results"))
        return jobs.fleet_figures(results, self.machine, self.gpu, self.bw_batch, self.flops_batch, self.gpu_dtype)

    @sanity_function
    def suite_ran_and_merged(self):
        checks = [  # the first that fails is the reason ReFrame gives
            sn.assert_true(
                self._merge_error is None,
                msg=f"merging into {self.results_dir}: {self._merge_error} (a re-run of this commit? -S force=true)",
            ),
            sn.assert_eq(self.job.exitcode, 0, msg="roofline bench exited {0} (see the job output)"),
            sn.assert_found(r"roofline: HTML in", self.stdout, msg="asv publish did not finish in the job"),
        ]
        if self.is_dry_run():
            return sn.all(checks)
        if self._merge_error is None and Path(self.stagedir, "results", "benchmarks.json").is_file():
            for fig in self._figures():
                if fig.ran:
                    checks.append(sn.assert_true(fig.value is not None, msg=f"{fig.name}: {fig.source} {fig.note}"))
        return sn.all(checks)

    @run_before("performance")
    def set_perf_variables(self):
        """One performance variable per figure whose benchmark ran (the bench regex may leave some out)."""
        if self.is_dry_run():
            return
        self.perf_variables = {
            fig.name: sn.make_performance_function(lambda v=fig.value: v, fig.unit)
            for fig in self._figures()
            if fig.ran and fig.value is not None
        }
