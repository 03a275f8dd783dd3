"""The first error line of a generator's or spyre-run's output, the line a report shows for a failure.

Assumes Halide's and the project's formats: GenGen prints "Unhandled exception: Error: ..." or "Error:"
and the message (on the same line or the next), the generator driver "gen_<g>: error: ...", the Spyre
backend messages that name Spyre.
"""


def first_error(text):
    """The compiler's or simulator's first error line."""
    lines = [l.strip() for l in (text or "").splitlines() if l.strip()]
    for i, l in enumerate(lines):
        for prefix in ("Unhandled exception:", "Error:"):
            if l.startswith(prefix):
                rest = l[len(prefix):].strip()
                return rest or (lines[i + 1] if i + 1 < len(lines) else prefix)
    for l in lines:
        if "rror" in l or "Spyre" in l:
            return l
    return lines[-1] if lines else "failed without a message"
