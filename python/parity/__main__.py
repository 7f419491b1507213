"""`python -m parity ARGS...` runs the `parity` command-line tool with the same arguments and exits
with its exit code (docs/cli.md), for environments whose bin/ is not on PATH."""
import os
import subprocess
import sys

from ._binary import binary_path


def main(argv=None):
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        exe = binary_path()
    except FileNotFoundError as e:
        print("parity: {}".format(e), file=sys.stderr)
        return 2  # no usable input: the tool itself (docs/architecture.md, "Exit codes")
    if os.name == "posix" and argv is None:
        os.execv(exe, [exe] + args)  # the tool replaces this process: same exit code, same signals
    return subprocess.call([exe] + args)


if __name__ == "__main__":
    sys.exit(main())
