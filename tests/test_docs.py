"""Every relative link in the README and docs/ resolves: to a file that exists and, with ``#anchor``, to a
heading of that file (GitHub's anchors); the README stays a five-minute read (≤ 200 lines)."""

from __future__ import annotations

import re
import urllib.parse
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
#: [text](target) and ![alt](target), outside code; the target up to a space or the closing parenthesis.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
CODE = re.compile(r"`[^`\n]*`")


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but - and _ dropped, spaces as hyphens."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {anchor(h) for h in re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, re.M)}


def links(page: Path) -> list[str]:
    text = CODE.sub("", FENCE.sub("", page.read_text(encoding="utf-8")))
    return LINK.findall(text)


def broken(page: Path) -> list[str]:
    out = []
    for target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: …: not ours to check offline
            continue
        path, _, fragment = target.partition("#")
        file = (page.parent / urllib.parse.unquote(path)).resolve() if path else page
        shown = file.relative_to(ROOT) if file.is_relative_to(ROOT) else file
        if not file.exists():
            out.append(f"{target}: no {shown}")
        elif fragment and file.suffix == ".md" and fragment not in anchors(file):
            out.append(f"{target}: no heading #{fragment} in {shown}")
    return out


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_relative_link_resolves(page):
    assert broken(page) == []


def test_the_checker_sees_a_broken_link_and_a_missing_heading(tmp_path):
    page = tmp_path / "p.md"
    (tmp_path / "there.md").write_text("# A heading (with `code`)\n")
    page.write_text(
        "[ok](there.md#a-heading-with-code) [gone](nowhere.md) [bad](there.md#no-such) "
        "[web](https://example.org/x) `[in code](nowhere.md)`\n```\n[fenced](nowhere.md)\n```\n"
    )
    assert [b.split(":")[0] for b in broken(page)] == ["nowhere.md", "there.md#no-such"]


def test_every_doc_is_reachable_from_the_readme():
    """No moved section is orphaned: each docs/ page is linked from the README or from a page it links to."""
    seen, todo = set(), [ROOT / "README.md"]
    while todo:
        page = todo.pop()
        if page in seen or page.suffix != ".md" or not page.exists():
            continue
        seen.add(page)
        for target in links(page):
            path = target.partition("#")[0]
            if path and not re.match(r"^[a-z][a-z0-9+.-]*:", path):
                todo.append((page.parent / urllib.parse.unquote(path)).resolve())
    orphans = [str(p.relative_to(ROOT)) for p in PAGES if p.resolve() not in seen]
    assert orphans == []


def test_the_readme_is_at_most_200_lines():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 200
