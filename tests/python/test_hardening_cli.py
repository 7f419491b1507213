"""Hostile inputs to the parity command line (issue 14): each test reproduces one finding."""
import json
import os
import subprocess

import capture_helpers
from test_capture_format import write_foreign_run


def test_info_json_with_a_non_utf8_run_folder_name(tmp_path):
    # The folder name reached `info --json` unreplaced: "invalid UTF-8 byte", exit 3. Now U+FFFD.
    write_foreign_run(tmp_path / "run")
    bad = os.path.join(os.fsencode(tmp_path), b"run\xff")
    os.rename(os.fsencode(tmp_path / "run"), bad)
    p = subprocess.run([capture_helpers.parity_bin(), "info", "--json", "-", bad], capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    info = json.loads(p.stdout.decode("utf-8"))
    assert any("run\ufffd" in part["dir"] for part in info["parts"])


def test_report_of_a_directory_says_it_is_a_directory(tmp_path):
    # Issue 31 §4: `parity report DIR` must say DIR is a directory (results are JSON files), exit 2,
    # and write nothing.
    p = subprocess.run([capture_helpers.parity_bin(), "report", str(tmp_path), "-o", str(tmp_path / "r.html")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stdout + p.stderr
    assert f"{tmp_path}: is a directory" in p.stderr and not (tmp_path / "r.html").exists(), p.stderr
