"""Every relative link of README.md and docs/ leads to a file that exists, and to a heading
of that file when it names one (`page.md#heading`), as GitHub renders the anchors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def prose(text: str) -> str:
    """The text without code (fenced, indented after a blank line, inline), where brackets
    are not links."""
    kept, fenced, indented, previous = [], False, False, ""
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
            continue
        indented = line.startswith(("    ", "\t")) and (indented or not previous.strip())
        previous = line
        if not fenced and not indented:
            kept.append(re.sub(r"`[^`]*`", "", line))
    return "\n".join(kept)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped but - and _, spaces
    made hyphens (inline code keeps its text)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in page.read_text().splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
        heading = None if fenced else HEADING.match(line)
        if heading:
            base = slug(heading.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    found.update(re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", page.read_text()))
    return found


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in LINK.findall(prose(page.read_text())):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, file:
            continue
        path_part, _, anchor = target.partition("#")
        linked = (page.parent / path_part).resolve() if path_part else page
        if not linked.exists():
            broken.append(f"{target}: no file {linked}")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no heading with the anchor #{anchor} in {linked}")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_a_broken_link_and_a_wrong_anchor_are_found(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other page\n\n## Any VMM (kind = \"command\")\n")
    page = tmp_path / "page.md"
    page.write_text("See [it](other.md#any-vmm-kind--command), [gone](missing.md),\n"
                    "[wrong](other.md#nothing-here), [self](#title) and `[code](nowhere.md)`.\n"
                    "\n    [an indented code block](nowhere.md)\n\n# Title\n")
    assert [problem.split(":")[0] for problem in broken_links(page)] == [
        "missing.md", "other.md#nothing-here"]


@pytest.mark.parametrize("heading, anchor", [
    ("kernel_build: a Linux kernel", "kernel_build-a-linux-kernel"),
    ('Any VMM from a command line (kind = "command")', "any-vmm-from-a-command-line-kind--command"),
    ("`[campaign.auto]`: when `repeat = \"auto\"` stops", "campaignauto-when-repeat--auto-stops"),
])
def test_anchors_are_githubs(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor
