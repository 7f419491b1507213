#!/usr/bin/env bash
# Installs the report's front-end packages from npm into web/node_modules (only when missing or when
# package.json changed). They are inlined into each HTML report at build time; nothing is fetched when
# a report is opened.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/web"
[ -f package.json ] || exit 0
stamp=node_modules/.parity-stamp
if [ -f "$stamp" ] && [ "$stamp" -nt package.json ] && { [ ! -f package-lock.json ] || [ "$stamp" -nt package-lock.json ]; }; then
  exit 0
fi
if [ -f package-lock.json ]; then npm ci --no-audit --no-fund --loglevel=error; else npm install --no-audit --no-fund --loglevel=error; fi
touch "$stamp"
