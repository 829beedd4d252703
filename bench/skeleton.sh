#!/usr/bin/env bash
# What each setting of the services' http.Server skeleton (libs/svc/serve) costs the bare handler
# (bench/cmd/bare): the services' skeleton, net/http's default server (-skeleton default, h2c
# enabled), and the skeleton with one setting left off at a time (-without timeouts, h2c,
# h2c-pool, gc) and with all but h2c left off. First, where valgrind is installed (BENCH_INSTR=0
# skips it), instructions per request of each under callgrind (bench/lib.sh's cg_start and
# cg_count, BENCH_INSTR_REQUESTS requests, default 2000, BENCH_PASSES times, default 2): -mode
# rest (HTTP/1.1) from one worker, -mode get-h2c from one worker and then from 16. Then, unless
# BENCH_ROUNDS=0, interleaved rounds (BENCH_ROUNDS, default 5, of BENCH_DURATION, default 2s,
# BENCH_CONNS workers, default 16): each variant's server CPU per request right after the
# services' skeleton's, and the pool's at one worker too. bench/README.md ("The skeleton's own
# cost") says how to read the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
(cd bench && go build -o "$out/bare" ./cmd/bare && go build -o "$out/loadgen" ./cmd/loadgen)

# NAME:FLAGS of each variant (FLAGS with commas; a plain list of words).
variants=(services: default:-skeleton=default no-timeouts:-without=timeouts no-h2c:-without=h2c
  no-h2c-pool:-without=h2c-pool no-gc:-without=gc no-all-but-h2c:-without=timeouts,h2c-pool,gc)
flags() { local f=${1#*:}; [[ -n $f ]] && echo "$f"; true; }

if [[ ${BENCH_INSTR:-1} != 0 ]] && have_valgrind; then
  echo "instruction counts under callgrind ($instr_n requests each, $passes passes)" >&2
  for pass in $(seq "$passes"); do
    for v in "${variants[@]}"; do
      name=${v%%:*}
      u=http://127.0.0.1:$(free_ports)
      # shellcheck disable=SC2046
      cg_start "$name" "$u/healthz" "$out/bare" -listen "${u#http://}" $(flags "$v")
      cg_count "$name/http" "$CG_PID" "$instr_n" -url "$u" -mode rest
      if [[ $name != no-h2c ]]; then
        cg_count "$name/h2c" "$CG_PID" "$instr_n" -url "$u" -mode get-h2c
        cg_count "$name/h2c-16" "$CG_PID" "$instr_n" -url "$u" -mode get-h2c -c 16
      fi
      cg_stop "$CG_PID"
    done
  done
elif [[ ${BENCH_INSTR:-1} != 0 ]]; then
  echo "valgrind is not installed (scripts/setup.sh installs it): no instruction counts" >&2
fi

if [[ $rounds != 0 ]]; then
  declare -A pid url
  ports=($(free_ports ${#variants[@]}))
  i=0
  for v in "${variants[@]}"; do
    name=${v%%:*} url[$name]=http://127.0.0.1:${ports[$i]}
    # shellcheck disable=SC2046
    taskset -c 0 "$out/bare" -listen "${url[$name]#http://}" $(flags "$v") &
    pid[$name]=$!
    i=$((i + 1))
  done
  for v in "${variants[@]}"; do
    name=${v%%:*}
    wait_healthy "${url[$name]}/healthz"
    taskset -c 1 "$out/loadgen" -url "${url[$name]}" -mode rest -c "$conns" -d 1s >/dev/null
  done
  for r in $(seq "$rounds"); do
    echo "round $r of $rounds" >&2
    for v in "${variants[@]:1}"; do
      name=${v%%:*}
      measure "$name/http/base" "$r" "${pid[services]}" -url "${url[services]}" -mode rest
      measure "$name/http" "$r" "${pid[$name]}" -url "${url[$name]}" -mode rest
      [[ $name == no-h2c ]] && continue
      measure "$name/h2c/base" "$r" "${pid[services]}" -url "${url[services]}" -mode get-h2c
      measure "$name/h2c" "$r" "${pid[$name]}" -url "${url[$name]}" -mode get-h2c
    done
    # The pool at one connection (the rounds above use BENCH_CONNS).
    measure "no-h2c-pool/h2c-1/base" "$r" "${pid[services]}" -url "${url[services]}" -mode get-h2c -c 1
    measure "no-h2c-pool/h2c-1" "$r" "${pid[no-h2c-pool]}" -url "${url[no-h2c-pool]}" -mode get-h2c -c 1
  done
fi
python3 bench/rounds.py skeleton "$out/results.jsonl" "$out/instr.jsonl"
