"""``roofline merge`` and ``roofline serve``: asv's folders merged from shards, and its HTML served
offline."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import BadInput
from ..suite.merge import merge
from ..suite.offline_html import local_server
from .common import port_number


def add_serve(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve",
        help="serve asv's published HTML on 127.0.0.1, offline (asv preview listens on every interface)",
        description="Serves the folder read-only on 127.0.0.1 only, with asv's JavaScript libraries from roofline "
        "instead of CDNs, until Ctrl-C.",
    )
    p.add_argument("--html", type=Path, default=Path(".asv/html"), help="asv's html folder (default .asv/html)")
    p.add_argument("--port", type=port_number, default=8080, help="port on 127.0.0.1 (default 8080; 0: any free one)")


def run_serve(args: argparse.Namespace) -> int:
    server = local_server(args.html, args.port)
    host, port = server.server_address[:2]
    print(f"serving {args.html} on http://{host}:{port}/ with asv's libraries from roofline (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0


def add_merge(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "merge",
        help="merge sharded asv results directories (one per machine or job) into one, safely",
        description="Copies each shard's <machine>/ folders into DEST after checking that the suites are "
        "compatible and that no file (machine, commit, environment) differs; never writes a shard; DEST is "
        "replaced in one step and keeps everything it held. Exit 2 on any problem, nothing written.",
    )
    p.add_argument("paths", nargs="+", type=Path, metavar="SRC... DEST", help="asv results directories, then DEST")
    p.add_argument("--force", action="store_true", help="on a conflict take the last shard's file (DEST's kept aside)")
    p.add_argument(
        "--update-suite", action="store_true", help="where a benchmark changed, the shards' definition replaces DEST's"
    )
    p.add_argument("--dry-run", action="store_true", help="check and say what would be merged; write nothing")


def run_merge(args: argparse.Namespace) -> int:
    if len(args.paths) < 2:
        raise BadInput("merge needs at least one SRC and a DEST (roofline merge SRC... DEST)")
    plan = merge(args.paths[:-1], args.paths[-1], args.force, args.update_suite, args.dry_run)
    for line in plan.warnings:
        print(f"roofline: warning: {line}", file=sys.stderr)
    print("\n".join(plan.summary()))
    return 0
