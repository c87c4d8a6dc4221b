#!/usr/bin/env bash
# Regenerates the README's picture of a demo's HTML report: runs the browser test (a 4 s demo
# with --report, opened in headless Chromium) and keeps its screenshot as docs/demo-report.png.
# Needs Debian's chromium (or CHROMIUM=path). Run from anywhere in the repository.
set -euo pipefail
root="$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
cd "$root"
STEADFAST_REPORT_SCREENSHOT="$root/docs/demo-report.png" \
  cargo test -p steadfast-cli --test report_in_browser -- --nocapture
echo "wrote docs/demo-report.png"
