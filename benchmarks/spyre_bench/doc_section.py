"""A named, generated section of a markdown file, kept between two HTML comment markers.

Several scripts write parts of one document (docs/performance.md: benchmarks/performance_report.py
writes the file, benchmarks/incumbent/incumbent.py one section of it): each owns the text between
`<!-- begin NAME -->` and `<!-- end NAME -->`, so rewriting one part keeps the others.
"""
import re


def markers(name):
    return "<!-- begin %s -->" % name, "<!-- end %s -->" % name


def find_section(text, name):
    """The section NAME of text, markers included, or '' when it has none."""
    begin, end = markers(name)
    m = re.search(re.escape(begin) + r".*?" + re.escape(end), text, re.S)
    return m.group(0) if m else ""


def with_section(text, name, body):
    """text with section NAME set to body (replaced where it is, else appended at the end)."""
    begin, end = markers(name)
    block = begin + "\n" + body.rstrip("\n") + "\n" + end
    old = find_section(text, name)
    if old:
        return text.replace(old, block)
    return text.rstrip("\n") + "\n\n" + block + "\n"


def write_section(path, name, body):
    """Sets section NAME of the markdown file at path to body (the rest of the file kept)."""
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(with_section(text, name, body))
