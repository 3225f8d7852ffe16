#!/usr/bin/env bash
# kill -9 at >= 50 moments of runs overwriting 6 output sets: see durability_kill.py.
set -euo pipefail
exec python3 "$(dirname "$0")/durability_kill.py"
