#!/usr/bin/env bash
# Times `chat-autoparser check` per template (release build, with the
# in-process GBNF checker: --features gbnf-check) over the shipped
# templates/ and, when present, ../shared/corpus/llamacpp; issue 29's target
# is under 100 ms each without --engines.
#
# Per template: the command's own clock (`time_ms` of `check DIR --json`:
# load, analysis, probes, exports, lint, prompt side), wall time on a
# possibly busy machine. Per folder: the process's user+system CPU time
# divided by the count (/usr/bin/time), which other jobs on the machine do
# not inflate. `--strict` exits 1 when a template's time_ms is over the limit
# (BENCH_CHECK_LIMIT_MS, default 100).
set -euo pipefail
cd "$(dirname "$0")/.."
LIMIT="${BENCH_CHECK_LIMIT_MS:-100}"
cargo build --release --quiet -p chat-autoparser-cli --features gbnf-check
BIN=target/release/chat-autoparser
over=0
for dir in templates ../shared/corpus/llamacpp; do
    if [ ! -d "$dir" ]; then
        echo "$dir: absent, skipped"
        continue
    fi
    out="$(mktemp)"
    cpu="$( { /usr/bin/time -f '%U %S' "$BIN" check "$dir" --json >"$out" || true; } 2>&1 | tail -n1)"
    n=$(python3 - "$out" "$LIMIT" "$dir" "$cpu" <<'PY'
import json, statistics, sys
path, limit, name, cpu = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
rows = [json.loads(l) for l in open(path) if l.strip()]
times = sorted(r["time_ms"] for r in rows if "time_ms" in r)
user, system = (float(x) for x in cpu.split())
slow = [f'{r["template"]} {r["time_ms"]} ms' for r in rows if r.get("time_ms", 0) > limit]
verdicts = {}
for r in rows:
    v = r.get("verdict", "error")
    verdicts[v] = verdicts.get(v, 0) + 1
print(f"{name}: {len(times)} templates; time_ms median {statistics.median(times):.0f}, "
      f"p90 {times[int(len(times) * 0.9) - 1]}, max {times[-1]}; "
      f"CPU {1000 * (user + system) / len(times):.0f} ms per template; verdicts {verdicts}",
      file=sys.stderr)
for s in slow:
    print(f"  over {limit} ms: {s}", file=sys.stderr)
print(len(slow))
PY
)
    over=$((over + n))
    rm -f "$out"
done
if [ "${1:-}" = "--strict" ] && [ "$over" -gt 0 ]; then
    exit 1
fi
