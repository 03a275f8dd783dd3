"""Tables of the reports: a table is a list of rows (lists of cells), the first row the header.

render_text aligns the columns for a terminal (numbers right, text left); render_md writes a markdown
table (`|` in a cell escaped); write_csv writes a CSV file; fmt formats a number, '' for None and nan.
"""
import csv
import math
import re


def fmt(x, spec="%.3f"):
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else spec % x


def is_number(cell):
    return re.fullmatch(r"-?[\d.]+%?|[\d.]+\.\.[\d.]+|", str(cell)) is not None


def render_text(table):
    """Aligned columns: numbers to the right, text to the left."""
    widths = [max(len(str(line[i])) for line in table) for i in range(len(table[0]))]
    right = [i > 0 and all(is_number(line[i]) for line in table[1:]) for i in range(len(widths))]
    out = []
    for j, line in enumerate(table):
        out.append("  ".join(str(c).rjust(w) if right[i] else str(c).ljust(w) for i, (c, w) in
                             enumerate(zip(line, widths))).rstrip())
        if j == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def write_csv(path, table):
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows(table)


def render_md(table):
    esc = [[str(c).replace("|", "\\|") for c in line] for line in table]
    out = ["| " + " | ".join(esc[0]) + " |", "|" + "|".join("---" for _ in esc[0]) + "|"]
    out += ["| " + " | ".join(line) + " |" for line in esc[1:]]
    return "\n".join(out)
