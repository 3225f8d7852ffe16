#!/usr/bin/env bash
# --alignment word resumes from ASR checkpoints as the original does: see align_resume.py.
set -euo pipefail
exec python3 "$(dirname "$0")/align_resume.py"
