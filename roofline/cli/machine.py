"""``roofline machine``: this machine's asv entry, its keys migrated (``--migrate``) or its runs renamed
(``--rename``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import BadInput
from ..host import gpu_facts
from ..suite import machine_file
from ..suite.rename import apply_rename, plan_rename
from .common import emit_json


def add_machine(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "machine",
        help="write this machine's asv entry: asv's keys plus BLAS, GPU and LLC; --migrate RESULTS retires old keys",
    )
    p.add_argument("--machine", help="the name results are filed under (default: what it is: CPU, core, cores, LLC)")
    p.add_argument("--file", type=Path, help="machine file to update (default: ~/.asv-machine.json, asv's)")
    p.add_argument(
        "--migrate",
        type=Path,
        metavar="RESULTS",
        help="take the keys roofline no longer writes (measured figures, llc_source, device) out of the machine "
        "file and every result in RESULTS, after a backup beside RESULTS, keeping each history whole",
    )
    p.add_argument(
        "--rename",
        nargs=2,
        metavar=("OLD", "NEW"),
        help="with --results DIR: file machine OLD's recorded runs under NEW (its folder, machine.json and every "
        "result file's machine key, at once); refused when NEW exists",
    )
    p.add_argument("--results", type=Path, metavar="DIR", help="with --rename: the asv results folder")
    p.add_argument("--dry-run", action="store_true", help="print the entry (or the migration), write nothing")
    p.add_argument("--json", action="store_true", help="print the entry (or the migration) as JSON")
    # accepted from scripts written for earlier versions, which measured ceilings here
    p.add_argument("--no-measure", "--remeasure", dest="old_measure_flag", action="store_true", help=argparse.SUPPRESS)


def run_machine(args: argparse.Namespace) -> int:
    if (args.rename is None) != (args.results is None):
        raise BadInput("--rename OLD NEW and --results DIR go together")
    if args.rename is not None:
        return _rename(args)
    path = args.file or machine_file.machine_file_path()
    if args.old_measure_flag:
        print(
            "roofline: roofline machine measures nothing now: the ceilings are in each run's results", file=sys.stderr
        )
    gpu = gpu_facts()  # None without torch or a CUDA device
    if args.migrate is not None:
        return _migrate(args, path, gpu)
    name, entry, retired = machine_file.register(args.machine, path, write=not args.dry_run, gpu=gpu)
    if args.json:
        emit_json(entry)
        return 0
    width = max(map(len, entry))
    for key in sorted(entry):
        print(f"{key.ljust(width)}  {entry[key]}")
    print("not written (--dry-run)" if args.dry_run else f"wrote machine {name!r} to {path}")
    if retired:
        print(f"kept keys roofline no longer writes ({', '.join(retired)}): {_MIGRATE_HINT}", file=sys.stderr)
    return 0


_MIGRATE_HINT = "`roofline machine --migrate RESULTS` takes them out of the machine file and the results together"


def _migrate(args: argparse.Namespace, path: Path, gpu: dict | None) -> int:
    host = machine_file.this_host()
    plan = machine_file.plan_migration(args.migrate, path, lambda name: machine_file.machine_keys(name, host, gpu))
    if not args.dry_run:
        machine_file.apply_migration(plan)
    if args.json:
        emit_json({**plan.as_dict(), "dry_run": args.dry_run})
        return 0
    if not plan.rewrites:
        print(f"nothing to migrate in {args.migrate} or {path}")
        return 0
    for where, keys in plan.removed.items():
        print(f"{where}: took out " + ", ".join(f"{k}={' / '.join(map(repr, v))}" for k, v in keys.items()))
    for where, keys in plan.filled.items():
        print(f"{where}: filled in " + ", ".join(f"{k}={v!r}" for k, v in keys.items()) + " where missing")
    for note in plan.notes:
        print(f"note: {note}")
    files = len(plan.rewrites)
    if args.dry_run:
        print(f"would rewrite {files} file(s) (--dry-run: nothing written)")
    else:
        print(f"rewrote {files} file(s); the files as they were are in {plan.backup}")
    return 0


def _rename(args: argparse.Namespace) -> int:
    for flag in ("migrate", "machine", "file"):
        if getattr(args, flag) is not None:
            raise BadInput(f"--{flag} does not go with --rename")
    plan = plan_rename(args.results, *args.rename)
    if not args.dry_run:
        apply_rename(plan)
    if args.json:
        emit_json({**plan.as_dict(), "dry_run": args.dry_run})
        return 0
    verb, tail = ("would file", " (--dry-run: nothing written)") if args.dry_run else ("filed", "")
    runs = ", ".join(c[:8] for c in plan.commits)
    print(f"{verb} {plan.old}'s {len(plan.commits)} run(s) ({runs}) under {plan.new} in {plan.results}{tail}")
    return 0
