#!/bin/sh
# Makes docs/img/report.png, the README's picture of the HTML report: the
# word-pop seed case (one /popularity request on a slow disk) recorded with
# `whyslow run --html`, rendered by headless Chromium at 1280 px. Needs root
# (BPF, a slow loop disk) and `make build`; on a shared machine run it under
# the privileged lock: flock /tmp/whyslow-priv.lock scripts/report-screenshot.sh
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$repo/bin/slowdisk" --write-bps 3M --dirty-bytes 4M --dirty-background-bytes 2M -- \
	"$repo/bin/whyslow" run --html "$tmp/report.html" -- "$repo/examples/word-pop/one-request.sh"
mkdir -p "$repo/docs/img"
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --proxy-server=127.0.0.1:9 \
	--user-data-dir="$tmp/profile" --window-size=1280,1500 --virtual-time-budget=5000 \
	--screenshot="$repo/docs/img/report.png" "file://$tmp/report.html" 2>/dev/null
cp "$tmp/report.html" "${REPORT_HTML:-/dev/null}"
echo "wrote docs/img/report.png" >&2
