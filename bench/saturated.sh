#!/usr/bin/env bash
# The saturated v2 generator's user-space instructions per ID against the unsaturated one's, and
# the goal of at most 1.2× (bench/README.md, "In-process").
#
# Callgrind slows the process some 50 times: under it a millisecond's 1,024 IDs take about 3 ms,
# so the generator never uses up a millisecond there and never waits, and the spin of a wait
# that did would take far fewer steps (a pause and a clock read) than at native speed. perf
# cannot count instructions on this virtual machine (no PMU). So the saturated figure is put
# together from counts that do not depend on speed and counts taken at native speed
# (libs/idcore's wait_test.go):
#   unsaturated   instructions per ID of one goroutine's Next on the system clock under
#                 callgrind, where it runs below the limit (libs/idcore/e2e BenchmarkNext/v2)
#   wait          instructions of one wait for the next millisecond under callgrind
#                 (BenchmarkWait), less its spin's steps times one step's (BenchmarkSpinStep)
#   native        the IDs per wait and the spin's steps per wait of BenchmarkSaturatedWait
#                 (BenchmarkSaturated/v2/goroutines=1 with its waits counted), 2 s at native speed,
#                 SAT_RUNS times (default 3), with its rate (of the limit) and CPU (cores)
#   saturated     unsaturated + (wait + steps per wait × one step) / IDs per wait, for each run
# Each instruction count is the test binary's whole-process total at two -test.benchtime counts,
# the difference over the operations between them (GOMAXPROCS=1, no asynchronous preemption).
# Usage: bench/saturated.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
runs=${SAT_RUNS:-3}
if ! have_valgrind; then
  echo "valgrind is not installed (scripts/setup.sh installs it)" >&2
  exit 1
fi
go test -c -o "$out/idcore.test" ./libs/idcore
go test -c -o "$out/e2e.test" ./libs/idcore/e2e

# cg BIN BENCH N: "instructions metric…" of BIN's BENCH at -test.benchtime Nx under callgrind.
cg() {
  GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
    "$1" -test.run '^$' -test.bench "$2" -test.benchtime "${3}x" >"$out/cg.log" 2>&1
  python3 - "$out/cg.log" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
total = int(re.search(r"Collected : (\d+)", text).group(1))
line = [l for l in text.splitlines() if l.startswith("Benchmark")][-1].split()
metric = float(line[line.index("steps/wait") - 1]) if "steps/wait" in line else 0.0
print(total, metric)
EOF
}

# per_op BIN BENCH LOW HIGH: instructions per operation over the HIGH-LOW operations between the
# two counts, and the metric's mean over the same operations.
per_op() {
  read -r lo_i lo_m < <(cg "$1" "$2" "$3")
  read -r hi_i hi_m < <(cg "$1" "$2" "$4")
  python3 -c 'import sys; a=list(map(float, sys.argv[1:])); n=a[5]-a[4]
print((a[2]-a[0])/n, (a[3]*a[5]-a[1]*a[4])/n)' "$lo_i" "$lo_m" "$hi_i" "$hi_m" "$3" "$4"
}

read -r unsat _ < <(per_op "$out/e2e.test" '^BenchmarkNext$/^v2$' 2000 102000)
read -r step _ < <(per_op "$out/idcore.test" '^BenchmarkSpinStep$' 2000 22000)
read -r wait wait_steps < <(per_op "$out/idcore.test" '^BenchmarkWait$' 200 2200)

"$out/idcore.test" -test.run '^$' -test.bench '^BenchmarkSaturatedWait$' -test.benchtime 2s \
  -test.count "$runs" | grep '^BenchmarkSaturatedWait' >"$out/native.txt"

python3 - "$unsat" "$step" "$wait" "$wait_steps" "$out/native.txt" <<'EOF'
import statistics, sys
unsat, step, wait, wait_steps = map(float, sys.argv[1:5])
fixed = wait - wait_steps * step
print(f"unsaturated (BenchmarkNext/v2 under callgrind): {unsat:,.1f} instructions per ID")
print(f"one spin step: {step:,.0f}; one wait: {wait:,.0f} at {wait_steps:.1f} steps "
      f"under callgrind, {fixed:,.0f} without its spin")
sats = []
for line in open(sys.argv[5]):
    f = line.split()
    m = {f[i + 1]: float(f[i]) for i in range(2, len(f) - 1, 2)}
    sat = unsat + (fixed + m["steps/wait"] * step) / m["ids/wait"]
    sats.append(sat)
    print(f"saturated run: {m['of-limit'] * 100:.2f} % of the limit at {m['cores']:.3f} core, "
          f"{m['ids/wait']:,.0f} IDs and {m['steps/wait']:.1f} spin steps per wait: "
          f"{sat:,.1f} instructions per ID ({sat / unsat:.3f}×)")
sat = statistics.median(sats)
ratio = sat / unsat
print(f"saturated {sat:,.1f} / unsaturated {unsat:,.1f} instructions per ID = {ratio:.3f}× "
      f"(median of {len(sats)} runs; goal ≤ 1.2×): {'met' if ratio <= 1.2 else 'not met'}")
EOF
