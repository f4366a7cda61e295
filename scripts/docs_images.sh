#!/usr/bin/env bash
# The pictures of README.md and docs/: a screenshot of the HTML report of a run (by
# default the last run of srperf-results, i.e. what `make run` just measured), taken in
# headless Chromium, written to docs/img/first-report.png.
#
#   make run && scripts/docs_images.sh [RESULTS_DIR [RUN]]
#
# Needs chromium (scripts/install.sh installs it). Run as root it uses --no-sandbox,
# as the report tests do, with a profile directory of its own that is removed at the end.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
results="${1:-srperf-results}"
run="${2:-last}"
out="docs/img/first-report.png"
srperf="${SRPERF:-.venv/bin/srperf}"

browser="$(command -v chromium || command -v chromium-browser || true)"
if [[ -z "$browser" ]]; then
    echo "docs_images.sh: chromium not found (scripts/install.sh installs it)" >&2
    exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf -- "$work"' EXIT

"$srperf" report "$run" --results "$results" -o "$work/report.html" >/dev/null
mkdir -p "$(dirname "$out")"
"$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --hide-scrollbars --force-device-scale-factor=1 --user-data-dir="$work/profile" \
    --window-size=1100,900 --screenshot="$work/shot.png" "file://$work/report.html" \
    >/dev/null 2>&1
mv -- "$work/shot.png" "$out"
echo "wrote $out (the report of run $run in $results)"
