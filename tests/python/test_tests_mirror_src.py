"""Tests mirror src/ (issue 32 §7): every module folder src/<area>/ has its test folder tests/<area>/ with a
test in it, registered in tests/CMakeLists.txt — except the MPI process group, which is not a module of the
library (linked into the `parity` tool alone) and is tested where it runs, under mpirun."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
# area -> where its tests are instead, and why
TESTED_ELSEWHERE = {
    "distributed_mpi": "tests/python/test_mpi_compare.py (mpirun -n N parity ...: it exists only in the tool)",
}


def areas():
    return sorted(p.name for p in (ROOT / "src").iterdir() if p.is_dir())


def test_every_area_has_its_test_folder():
    registered = set(re.findall(r"^parity_test_dir\((\w+)\)", (ROOT / "tests/CMakeLists.txt").read_text(), re.M))
    missing = []
    for area in areas():
        if area in TESTED_ELSEWHERE:
            assert (ROOT / TESTED_ELSEWHERE[area].split()[0]).is_file(), area
            continue
        folder = ROOT / "tests" / area
        if not list(folder.glob("*_test.cpp")) or area not in registered:
            missing.append(area)
    assert missing == [], "src/<area> without tests/<area>/*_test.cpp registered by parity_test_dir: {}".format(missing)


def test_every_registered_test_folder_is_an_area():
    registered = re.findall(r"^parity_test_dir\((\w+)\)", (ROOT / "tests/CMakeLists.txt").read_text(), re.M)
    assert sorted(set(registered) - set(areas())) == []
