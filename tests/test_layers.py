"""Data flows one way: no module imports one from a higher layer (README, "Layout")."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "roofline"

LAYERS = [
    {"errors", "units"},
    {"files", "interrupt"},
    {"hardware", "system"},
    {"arithmetic", "catalogue", "models", "timing", "data"},
    {"kernels", "gpu"},
    {"torch_kernels", "backends", "params"},
    {"measure", "guards"},
    {"ceilings", "crossover", "regimes", "decode_model", "preflight"},
    {"gpu_ceilings", "suite", "suite_backends", "gpu_run", "results"},
    {"report", "specs", "machine", "compare", "plot", "decode_report", "merge"},
    {"results_report", "compare_plot", "fleet"},
    {"bench", "cli", "__main__", "__init__"},
]
RANK = {name: i for i, layer in enumerate(LAYERS) for name in layer}


def imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:
                found.update(alias.name for alias in node.names)
    return found & set(RANK)


def test_every_module_has_a_layer():
    assert {p.stem for p in PACKAGE.glob("*.py")} == set(RANK)


def test_no_module_imports_upwards():
    upward = [
        f"{p.stem} (layer {RANK[p.stem]}) imports {m} (layer {RANK[m]})"
        for p in sorted(PACKAGE.glob("*.py"))
        for m in sorted(imports(p))
        if RANK[m] > RANK[p.stem]
    ]
    assert not upward, upward
