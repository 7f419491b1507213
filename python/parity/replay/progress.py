"""The progress bar of a replay on a terminal (stderr)."""
import sys
import time


class _Progress:
    def __init__(self, total, enabled):
        self.total, self.enabled, self.last = total, enabled and total > 0, 0.0

    def update(self, i, name):
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.last < 0.1 and i < self.total:
            return
        self.last = now
        width = 30
        done = int(width * i / self.total)
        sys.stderr.write("\rreplay [{}{}] {}/{} {}\x1b[K".format("#" * done, "." * (width - done), i, self.total,
                                                                   name[-40:]))
        sys.stderr.flush()

    def close(self):
        if self.enabled:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
