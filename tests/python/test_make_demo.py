"""`make demo` builds only what the demo needs (issue 12 §6): the CLI and the Python extension, not the
tests and benchmarks of the whole tree. Checked on the commands make would run (`make -n`)."""
import os
import re
import shutil
import subprocess

import pytest

SRC = os.environ.get("PARITY_SOURCE_DIR", ".")
# Under `make test` this runs inside make: without this, the inner make prints "Entering directory"
# lines and inherits the outer one's flags.
ENV = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES")}


@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
def test_make_demo_builds_the_cli_and_the_extension_only(tmp_path):
    p = subprocess.run(["make", "-n", "--no-print-directory", "demo", f"BUILD={tmp_path / 'b'}"], cwd=SRC,
                       capture_output=True, text=True, env=ENV)
    assert p.returncode == 0, p.stderr
    builds = [line for line in p.stdout.splitlines() if line.startswith("cmake --build")]
    assert len(builds) == 1, builds
    assert re.fullmatch(r"cmake --build {} -j \d+ --target parity _parity_core".format(re.escape(str(tmp_path / "b"))),
                        builds[0]), builds
    assert p.stdout.rstrip().splitlines()[-1] == f"bash scripts/demo.sh {tmp_path / 'b'}"
    # `make build` (and so `make test`) still builds everything
    p = subprocess.run(["make", "-n", "--no-print-directory", "build", f"BUILD={tmp_path / 'b'}"], cwd=SRC,
                       capture_output=True, text=True, env=ENV)
    builds = [line for line in p.stdout.splitlines() if line.startswith("cmake --build")]
    assert len(builds) == 1 and "--target" not in builds[0]
