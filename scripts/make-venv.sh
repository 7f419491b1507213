#!/usr/bin/env bash
# Makes `import parity` work: a venv over Debian's /usr/bin/python3 (which has torch) with
# --system-site-packages, and a .pth file that puts python/ (the package) and <build>/python (the
# compiled _parity_core extension) on its path. No PyPI involved.
set -euo pipefail
venv=${1:-.venv}; build=${2:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -x "$venv/bin/python" ]; then
  /usr/bin/python3 -m venv --system-site-packages "$venv"
fi
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
printf '%s\n%s\n' "$root/python" "$(cd "$build" && pwd)/python" > "$site/parity.pth"
