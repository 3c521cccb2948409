#!/bin/sh
# recon report in a real browser (issue 15): Debian's chromium, headless, loads
# the HTML report from a store built through real runs (tests/sh/report_store.sh),
# takes screenshots at desktop and phone widths ($RECON_WORK/report-*.png), and
# the rendered DOM must hold every chart with drawn marks. Without chromium the
# test is skipped (exit 77), under CI=true it fails.
. "$(dirname "$0")/lib.sh"
if ! command -v chromium > /dev/null 2>&1; then
	if [ "${CI:-}" = true ]; then
		echo "not ok - chromium is missing (scripts/install-deps.sh --test installs it)"
		exit 1
	fi
	echo "ok - chromium is missing # SKIP"
	exit 77
fi
. "$(dirname "$0")/report_store.sh"
export RECON_NOW=2024-03-05T03:00:00Z
expect_exit 0 "report --date 2024-03-04 (a failed day: every chart has marks)" \
	"$RECON" report --job "$JOB" --date 2024-03-04 --output "$WORK/report.html"
browse() {
	profile=$(mktemp -d)
	set +e
	timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
		--disable-component-update --no-first-run --user-data-dir="$profile" \
		--enable-logging=stderr --v=0 "$@" "file://$WORK/report.html" 2> "$WORK/browser.err"
	rc=$?
	set -e
	rm -rf "$profile"
	return $rc
}
check "chromium renders the page (dump-dom)" sh -c "$(command -v chromium) --version > /dev/null"
browse --dump-dom > "$WORK/dom.html" || not_ok "chromium --dump-dom failed"
check "the DOM is the whole page" grep -q '</footer>' "$WORK/dom.html"
check "no console or load error" sh -c "! grep -Ei 'CONSOLE|Uncaught|net::ERR|Failed to load' '$WORK/browser.err'"
check "every chart's SVG has drawn marks" python3 - "$WORK/dom.html" << 'PY'
import sys
from html.parser import HTMLParser
class P(HTMLParser):
    def __init__(self):
        super().__init__()
        self.chart = None
        self.marks = {}
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "figure" and "chart" in (a.get("class") or ""):
            self.chart = a.get("id")
            self.marks[self.chart] = 0
        elif self.chart and "mark" in (a.get("class") or "").split():
            self.marks[self.chart] += 1
    handle_startendtag = handle_starttag
    def handle_endtag(self, tag):
        if tag == "figure":
            self.chart = None
p = P()
p.feed(open(sys.argv[1], encoding="utf-8").read())
want = ["chart-differences", "chart-money", "chart-open", "chart-runs"]
print("  marks per chart:", p.marks)
sys.exit(0 if sorted(p.marks) == sorted(want) and all(p.marks[c] > 0 for c in want) else 1)
PY
check "the failed day's run is drawn red" grep -q 'class="mark failed"' "$WORK/dom.html"
browse --screenshot="$WORK/report-desktop.png" --window-size=1280,2400 > /dev/null ||
	not_ok "desktop screenshot"
browse --screenshot="$WORK/report-phone.png" --window-size=390,3200 > /dev/null ||
	not_ok "phone screenshot"
for f in desktop phone; do
	check "$f screenshot is a PNG" sh -c "head -c 8 '$WORK/report-$f.png' | od -An -c | grep -q 'P   N   G'"
done
finish
