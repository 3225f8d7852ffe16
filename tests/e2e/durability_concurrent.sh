#!/usr/bin/env bash
# 2 and 8 processes on 12 files, and one corpus through different paths: see durability_concurrent.py.
set -euo pipefail
exec python3 "$(dirname "$0")/durability_concurrent.py"
