#!/usr/bin/env bash
# Makes the project's virtual environment: `.venv` from the machine's /usr/bin/python3.11 (no system
# site packages) with the pinned PyPI packages of python/requirements.txt (torch 2.x, numpy, pytest,
# transformers, ...), and a .pth file that puts python/ (the package) and <build>/python (the compiled
# _parity_core extension) on its path.
#
# Idempotent and quick when satisfied: a stamp in the venv holds the hash of the requirements file and
# of the base interpreter; when it matches, nothing is installed. Wheels are kept in a wheelhouse shared
# by every checkout (PARITY_WHEELHOUSE, default ~/.cache/parity/wheels): pip's own HTTP cache is not
# used because the index's responses may forbid caching, and torch's wheels are gigabytes. A fresh
# clone installs from the wheelhouse without the network; only a wheelhouse missing a pinned wheel
# goes to PyPI (`pip wheel`, which also turns sdist-only packages into wheels once).
set -euo pipefail
venv=${1:-.venv}; build=${2:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
req="$root/python/requirements.txt"
base=${PARITY_BASE_PYTHON:-/usr/bin/python3.11}
wheels=${PARITY_WHEELHOUSE:-${XDG_CACHE_HOME:-$HOME/.cache}/parity/wheels}
stamp="$venv/parity-requirements.sha256"

# A venv made by the old script (over Debian's python with --system-site-packages) is replaced.
if [ -f "$venv/pyvenv.cfg" ] && grep -q '^include-system-site-packages = true' "$venv/pyvenv.cfg"; then
  echo "make-venv: replacing $venv (it was made with --system-site-packages)" >&2
  rm -rf "$venv"
fi
if [ ! -x "$venv/bin/python" ]; then
  "$base" -m venv "$venv"
fi

want=$({ sha256sum < "$req"; echo "$base"; } | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  mkdir -p "$wheels"
  pip=("$venv/bin/python" -m pip --disable-pip-version-check)
  if ! "${pip[@]}" install -q --no-index --find-links "$wheels" -r "$req" 2>/dev/null; then
    echo "make-venv: fetching missing wheels from PyPI into $wheels" >&2
    # --use-pep517: sdist-only packages build in an isolated environment with a current setuptools
    # (the venv's own setuptools 65 has no bdist_wheel once wheel >= 0.45 has dropped it).
    "${pip[@]}" wheel -q --use-pep517 --find-links "$wheels" -w "$wheels" -r "$req"
    "${pip[@]}" install -q --no-index --find-links "$wheels" -r "$req"
  fi
  echo "$want" > "$stamp"
fi

site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
printf '%s\n%s\n' "$root/python" "$(cd "$build" && pwd)/python" > "$site/parity.pth"
