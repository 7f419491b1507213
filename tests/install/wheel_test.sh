#!/usr/bin/env bash
# ctest install_wheel: pip builds a wheel of this source tree (pyproject.toml, scikit-build-core), it is
# installed into a fresh venv, and the demo's capture + compare run there through the installed
# `parity` command and `python -m parity`, with nothing of the source or build tree on the path.
# The fresh venv (no system site packages) borrows numpy and torch from PYTHON through a .pth file:
# they are run-time dependencies of the demo, not of what is being tested, and downloading them again
# would make the test slow and need the network.
# usage: wheel_test.sh SOURCE_DIR BUILD_DIR WORK_DIR PYTHON
set -euo pipefail
src=$1; build=$2; work=$3; py=$4
rm -rf "$work"; mkdir -p "$work"
fail() { echo "install_wheel: $*" >&2; exit 1; }
# The wheel's build requirements (scikit-build-core, pybind11): PYTHON's own when it has them (the
# project's venv: no download), else pip's isolated build environment, as a user's `pip install .` gets.
if "$py" -c 'import scikit_build_core, pybind11' 2>/dev/null; then
  isolation=(--no-build-isolation --no-index); requirements="from $py"
else
  isolation=(); requirements="in pip's isolated build environment (PyPI)"
fi
unset PYTHONPATH PARITY_BIN  # ctest's: the installed package must stand on its own
t0=$(date +%s)

# 1. the wheel: pip runs scikit-build-core, whose build-dir (pyproject.toml) sits next to build/ in the
#    source tree, so the compiler launcher's ccache serves every object the main build already compiled
#    -- when the compiler is the same one: ccache hashes its name, and scikit-build-core would otherwise
#    pick Python's (x86_64-linux-gnu-g++) instead of the build's (c++).
#    -v: pip shows a build backend's output only when verbose (README "Install"); each line is stamped
#    with the time it arrived, to tell pip's own time from the compile's.
stamp() { while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done; }
set +e
CXX=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt") \
CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
  "$py" -m pip wheel -v "${isolation[@]}" --no-deps -w "$work/dist" "$src" 2>&1 | stamp >"$work/wheel.log"
rc=${PIPESTATUS[0]}
set -e
[ "$rc" = 0 ] || { tail -40 "$work/wheel.log" >&2; fail "pip wheel failed (log: $work/wheel.log)"; }
wheel=$(ls "$work"/dist/parity-*.whl)
t1=$(date +%s)
# The progress a user sees with `pip install -v .`: the build tool's [k/N] (Ninja) or [ k%] (Make) lines.
progress='^[0-9.]+ +\[ *[0-9]+(/[0-9]+|%)\]'
grep -Eq "$progress" "$work/wheel.log" || fail "pip wheel -v showed no build progress lines (log: $work/wheel.log)"
# pip's own time (build requirements, configure, packing) beyond the compile: at most a minute (issue 31).
read -r beyond compile < <(awk -v re="$progress" 'NR == 1 { first = $1 } $0 ~ re { if (!c0) c0 = $1; c1 = $1 }
  { last = $1 } END { printf "%.0f %.0f\n", (last - first) - (c1 - c0), c1 - c0 }' "$work/wheel.log")
[ "$beyond" -le 60 ] || fail "pip wheel took $beyond s beyond its $compile s compile (at most 60 s)"

# 2. a fresh venv with the wheel installed
v=$work/venv
base=$("$py" -c 'import sys; print(getattr(sys, "_base_executable", sys.executable))')
"$base" -m venv --without-pip "$v"
"$py" -m pip --python "$v/bin/python" install --no-deps --no-index "$wheel" >"$work/install.log" 2>&1 \
  || { cat "$work/install.log" >&2; fail "pip install of $wheel failed"; }
site=$("$v/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$py" -c 'import os, numpy, torch; print("\n".join(sorted({os.path.dirname(os.path.dirname(m.__file__)) for m in (numpy, torch)})))' \
  >"$site/zz-demo-deps.pth"
cd "$work"  # not the source tree: `import parity` must find the installed package

# 3. what was installed, and where
export PATH="$v/bin:/usr/bin:/bin"
[ "$(command -v parity)" = "$v/bin/parity" ] || fail "parity on PATH is $(command -v parity), not $v/bin/parity"
version=$(basename "$wheel" | cut -d- -f2)
[ "$(parity --version)" = "parity $version" ] || fail "parity --version says '$(parity --version)', the wheel is $version"
"$v/bin/python" - "$v" <<'PY' || fail "the installed package is not the one in the venv"
import os, sys
import _parity_core, parity
venv = os.path.realpath(sys.argv[1])
for what, path in (("parity", parity.__file__), ("_parity_core", _parity_core.__file__),
                   ("parity.binary_path()", parity.binary_path())):
    print("{:<22} {}".format(what, path))
    assert os.path.realpath(path).startswith(venv + os.sep), what + " is outside the fresh venv"
assert parity.binary_path() == os.path.join(venv, "bin", "parity")
assert parity.__version__ == _parity_core.__version__
PY

# 4. the demo's tensors (examples/make_demo_tensors.py: one broken layer) and its captured training
#    (parity.examples.demo_train, a few steps), written by the installed package
python -m parity --version >/dev/null
"$v/bin/python" "$src/examples/make_demo_tensors.py" demo >demo.log
"$v/bin/python" -m parity.examples.demo_train demo/train --steps 2 --batch 2 --seq 16 --eval-batches 1 >>demo.log

# 5. compare through `parity` on PATH and through `python -m parity`: same exit code, same result
# run_both EXPECTED_EXITS ARGS...: both ways must exit alike, with a code in EXPECTED_EXITS
run_both() {
  local expected=$1; shift
  local rc=0 rc_m=0
  parity "$@" --json cli.json >cli.out || rc=$?
  "$v/bin/python" -m parity "$@" --json module.json >module.out || rc_m=$?
  echo "parity $* -> exit $rc; python -m parity -> exit $rc_m"
  [ "$rc" = "$rc_m" ] || fail "parity $* exits $rc, python -m parity $rc_m"
  [[ " $expected " == *" $rc "* ]] || { cat cli.out >&2; fail "parity $* exits $rc, expected one of $expected"; }
  "$v/bin/python" - <<'PY' || fail "parity $* and python -m parity disagree"
import json
a, b = (json.load(open(f)) for f in ("cli.json", "module.json"))
assert a["summary"] == b["summary"], (a["summary"], b["summary"])
assert a["summary"]["rows"] > 0 and a["summary"]["problems"] == 0, a["summary"]
print("  summary:", {k: a["summary"][k] for k in ("verdict", "rows", "pass", "warn", "fail")})
PY
}
run_both "1" compare demo/golden.npz demo/target.safetensors      # the broken layer is found
run_both "0 1" compare demo/train/golden demo/train/target --step 0
rc=0; "$v/bin/python" -m parity no-such-command >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "python -m parity no-such-command exits $rc, not 2 (usage error)"
t2=$(date +%s)
echo "install_wheel: passed (wheel built in $((t1 - t0)) s: compile $compile s, pip beyond it $beyond s; build requirements $requirements; installed and run in $((t2 - t1)) s)"
