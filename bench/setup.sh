#!/usr/bin/env bash
# Installs what the benchmarks need beyond the Python environment: the wrk load generator
# (Debian/Ubuntu package) used by bench/load.py. Safe to run again.
set -euo pipefail
if command -v wrk >/dev/null 2>&1; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "bench/setup.sh: install wrk (https://github.com/wg/wrk) with your package manager" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq wrk
