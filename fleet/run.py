"""The fleet in one command (what ``make fleet`` runs): ReFrame, then the merged results published.

    python fleet/run.py [--config FILE] [--out DIR] [--bench REGEX] [--draft-references FILE] [-- REFRAME_ARGS...]

1. ReFrame runs ``fleet/roofline_check.py`` on every partition of ``--config`` (default
   ``fleet/config/local.py``: this machine as ``local:cpu`` and ``local:cpu1``), one job after
   the other; each job's results are merged into ``OUT/results`` as it finishes;
2. ``asv publish`` builds ``OUT/html`` from the merged results;
3. ``roofline compare OUT/results`` tables the machines;
4. ReFrame's performance gate (its lines from step 1) is printed again at the end;
5. with ``--draft-references FILE``, the figures each machine measured are written to FILE in
   ``references.toml``'s format, to review and then gate on (``-- -S references_file=FILE``).

Exit status: ReFrame's (non-zero when a check or the performance gate failed), else asv's or
compare's. Sizes come from the ``ROOFLINE_*`` variables, as for ``make bench``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECK = ROOT / "fleet" / "roofline_check.py"
#: The benchmarks behind the gate's figures (and the GEMM peak, for compare's ridge point).
DEFAULT_BENCH = r"DecodeDRAM\.track_|MemoryBandwidth|GemmPeak|track_observed_crossover"
#: ReFrame's lines that make up its verdict: test results, performance values, the summary.
GATE_LINE = re.compile(r"^\[ *(OK|FAIL|PASSED|FAILED|SKIP)|^P: |^ *\* (Reason|System partition):|FAILURE INFO")


def _tee(cmd: list[str], log: Path, env: dict[str, str]) -> tuple[int, list[str]]:
    lines = []
    with (
        log.open("w") as f,
        subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, stdin=subprocess.DEVNULL
        ) as proc,
    ):
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            f.write(line)
            lines.append(line.rstrip("\n"))
    return proc.returncode, lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fleet/run.py", description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=ROOT / "fleet" / "config" / "local.py", help="ReFrame config")
    parser.add_argument("--out", type=Path, default=ROOT / ".fleet", help="results, HTML and ReFrame's folders")
    parser.add_argument("--bench", default=DEFAULT_BENCH, help="asv --bench regex ('' runs the whole suite)")
    parser.add_argument(
        "--draft-references", type=Path, metavar="FILE", help="write the figures measured as a references file (new)"
    )
    parser.add_argument("reframe_args", nargs=argparse.REMAINDER, help="after --: more arguments for reframe")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    if args.draft_references is not None and args.draft_references.exists():
        parser.error(f"{args.draft_references} exists; choose a new file (references are never overwritten)")
    results, html, tmp = out / "results", out / "html", out / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "TMPDIR": str(tmp)}  # ReFrame's own log files go there, not to /tmp
    extra = [a for a in args.reframe_args if a != "--"]
    reframe = Path(sys.executable).with_name("reframe")
    cmd = [str(reframe), "-C", str(args.config), "-c", str(CHECK), "-r", "--exec-policy=serial", "--nocolor"]
    cmd += ["--prefix", str(out / "reframe"), "-S", f"results_dir={results}", "-S", f"bench={args.bench}", *extra]
    print("$ " + shlex.join(cmd), flush=True)
    rc, lines = _tee(cmd, out / "reframe.txt", env)
    if not (results / "benchmarks.json").is_file():
        print(f"fleet: no results were merged into {results} (see {out / 'reframe.txt'})", file=sys.stderr)
        return rc or 1

    from asv.util import load_json

    from roofline.suite.reframe_jobs import publish_asv_config

    conf = publish_asv_config(load_json(str(ROOT / "asv.conf.json"), js_comments=True), ROOT, results, html)
    (out / "asv.conf.json").write_text(json.dumps(conf, indent=4))
    publish = subprocess.run(
        [sys.executable, "-m", "asv", "--config", str(out / "asv.conf.json"), "publish"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    (out / "publish.txt").write_text(publish.stdout + publish.stderr)
    compare = subprocess.run(
        [sys.executable, "-m", "roofline", "compare", str(results)], env=env, capture_output=True, text=True
    )
    (out / "compare.txt").write_text(compare.stdout)
    print("\n== ReFrame's performance gate ==")
    print("\n".join(line for line in lines if GATE_LINE.search(line)))
    for merge_log in sorted((out / "reframe" / "output").rglob("merge.log")):
        print(f"\n== {merge_log.relative_to(out)} ==\n{merge_log.read_text().rstrip()}")
    if publish.returncode == 0:
        print(f"\n== published: {html / 'index.html'} (serve it: asv --config {out / 'asv.conf.json'} preview) ==")
    else:
        print(f"\nfleet: asv publish failed (see {out / 'publish.txt'}):\n{publish.stderr[-2000:]}", file=sys.stderr)
    print(f"\n== roofline compare {results} ==\n{compare.stdout.rstrip()}")
    if compare.stderr:
        print(compare.stderr.rstrip(), file=sys.stderr)
    if args.draft_references is not None:
        from roofline.suite.reframe_jobs import draft_references
        from roofline.suite.results import read_results

        with args.draft_references.open("x") as f:
            f.write(draft_references(read_results(results), f"From {results} by fleet/run.py."))
        print(f"\nreferences drafted in {args.draft_references}: review them, then -S references_file=...")
    return rc or publish.returncode or compare.returncode


if __name__ == "__main__":
    sys.exit(main())
