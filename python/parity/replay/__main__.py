"""`python -m parity.replay run|confirm` (docs/replay.md): what `parity replay` and `compare --replay` run."""
import sys

from .cli import main

sys.exit(main())
