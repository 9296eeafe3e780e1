"""Published, measured decode figures never beat `roofline decode`'s bound (docs/models.md, "Published figures")."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("published_figures", ROOT / "tools" / "published_figures.py")
published = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(published)
FIGURES = published.load()


def test_at_least_ten_figures_each_with_a_source_and_a_command():
    assert len(FIGURES) >= 10
    for fig in FIGURES:
        assert "https://" in fig["source"] and fig["args"].startswith("--model ")
        assert fig["metric"] in ("tokens_per_s", "ttft_ms") and fig["measured"] > 0


@pytest.mark.parametrize("fig", FIGURES, ids=[f"{i}" for i in range(1, len(FIGURES) + 1)])
def test_no_published_figure_exceeds_the_bound(fig):
    assert published.ratio(fig) <= 1, fig["what"]


def test_the_docs_table_is_what_the_figures_give():
    docs = (ROOT / "docs" / "models.md").read_text()
    table = "\n".join(published.table(FIGURES))
    assert table in docs, "docs/models.md is stale: paste `python tools/published_figures.py` into it"


def test_per_gpu_figures_count_the_whole_group():
    fig = {"args": "--model x --tp 4", "measured": 1486, "per_gpu": True}
    assert published.measured_total(fig) == 4 * 1486
    assert published.measured_total({**fig, "per_gpu": False}) == 1486
