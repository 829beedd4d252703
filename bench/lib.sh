# The set-up and helpers of the benchmark scripts (scripts/bench-http.sh, scripts/bench-publicid.sh,
# bench/skeleton.sh, bench/gateway-split.sh, bench/gateway-rate.sh, bench/saturated.sh), sourced
# from the repository's root; bench/README.md says how to read what they print. Sourcing it sets
# up a run: the Go the project pins (.go-version: fetched from the Go module proxy on first use);
# the environment's settings as $dur (BENCH_DURATION, default 2s), $conns (BENCH_CONNS, 16),
# $rounds (BENCH_ROUNDS, 5), $instr_n (BENCH_INSTR_REQUESTS, 2000) and $passes (BENCH_PASSES, 2);
# and $out, a scratch directory that the exit removes, with the servers the script left running in
# the background stopped first, and its callgrind dumps and logs (cg.*) copied to BENCH_CG_KEEP
# when that names a folder (for callgrind_annotate).
export GOTOOLCHAIN="$(cat .go-version)"
dur=${BENCH_DURATION:-2s}
conns=${BENCH_CONNS:-16}
rounds=${BENCH_ROUNDS:-5}
instr_n=${BENCH_INSTR_REQUESTS:-2000}
passes=${BENCH_PASSES:-2}
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; sleep 0.3; [[ -z ${BENCH_CG_KEEP:-} ]] || cp "$out"/cg.* "$BENCH_CG_KEEP"/ 2>/dev/null || true; rm -rf "$out"' EXIT

# build_services PKG…: builds each main package (a path from the repository's root) into $out,
# named after its folder. With BENCH_AT set to a commit, from that commit's tree (git archive into
# $out/at, built there with the pinned Go) instead of the working tree: the same harness, with its
# baselines and floors built from today's tree, measures an older build of the services, the
# "before" of a change. It says which build it measures on its first line of output.
build_services() {
  local src=. flags=
  if [[ -n ${BENCH_AT:-} ]]; then
    src=$out/at flags=-buildvcs=false
    if [[ ! -d $src ]]; then
      mkdir "$src"
      git archive "$BENCH_AT" | tar -x -C "$src"
    fi
    echo "services built at $(git rev-parse --short "$BENCH_AT") (BENCH_AT); baselines and floors at the working tree"
  else
    echo "services built at the working tree ($(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . 2>/dev/null || echo ', with changes'))"
  fi
  local p
  for p; do (cd "$src" && GOFLAGS=$flags go build -o "$out/$(basename "$p")" "./$p"); done
}

# cpu_ticks PID: the CPU time (user + system, in clock ticks) the process has used so far.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# cpu_wait_ns PID: the time (ns) the process's threads have waited for a CPU while runnable so far
# (the second field of each thread's /proc schedstat; 0 where it cannot be read).
cpu_wait_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{w += $2} END {printf "%.0f\n", w}'; }

# gc_count FILE: the garbage collections a server started with GODEBUG=gctrace=1 has logged to FILE
# (its stderr) so far; 0 without FILE.
gc_count() { if [[ -n $1 && -f $1 ]]; then grep -c '^gc ' "$1" || true; else echo 0; fi; }

# Durable writes are bounded by fsyncs, and how long an fsync takes on a virtual machine's disk
# moves from second to second (here by four times within a minute), so the write benchmarks also
# count the store's fsync calls: writes per fsync does not depend on the disk's speed.
# have_fsync_count says whether perf can count a process's fsync and fdatasync calls (the
# syscalls tracepoints; perf is Debian's linux-perf).
have_fsync_count() {
  command -v perf >/dev/null && perf stat -e syscalls:sys_enter_fdatasync -p $$ -o /dev/null -- true >/dev/null 2>&1
}

# with_fsyncs PID FILE CMD…: runs CMD (its output passes through) while perf counts the fsync and
# fdatasync calls of process PID, and writes their number to FILE (empty without perf; see
# have_fsync_count, whose answer FSYNC_COUNT=1 carries).
with_fsyncs() {
  local pid=$1 file=$2
  shift 2
  if [[ ${FSYNC_COUNT:-} != 1 ]]; then
    : >"$file"
    "$@"
    return
  fi
  perf stat -x, -e syscalls:sys_enter_fdatasync,syscalls:sys_enter_fsync -p "$pid" -o "$file.perf" -- "$@"
  awk -F, '$1 ~ /^[0-9]+$/ {n += $1} END {print n + 0}' "$file.perf" >"$file"
}

# measure NAME ROUND PID LOADGEN-ARGS…: one timed run of loadgen on core 1 against the server PID,
# appended to $out/results.jsonl with the server's CPU time per request and how long its threads
# waited for a CPU during the run (server_cpu_wait_ms; loadgen gives its own, loadgen_cpu_wait_ms:
# a run where either waited is one the machine's other load disturbed). With GCLOG set to the
# server's stderr (started with GODEBUG=gctrace=1), also its garbage collections (server_gcs).
# With STORE_PID set (the server's Redis), also that process's CPU time per request
# (store_cpu_us_per_req) and its fsync calls during the run (store_fsyncs; see with_fsyncs).
measure() {
  local name=$1 round=$2 pid=$3 t0 t1 w0 w1 g0 g1 s0 s1 res
  shift 3
  g0=$(gc_count "${GCLOG:-}")
  w0=$(cpu_wait_ns "$pid")
  s0=$(store_ticks)
  t0=$(cpu_ticks "$pid")
  if [[ -n ${STORE_PID:-} ]]; then
    res=$(with_fsyncs "$STORE_PID" "$out/fsyncs" taskset -c 1 "$out/loadgen" -c "$conns" -d "$dur" "$@")
  else
    res=$(taskset -c 1 "$out/loadgen" -c "$conns" -d "$dur" "$@")
  fi
  t1=$(cpu_ticks "$pid")
  s1=$(store_ticks)
  w1=$(cpu_wait_ns "$pid")
  g1=$(gc_count "${GCLOG:-}")
  python3 -c '
import json, os, sys
r = json.loads(sys.argv[1]); ticks = int(sys.argv[2]); hz = os.sysconf("SC_CLK_TCK")
r["server_cpu_us_per_req"] = ticks / hz / max(r["requests"], 1) * 1e6
r["server_cpu_wait_ms"] = int(sys.argv[5]) / 1e6
if sys.argv[6]:
    r["server_gcs"] = int(sys.argv[6])
if sys.argv[7]:
    r["store_cpu_us_per_req"] = int(sys.argv[7]) / hz / max(r["requests"], 1) * 1e6
    fsyncs = open(sys.argv[8]).read().strip()
    if fsyncs:
        r["store_fsyncs"] = int(fsyncs)
r["name"], r["round"] = sys.argv[3], int(sys.argv[4])
print(json.dumps(r))' "$res" "$((t1 - t0))" "$name" "$round" "$((w1 - w0))" "${GCLOG:+$((g1 - g0))}" \
    "${STORE_PID:+$((s1 - s0))}" "$out/fsyncs" >>"$out/results.jsonl"
}

# store_ticks: cpu_ticks of STORE_PID, or nothing without it.
store_ticks() { if [[ -n ${STORE_PID:-} ]]; then cpu_ticks "$STORE_PID"; fi; }

# record NAME ROUND JSON: a result measured another way (redis-benchmark), as measure writes it.
record() {
  python3 -c '
import json, sys
r = json.loads(sys.argv[1]); r["name"], r["round"] = sys.argv[2], int(sys.argv[3]); print(json.dumps(r))' "$3" "$1" "$2" >>"$out/results.jsonl"
}

# free_ports [N]: N (default 1) distinct loopback TCP ports nothing listens on now, on one line
# (the kernel's choice of ephemeral ports, all held until each is chosen, then released), so that
# a benchmark's servers never collide with anything else on the machine. The scripts pick every
# port this way.
free_ports() {
  python3 -c '
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))' "${1:-1}"
}

# wait_healthy URL [TRIES]: until URL answers 2xx (0.1 s apart, 100 tries by default); a URL
# tcp://HOST:PORT waits until the port accepts a connection (a server with no HTTP endpoint).
wait_healthy() {
  local check=(curl -fs "$1")
  if [[ $1 == tcp://* ]]; then
    local hp=${1#tcp://}
    check=(bash -c "exec 3<>/dev/tcp/${hp%:*}/${hp##*:}")
  fi
  for _ in $(seq "${2:-100}"); do "${check[@]}" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "bench: $1 did not answer" >&2
  return 1
}

# Instruction counts, which do not depend on the machine's load: the server runs under valgrind's
# callgrind (serialised on one thread, GOMAXPROCS=1, no asynchronous preemption), takes a warm-up,
# then its counters are zeroed, loadgen sends a fixed number of requests from one worker, and the
# counters are dumped. Instructions per request = the dump's total / the requests: the whole
# process's user-space instructions over that window (handler, net/http, runtime and GC), not the
# kernel's. Needs valgrind (scripts/setup.sh installs it); without it the counts are skipped.
have_valgrind() { command -v valgrind >/dev/null && command -v callgrind_control >/dev/null; }

# cg_start NAME HEALTH-URL CMD…: start CMD under callgrind on core 0, wait for HEALTH-URL; sets
# CG_PID.
cg_start() {
  local name=$1 health=$2
  shift 2
  GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1 taskset -c 0 valgrind --tool=callgrind --dump-instr=no \
    --callgrind-out-file="$out/cg.$name" "$@" >"$out/cg.$name.log" 2>&1 &
  CG_PID=$!
  wait_healthy "$health" 600
}

# cg_count NAME PID N LOADGEN-ARGS…: instructions per request of the server PID over N requests
# from one worker (after a warm-up of N/10), appended to $out/instr.jsonl.
cg_count() {
  local name=$1 pid=$2 n=$3 dump
  shift 3
  taskset -c 1 "$out/loadgen" -c 1 -n $((n / 10)) "$@" >/dev/null
  callgrind_control -z "$pid" >/dev/null 2>&1
  taskset -c 1 "$out/loadgen" -c 1 -n "$n" "$@" >"$out/cg.last.json"
  callgrind_control -d "$pid" >/dev/null 2>&1
  dump=$(ls -t "$out"/cg.*.[0-9]* | head -1)
  python3 -c '
import json, sys
total = 0
for line in open(sys.argv[1]):
    if line.startswith("totals:") or line.startswith("summary:"):
        total = int(line.split()[1])
r = json.load(open(sys.argv[2]))
print(json.dumps({"name": sys.argv[3], "instr_per_req": total / max(int(sys.argv[4]), 1), "errors": r["errors"]}))' \
    "$dump" "$out/cg.last.json" "$name" "$n" >>"$out/instr.jsonl"
}

# cg_stop PID: stop a server started by cg_start.
cg_stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }
