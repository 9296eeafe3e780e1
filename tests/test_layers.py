"""Data flows one way: no module imports from a later layer than its own.

The layers are the table in roofline/__init__.py's docstring; a module's layer is its subpackage
(roofline/model/x.py is in "model") or, at the top level, its own name.
"""

import ast
import re
from pathlib import Path

import roofline

PACKAGE = Path(roofline.__file__).resolve().parent


def layers() -> list[tuple[str, ...]]:
    """The docstring's table: one layer per indented line, its names before the description."""
    rows = re.findall(r"^    (\S[^ ]*(?: [^ ]+)*?)  +\S", roofline.__doc__, re.M)
    return [tuple(name.strip() for name in row.split(",")) for row in rows]


RANK = {name: i for i, layer in enumerate(layers()) for name in layer}


def layer_of(module: str) -> str:
    """'roofline.model.knee' → 'model'; 'roofline.cli' → 'cli'; 'roofline' → '__init__'."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imported(module: str, path: Path) -> set[str]:
    """Every roofline module ``module`` imports, lazily or not, resolved to its dotted name."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules())
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m == "roofline" or m.startswith("roofline.")}


def test_the_table_names_every_subpackage_and_top_level_module():
    assert [layer[0] for layer in layers()][:1] == ["errors"] and len(layers()) == 6
    named = {layer_of(m) for m in modules()} - {"__init__"}
    assert named == set(RANK)


def test_no_module_imports_from_a_later_layer():
    upward = [
        f"{m} ({layer_of(m)}) imports {t} ({layer_of(t)})"
        for m, path in modules().items()
        if m != "roofline"
        for t in sorted(imported(m, path))
        if t != "roofline" and RANK[layer_of(t)] > RANK[layer_of(m)]
    ]
    assert not upward, upward


def test_an_upward_import_is_caught(tmp_path):
    """The check itself: a model module importing from report is flagged."""
    path = tmp_path / "x.py"
    path.write_text("from ..report.cpu import build_report\n")
    assert imported("roofline.model.x", path) == {"roofline.report.cpu"}
    assert RANK[layer_of("roofline.report.cpu")] > RANK[layer_of("roofline.model.x")]


def test_only_the_commands_print():
    """Library code returns values and warnings; the top layer prints, and suite.harness to asv's stderr."""
    commands = set(layers()[-1])
    allowed = {m for m in modules() if layer_of(m) in commands} | {"roofline.suite.harness"}
    assert "roofline.cli" in allowed and "roofline.report.cpu" not in allowed
    printing = {
        m
        for m, path in modules().items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Name) and node.func.id == "print")
            or (isinstance(node.func, ast.Attribute) and node.func.attr == "write" and "std" in ast.unparse(node.func))
        )
    }
    assert printing and printing <= allowed, printing - allowed


def private_imports(module: str, path: Path) -> list[str]:
    """The private names (``_x``) ``module`` imports from another roofline module."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("roofline")):
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            source = (f"{base}.{node.module}" if node.module else base) if node.level else node.module
            private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
            found += [f"{module} imports {source}.{name}" for name in private]
    return found


def test_no_module_imports_a_private_name(tmp_path):
    """Modules share through public names only: bench, regress and cli the asv driver and the argument types,
    the compare page the plot's figure helpers."""
    found = [f for m, path in modules().items() for f in private_imports(m, path)]
    assert not found, found
    path = tmp_path / "x.py"
    path.write_text("from .bench import _say, run_bench\nfrom ..errors import BadInput\n")
    assert private_imports("roofline.cli.x", path) == ["roofline.cli.x imports roofline.cli.bench._say"]
