"""Progress lines on stderr (flushed at once, so they interleave correctly with a child's output)."""
import sys


def log(msg):
    print(msg, file=sys.stderr, flush=True)
