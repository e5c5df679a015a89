#!/usr/bin/env python3
"""Checks the relative links of README.md and docs/*.md: each names a file or folder of the
repository, and each #anchor a heading of the page it points to (GitHub's anchors: the heading's
text in lower case, punctuation dropped, spaces as hyphens, repeats numbered). Links with a scheme
(https:, mailto:) are not followed: CI has no network. Markdown is parsed by markdown-it-py
(Debian: python3-markdown-it), so links in code are not links.

usage: scripts/check_links.py [FILE.md ...]   (default: README.md docs/*.md)
"""
import re
import sys
from pathlib import Path
from urllib.parse import unquote

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parent.parent
PARSER = MarkdownIt("commonmark").enable("table")


def inline_text(token) -> str:
    return "".join(child.content for child in token.children or []
                   if child.type in ("text", "code_inline"))


def anchors(path: Path, cache: dict) -> set:
    if path not in cache:
        seen: dict = {}
        found = set()
        tokens = PARSER.parse(path.read_text(encoding="utf-8"))
        for index, token in enumerate(tokens):
            if token.type != "heading_open":
                continue
            slug = re.sub(r"[^\w\- ]", "", inline_text(tokens[index + 1]).strip().lower())
            slug = slug.replace(" ", "-")
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            found.add(slug if count == 0 else f"{slug}-{count}")
        cache[path] = found
    return cache[path]


def links(tokens):
    for token in tokens:
        if token.type == "inline":
            for child in token.children or []:
                if child.type == "link_open":
                    yield child.attrGet("href") or "", token.map[0] + 1 if token.map else 0
                elif child.type == "image":
                    yield child.attrGet("src") or "", token.map[0] + 1 if token.map else 0


def check(page: Path, cache: dict) -> list:
    problems = []
    for target, line in links(PARSER.parse(page.read_text(encoding="utf-8"))):
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
            continue  # https:, mailto:: not checked offline
        where = f"{page.relative_to(ROOT)}:{line}: ({target})"
        name, _, anchor = target.partition("#")
        destination = (page.parent / unquote(name)).resolve() if name else page
        if not destination.exists():
            problems.append(f"{where} {name} does not exist")
            continue
        if ROOT not in destination.parents and destination != ROOT:
            problems.append(f"{where} points outside the repository")
            continue
        if anchor:
            if destination.suffix != ".md" or destination.is_dir():
                continue  # line anchors of source files (#L10) are GitHub's, not the file's
            if unquote(anchor).lower() not in anchors(destination, cache):
                problems.append(f"{where} {destination.relative_to(ROOT)} has no heading #{anchor}")
    return problems


def main() -> int:
    pages = [Path(arg).resolve() for arg in sys.argv[1:]] or \
        [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    cache: dict = {}
    problems = [problem for page in pages for problem in check(page, cache)]
    for problem in problems:
        print(problem)
    print(f"links: {len(pages)} pages, {len(problems)} broken")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
