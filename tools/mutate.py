"""A small AST mutation check: does the test suite notice when the arithmetic changes?

    python tools/mutate.py roofline/model/llm_estimate.py tests/test_llm_estimate.py tests/test_models.py \
        tests/test_cli_decode.py [--only NAME,NAME] [--list] [--jobs 2] [--json OUT] [-k EXPR] [--indices 3,17]

Each mutant changes one node of the module's syntax tree (an arithmetic or comparison operator, a
number, and/or, max/min, a negated condition), is written into a scratch copy of the repository,
and the given tests run against it (``pytest -x``; the scratch copy holds the whole working tree,
committed, so the e2e tests run too). A mutant the tests fail on is *killed*; one
they pass is a *survivor* to look at: either a missing test or an equivalent change. String
constants (messages) are not mutated. ``--only`` keeps mutants inside the named functions,
methods or classes. Nothing in the working tree is touched. On a busy machine, run a quick pass with
``-k`` (e.g. ``-k "not hypothesis"``) first, then ``--indices`` of its survivors with every test.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

BINOPS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Div}
BINOPS.update({ast.Pow: ast.Mult, ast.Mod: ast.FloorDiv})
CMPOPS = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}
CMPOPS.update({ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn, ast.NotIn: ast.In})
SWAP_CALLS = {"max": "min", "min": "max"}


@dataclass
class Mutant:
    index: int
    line: int
    where: str
    change: str
    outcome: str = ""


def _inside_fstring(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.JoinedStr):
            return True
    return False


def _scope(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> list[str]:
    names = []
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
    return names[::-1]


def _is_docstring_or_annotation(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        parent = parents[node]
        if isinstance(parent, ast.arg | ast.AnnAssign) and getattr(parent, "annotation", None) is node:
            return True
        if isinstance(parent, ast.FunctionDef) and parent.returns is node:
            return True
        node = parent
    return False


def candidates(tree: ast.Module, only: set[str] | None) -> list[tuple[ast.AST, str, Mutant]]:
    """Every mutation site: (node, kind, description), in a stable order."""
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    found: list[tuple[ast.AST, str, Mutant]] = []

    def add(node: ast.AST, kind: str, change: str) -> None:
        scope = _scope(node, parents)
        if only is not None and not only.intersection(scope):
            return
        if _inside_fstring(node, parents) or _is_docstring_or_annotation(node, parents):
            return
        m = Mutant(len(found), getattr(node, "lineno", 0), ".".join(scope) or "<module>", change)
        found.append((node, kind, m))

    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and type(node.op) in BINOPS:
            add(node, "binop", f"{type(node.op).__name__} → {BINOPS[type(node.op)].__name__}")
        elif isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                if type(op) in CMPOPS:
                    add(node, f"cmp{i}", f"{type(op).__name__} → {CMPOPS[type(op)].__name__}")
        elif isinstance(node, ast.BoolOp):
            add(node, "boolop", "and ↔ or")
        elif isinstance(node, ast.Constant) and type(node.value) in (int, float):
            add(node, "number", f"{node.value!r} → {_new_number(node.value)!r}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in SWAP_CALLS:
            add(node, "call", f"{node.func.id} → {SWAP_CALLS[node.func.id]}")
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.Not):
            add(node, "unary", f"drop {type(node.op).__name__}")
        elif isinstance(node, ast.If | ast.IfExp | ast.While):
            add(node, "negate", f"negate the {type(node).__name__} condition")
    found.sort(key=lambda item: (item[2].line, item[2].index))
    for i, (_, _, m) in enumerate(found):
        m.index = i
    return found


def _new_number(value: int | float) -> int | float:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value + 1
    return value * 2 if value else 1.0


class _Apply(ast.NodeTransformer):
    def __init__(self, target: ast.AST, kind: str) -> None:
        self.target, self.kind = target, kind

    def visit(self, node: ast.AST) -> ast.AST:
        if node is not self.target:
            return super().visit(node)
        k = self.kind
        if k == "binop":
            node.op = BINOPS[type(node.op)]()
        elif k.startswith("cmp"):
            i = int(k[3:])
            node.ops[i] = CMPOPS[type(node.ops[i])]()
        elif k == "boolop":
            node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        elif k == "number":
            node.value = _new_number(node.value)
        elif k == "call":
            node.func.id = SWAP_CALLS[node.func.id]
        elif k == "unary":
            return node.operand
        elif k == "negate":
            node.test = ast.UnaryOp(ast.Not(), node.test)
        return node


def mutated_source(source: str, index: int, only: set[str] | None) -> str:
    tree = ast.parse(source)
    node, kind, _ = candidates(tree, only)[index]
    return ast.unparse(ast.fix_missing_locations(_Apply(node, kind).visit(tree)))


def _git(work: Path, *args: str) -> None:
    ident = {"GIT_AUTHOR_NAME": "m", "GIT_AUTHOR_EMAIL": "m@m", "GIT_COMMITTER_NAME": "m", "GIT_COMMITTER_EMAIL": "m@m"}
    subprocess.run(["git", *args], cwd=work, env={**os.environ, **ident}, capture_output=True, check=True)


def _scratch(module: Path) -> Path:
    """The working tree as it is (tracked and untracked files git does not ignore), committed in a fresh
    repository: the tests that copy the project into a repository of their own (the e2e tier) run there too."""
    work = Path(tempfile.mkdtemp(prefix="roofline-mutant-"))
    cmd = ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
    listed = subprocess.run(cmd, cwd=ROOT, capture_output=True, check=True)
    for rel in filter(None, listed.stdout.decode().split("\0")):
        if (ROOT / rel).is_file():
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, work / rel)
    _git(work, "init", "-q", "-b", "main")
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "scratch")
    return work


def run_tests(work: Path, tests: list[str], timeout: float, select: str | None = None) -> str:
    env = {**os.environ, "PYTHONPATH": str(work), "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--no-header", *tests]
    if select:
        cmd += ["-k", select]
    try:
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "killed (timeout)"
    if proc.returncode == 0:
        return "survived"
    return "killed" if proc.returncode == 1 else f"error (pytest exit {proc.returncode})"


def check(
    module: str,
    tests: list[str],
    only: set[str] | None,
    jobs: int,
    timeout: float,
    select: str | None = None,
    indices: set[int] | None = None,
) -> list[Mutant]:
    path = ROOT / module
    source = path.read_text()
    mutants = [m for _, _, m in candidates(ast.parse(source), only) if indices is None or m.index in indices]

    def one(m: Mutant) -> Mutant:
        work = _scratch(path)
        try:
            (work / module).write_text(mutated_source(source, m.index, only))
            m.outcome = run_tests(work, tests, timeout, select)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(f"{m.index:>4}  {m.outcome:<16} line {m.line:>4}  {m.where}: {m.change}", flush=True)
        return m

    baseline = _scratch(path)
    try:
        if run_tests(baseline, tests, timeout, select) != "survived":
            raise SystemExit("mutate: the tests fail without any mutation; fix them first")
    finally:
        shutil.rmtree(baseline, ignore_errors=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, [copy.copy(m) for m in mutants]))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("module", help="the file to mutate, relative to the repository root")
    p.add_argument("tests", nargs="+", help="test files or node ids to run against each mutant")
    p.add_argument("--only", help="comma-separated function, method or class names to mutate inside")
    p.add_argument("--list", action="store_true", help="list the mutants and stop")
    p.add_argument("--jobs", type=int, default=1, help="mutants tested at once (default 1)")
    p.add_argument("--timeout", type=float, default=300, help="seconds per mutant (a hang counts as killed)")
    p.add_argument("--json", type=Path, help="also write every mutant and its outcome to this file")
    p.add_argument("-k", dest="select", metavar="EXPR", help="only the tests pytest -k EXPR selects")
    p.add_argument("--indices", help="comma-separated mutant numbers (as --list gives them) to test")
    args = p.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    indices = {int(i) for i in args.indices.split(",")} if args.indices else None
    if args.list:
        for _, _, m in candidates(ast.parse((ROOT / args.module).read_text()), only):
            print(f"{m.index:>4}  line {m.line:>4}  {m.where}: {m.change}")
        return 0
    results = check(args.module, args.tests, only, args.jobs, args.timeout, args.select, indices)
    killed = sum(m.outcome.startswith("killed") for m in results)
    survived = [m for m in results if m.outcome == "survived"]
    print(
        f"{len(results)} mutants: {killed} killed, {len(survived)} survived, "
        f"{len(results) - killed - len(survived)} errors"
    )
    if args.json:
        args.json.write_text(json.dumps([asdict(m) for m in results], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
