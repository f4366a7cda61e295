#!/usr/bin/env bash
# The pictures of README.md and docs/, taken in headless Chromium:
#   docs/img/first-report.png  the HTML report of a run (by default the last run of
#                              srperf-results, i.e. what `make run` just measured);
#   docs/img/trend.png         the trend page of 30 synthetic nights (a MODEL:
#                              scripts/docs_trend_store.py), End stepping down at night 20;
#   docs/img/latency.png and   with LATENCY_RESULTS=DIR: the latency and profile sections
#   docs/img/profile.png       of the last run there, a run of
#                              `srperf run experiments/linux_latency.yaml --set profile.enabled=true`.
#
#   make run && scripts/docs_images.sh [RESULTS_DIR [RUN]]
#
# Needs chromium (scripts/install.sh installs it). Run as root it uses --no-sandbox,
# as the report tests do, with a profile directory of its own that is removed at the end.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
results="${1:-srperf-results}"
run="${2:-last}"
srperf="${SRPERF:-.venv/bin/srperf}"
python="${PYTHON:-.venv/bin/python}"

browser="$(command -v chromium || command -v chromium-browser || true)"
if [[ -z "$browser" ]]; then
    echo "docs_images.sh: chromium not found (scripts/install.sh installs it)" >&2
    exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf -- "$work"' EXIT

# only SECTION PAGE [TAG]: keep only the report's section under <h2 id=SECTION>, without
# its TAG elements (e.g. TABLE), in a copy PAGE.SECTION.html
only() {
    local keep="<script>(function(){var k=false;Array.from(document.body.children).forEach("
    keep+="function(e){if(e.tagName==='H2')k=(e.id==='$1');if(!k||e.tagName==='${3:-NONE}'){"
    keep+="if(e.tagName!=='SCRIPT')e.style.display='none';}});})();</script></body>"
    sed "s#</body>#$keep#" "$2" > "$2.$1.html"   # no '&' in $keep: sed's whole match
}

# shot PAGE OUT WIDTH HEIGHT: a screenshot of a file:// page
shot() {
    "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --hide-scrollbars --force-device-scale-factor=1 --user-data-dir="$work/profile" \
        --window-size="$3,$4" --screenshot="$work/shot.png" "file://$1" >/dev/null 2>&1
    mkdir -p "$(dirname "$2")"
    mv -- "$work/shot.png" "$2"
    echo "wrote $2"
}

"$srperf" report "$run" --results "$results" -o "$work/report.html" >/dev/null
shot "$work/report.html" docs/img/first-report.png 1100 900

"$python" scripts/docs_trend_store.py "$work/trend-store" >/dev/null
"$srperf" trend --results "$work/trend-store" --html "$work/trend.html" >/dev/null
shot "$work/trend.html" docs/img/trend.png 1100 800

if [[ -n "${LATENCY_RESULTS:-}" ]]; then
    "$srperf" report last --results "$LATENCY_RESULTS" -o "$work/latency.html" >/dev/null
    only latency "$work/latency.html" TABLE
    only profiles "$work/latency.html"
    shot "$work/latency.html.latency.html" docs/img/latency.png 1100 750
    shot "$work/latency.html.profiles.html" docs/img/profile.png 1100 750
fi
