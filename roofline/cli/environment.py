"""``roofline preflight``, ``roofline cache`` and ``roofline backends``: what is here before anything
is measured (the variables and memory, the weight pools, the backends and dtypes that run)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..host import gpu_facts
from ..measure import pools
from .common import emit_json


def add_preflight(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("preflight", help="check the suite's environment variables and memory before asv runs")
    p.add_argument("--results", type=Path, default=Path(".asv/results"), help="asv results folder to check")


def run_preflight(args: argparse.Namespace) -> int:
    from ..suite.preflight import preflight

    for line in preflight(args.results):
        print(line)
    return 0


def add_cache(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cache", help="show or clear the shared random weight pools")
    p.add_argument("--clear", action="store_true", help="delete the pools (they are rebuilt on demand)")


def run_cache(args: argparse.Namespace) -> int:
    directory = pools.cache_dir()
    if args.clear:
        freed = pools.clear_cache()
        print(f"removed {freed / 2**20:.0f} MiB from {directory}")
        return 0
    files = sorted(directory.glob("*.bin")) if directory.is_dir() else []
    total = sum(f.stat().st_size for f in files)
    print(f"{directory}: {len(files)} pool file(s), {total / 2**20:.0f} MiB")
    for f in files:
        print(f"  {f.name}  {f.stat().st_size / 2**20:.0f} MiB")
    return 0


def add_backends(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("backends", help="which backends and dtypes run here, and why not where they don't")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def run_backends(args: argparse.Namespace) -> int:
    from ..measure.backends import inventory, torch_threads

    rows, gpu = inventory(), gpu_facts()
    if args.json:
        emit_json({"backends": rows, "gpu": gpu, "torch_threads": torch_threads()})
        return 0
    for r in rows:
        print(f"{r['backend']:>10} {r['dtype']:>5}  {'yes' if r['available'] else 'no: ' + str(r['reason'])}")
    if gpu:
        print(f"GPU: {gpu['name']}, {gpu['gpu_sm_count']} SMs, {gpu['gpu_memory_bytes'] / 2**30:.0f} GiB")
    return 0
