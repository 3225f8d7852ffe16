#!/usr/bin/env bash
# injected commit failures, a read-only folder, a modified source, signals during a commit:
# see durability_faults.py.
set -euo pipefail
exec python3 "$(dirname "$0")/durability_faults.py"
