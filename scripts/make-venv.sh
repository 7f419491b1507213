#!/usr/bin/env bash
# Makes the project's virtual environment `.venv`: a venv from the machine's /usr/bin/python3.11 (no
# system site packages) that sees the pinned PyPI packages of python/requirements.txt (torch 2.x, numpy,
# pytest, transformers, ...) and, through a .pth file, python/ (the package) and <build>/python (the
# compiled _parity_core extension).
#
# The packages are installed once per machine, not once per checkout: torch's PyPI wheel brings its
# CUDA libraries, ~6 GB unpacked, and a fresh clone that unpacked them again took minutes and filled
# small disks. They live in a package venv under PARITY_VENV_STORE (default ~/.cache/parity/venvs), one
# per (requirements file, base interpreter) hash; a checkout's .venv is a thin venv whose .pth puts that
# venv's site-packages on its path, after its own. Wheels are kept in a wheelhouse (PARITY_WHEELHOUSE,
# default ~/.cache/parity/wheels): pip's own HTTP cache is not used because the index's responses may
# forbid caching. A missing pinned wheel is fetched from PyPI once (`pip wheel`, which also turns
# sdist-only packages into wheels).
#
# Idempotent and quick when satisfied: stamps hold the hash. Editing requirements.txt makes the next run
# build a new package venv; the store keeps the newest two and removes older ones.
set -euo pipefail
venv=${1:-.venv}; build=${2:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
req="$root/python/requirements.txt"
base=${PARITY_BASE_PYTHON:-/usr/bin/python3.11}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/parity
wheels=${PARITY_WHEELHOUSE:-$cache/wheels}
store=${PARITY_VENV_STORE:-$cache/venvs}
want=$({ sha256sum < "$req"; echo "$base"; } | sha256sum | cut -d' ' -f1)
packages="$store/${want:0:16}"
stamp=parity-requirements.sha256

# 1. The package venv, under a lock: two checkouts building at once install it once.
mkdir -p "$store"
exec 9>"$store/.lock"
flock 9
if [ "$(cat "$packages/$stamp" 2>/dev/null)" != "$want" ]; then
  [ -x "$packages/bin/python" ] || "$base" -m venv "$packages"
  mkdir -p "$wheels"
  pip=("$packages/bin/python" -m pip --disable-pip-version-check)
  if ! "${pip[@]}" install -q --no-index --find-links "$wheels" -r "$req" 2>/dev/null; then
    echo "make-venv: fetching missing wheels from PyPI into $wheels" >&2
    # --use-pep517: sdist-only packages build in an isolated environment with a current setuptools
    # (the venv's own setuptools 65 has no bdist_wheel once wheel >= 0.45 has dropped it).
    "${pip[@]}" wheel -q --use-pep517 --find-links "$wheels" -w "$wheels" -r "$req"
    "${pip[@]}" install -q --no-index --find-links "$wheels" -r "$req"
  fi
  echo "$want" > "$packages/$stamp"
fi
touch "$packages/$stamp"  # its time says when a checkout last used it
# Package venvs of other requirements: keep the most recently used other one, remove the rest.
for old in $(ls -1dt "$store"/*/ | sed 's:/$::' | grep -vx "$packages" | tail -n +2 || true); do
  echo "make-venv: removing $old (the package venv of an older requirements file)" >&2
  rm -rf "$old"
done
flock -u 9

# 2. The checkout's thin venv. One made by an older script (packages inside it, or over Debian's
#    python with --system-site-packages) is replaced: its packages now come from the package venv.
if [ -f "$venv/pyvenv.cfg" ] && { grep -q '^include-system-site-packages = true' "$venv/pyvenv.cfg" \
     || [ ! -f "$venv/parity-thin" ]; }; then
  echo "make-venv: replacing $venv with a thin venv over $packages" >&2
  rm -rf "$venv"
fi
if [ ! -x "$venv/bin/python" ]; then
  "$base" -m venv --without-pip "$venv"
  : > "$venv/parity-thin"
fi
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
shared=$("$packages/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# addsitedir, not a plain path line: the package venv's own .pth files (setuptools' shim) are read too.
printf '%s\n%s\nimport site; site.addsitedir(%s)\n' "$root/python" "$(cd "$build" && pwd)/python" \
  "$("$base" -c 'import sys; print(repr(sys.argv[1]))' "$shared")" > "$site/parity.pth"
