#!/usr/bin/env bash
# make run as a user meets it, on its fixed ports with a state directory of its own: the stack
# comes up, issues IDs and writes its callers' client configuration; a second run says one is running and leaves the first one's logs
# alone; a SIGTERM to the process that started it (make, here a shell) stops every service; a
# service that cannot start stops the run with its log instead of a "running" banner.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN="$(cat .go-version)"

for port in 7000 7001 7002 7003 7004 7005 7006; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "test-run-local: SKIPPED: port $port is in use (is a make run up?); stop it to run this test" >&2
    exit 0
  fi
done

work=$(mktemp -d)
starter=""
fail() {
  echo "test-run-local: FAIL: $*" >&2
  for f in "$work"/*.out; do echo "--- $f" >&2; cat "$f" >&2; done
  exit 1
}
cleanup() {
  if [ -n "$starter" ]; then kill -TERM "$starter" 2>/dev/null || true; fi
  if [ -f "$work/state/run.pid" ]; then kill -TERM "$(cat "$work/state/run.pid")" 2>/dev/null || true; fi
  sleep 1
  rm -rf "$work"
}
trap cleanup EXIT

# The first stack, started by a shell that stands in for make (": " keeps bash from exec'ing).
IDGEN_RUN_STATE="$work/state" setsid bash -c 'scripts/run-local.sh; :' >"$work/first.out" 2>&1 &
starter=$!
for _ in $(seq 1 240); do
  grep -q "Ctrl-C stops everything" "$work/first.out" && break
  kill -0 "$starter" 2>/dev/null || fail "the first run exited before it was ready"
  sleep 0.5
done
grep -q "Ctrl-C stops everything" "$work/first.out" || fail "the first run never printed that it is running"
curl -fsS -X POST http://127.0.0.1:7001/v1/ids -H 'Content-Type: application/json' -d '{}' | grep -q '"id":"' || fail "the us-east-1 generator issues no ID"
# The callers' client configuration, from the topology module's plan: each region's own
# generator first, then its peer's.
python3 - "$work/state/client_config.json" <<'PY' || fail "client_config.json does not give each region its own generator, then its peer's"
import json, sys
cc = json.load(open(sys.argv[1]))
assert cc["us-east-1"]["endpoints"] == ["http://127.0.0.1:7001", "http://127.0.0.1:7002"], cc
assert cc["eu-west-1"]["endpoints"] == ["http://127.0.0.1:7002", "http://127.0.0.1:7001"], cc
PY

logdir=$(readlink -f "$work/state/logs/latest")
before=$(cat "$logdir"/*.log | wc -c)
code=0
IDGEN_RUN_STATE="$work/state" scripts/run-local.sh >"$work/second.out" 2>&1 || code=$?
[ "$code" = 1 ] || fail "a second run exited $code, want 1"
grep -q "already running" "$work/second.out" || fail "a second run does not say a stack is running"
grep -q "idgen is running" "$work/second.out" && fail "a second run printed the running banner"
[ "$(readlink -f "$work/state/logs/latest")" = "$logdir" ] || fail "a second run moved logs/latest"
after=$(cat "$logdir"/*.log | wc -c)
[ "$after" -ge "$before" ] || fail "a second run truncated the first run's logs ($before -> $after bytes)"
curl -fsS http://127.0.0.1:7001/healthz >/dev/null || fail "a second run disturbed the first stack"

# SIGTERM to the starter alone: every service stops and the generators release their leases.
kill -TERM "$starter"
for _ in $(seq 1 30); do
  curl -fsS -m 1 http://127.0.0.1:7001/healthz >/dev/null 2>&1 || break
  sleep 0.5
done
sleep 1
for port in 7000 7001 7002 7003 7004 7005 7006; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then fail "port $port still answers after SIGTERM to the starter"; fi
done
grep -q "release their leases" "$work/first.out" || fail "the stack did not say it stopped"
grep -q '"lease released"\|lease released\|released' "$logdir"/generator-us-east-1.log || fail "the us-east-1 generator did not log its release"
starter=""

# Ctrl-C at a terminal: SIGINT to the whole process group, the services included. The run says
# it stopped and exits 0, and the generators release their leases. A driver in Python starts it in
# a session of its own with SIGINT at its default (a shell's background jobs ignore SIGINT, and
# bash cannot undo that).
ctrl_c() { # SECONDS_BEFORE: start a run, press Ctrl-C, print the run's exit status last
  IDGEN_RUN_STATE="$work/state" python3 - "$1" <<'PY'
import os, signal, subprocess, sys, time
p = subprocess.Popen(["scripts/run-local.sh"], start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                     preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
out = b""
deadline = time.time() + 120
os.set_blocking(p.stdout.fileno(), False)
while b"Ctrl-C stops everything" not in out and time.time() < deadline and p.poll() is None:
    out += p.stdout.read() or b""
    time.sleep(0.1)
time.sleep(float(sys.argv[1]))
os.killpg(p.pid, signal.SIGINT)
os.set_blocking(p.stdout.fileno(), True)
out += p.stdout.read()
print(out.decode(errors="replace"))
print("exit", p.wait())
PY
}
logs_before=$(ls "$work/state/logs" | wc -l)
ctrl_c 0.5 >"$work/ctrl-c.out" 2>&1
tail -n 1 "$work/ctrl-c.out" | grep -qx "exit 0" || fail "Ctrl-C: the run did not exit 0"
grep -q "run-local: stopped" "$work/ctrl-c.out" || fail "Ctrl-C: the run did not say it stopped"
grep -q "exited with status" "$work/ctrl-c.out" && fail "Ctrl-C: the run reported a service as failed"
ctrl_logs=$(readlink -f "$work/state/logs/latest")
[ "$(ls "$work/state/logs" | wc -l)" -gt "$logs_before" ] || fail "Ctrl-C: no new run"
grep -q 'lease released\|released' "$ctrl_logs"/generator-us-east-1.log || fail "Ctrl-C: the us-east-1 generator did not release its lease"

# A service that really dies fails the run, with the end of its log.
IDGEN_RUN_STATE="$work/state" setsid bash -c 'scripts/run-local.sh; echo "exit $?"' >"$work/died.out" 2>&1 &
starter=$!
for _ in $(seq 1 240); do
  grep -q "Ctrl-C stops everything" "$work/died.out" && break
  kill -0 "$starter" 2>/dev/null || fail "the run to kill a service in exited before it was ready"
  sleep 0.5
done
pkill -KILL -f "^$work/state/bin/public-id " || fail "no public-id process to kill"
for _ in $(seq 1 30); do grep -q "^exit " "$work/died.out" && break; sleep 0.5; done
grep -qx "exit 1" "$work/died.out" || fail "a run whose public-id was killed did not exit 1"
grep -q "public-id exited with status 137" "$work/died.out" || fail "a run whose public-id was killed does not name it"
starter=""

# A service that cannot start: the registry's database path is a directory.
rm -f "$work/state/registry.db" "$work/state/registry.db-wal" "$work/state/registry.db-shm"
mkdir "$work/state/registry.db"
code=0
IDGEN_RUN_STATE="$work/state" scripts/run-local.sh >"$work/broken.out" 2>&1 || code=$?
[ "$code" = 1 ] || fail "a run whose registry cannot start exited $code, want 1"
grep -q "registry exited before it became ready" "$work/broken.out" || fail "a run whose registry cannot start does not say so"
grep -q "idgen is running" "$work/broken.out" && fail "a run whose registry cannot start printed the running banner"
echo "test-run-local: ok (start, client_config written, second run refused, SIGTERM to the starter stops all, Ctrl-C stops all and exits 0, a killed service fails the run, a failed start reported)"
