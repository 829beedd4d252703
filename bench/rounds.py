#!/usr/bin/env python3
"""Summary of interleaved benchmark rounds (scripts/bench-http.sh, scripts/bench-publicid.sh,
bench/skeleton.sh).

Each round measures every case right after its baseline (A, B, A, B ...), so a ratio is taken
between two runs seconds apart, and the rounds give the ratio's median and its spread (min-max).
Usage: rounds.py http|publicid|skeleton RESULTS.jsonl [INSTR.jsonl]
"""
import json
import statistics
import sys


def load(path):
    try:
        return [json.loads(line) for line in open(path) if line.strip()]
    except FileNotFoundError:
        return []


def spread(values, fmt="%.2f"):
    """'median [min-max]' of values."""
    if not values:
        return "-"
    return (fmt + " [" + fmt + "-" + fmt + "]") % (statistics.median(values), min(values), max(values))


def by_round(rows):
    out = {}
    for r in rows:
        out.setdefault(r["round"], {})[r["name"]] = r
    return [out[k] for k in sorted(out)]


def median_of(rounds, name, key):
    vals = [rd[name][key] for rd in rounds if name in rd]
    return statistics.median(vals) if vals else float("nan")


def instr_table(instr, pairs, second=None):
    """Each case's instructions per request over its baseline's; with second (a baseline's name to
    a second baseline's), also over the second's."""
    if not instr:
        print("\ninstructions per request: not measured (valgrind missing, or BENCH_INSTR=0)")
        return
    got = {r["name"]: r["instr_per_req"] for r in instr}
    print("\ninstructions per request of the server (callgrind, one worker, fixed count; independent of load):")
    head = "%-26s %14s %-17s %14s %8s" % ("case", "instr/req", "baseline", "its instr/req", "ratio")
    print(head + (" %-17s %14s %8s" % ("second baseline", "its instr/req", "ratio") if second else ""))

    def row(case, base):
        return "%-26s %14.0f %-17s %14.0f %7.2fx" % (case, got[case], base, got[base], got[case] / got[base])

    for base, b2 in (second or {}).items():  # each baseline over its second
        if base in got and b2 in got:
            print(row(base, b2))
    for case, base in pairs:
        if case in got and base in got:
            line = row(case, base)
            b2 = (second or {}).get(base)
            if b2 in got:
                line += " %-17s %14.0f %7.2fx" % (b2, got[b2], got[case] / got[b2])
            print(line)
    errs = [r["name"] for r in instr if r.get("errors")]
    if errs:
        print("errors during the counted requests in: " + ", ".join(errs))


def versus(rounds, case, base):
    """The case's req/s and server CPU per request over base's, per round: 'median [min-max]' each."""
    pairs = [(rd[case], rd[base]) for rd in rounds if case in rd and base in rd]
    ratio = [c["req_per_s"] / b["req_per_s"] for c, b in pairs]
    cpu = [c["server_cpu_us_per_req"] / b["server_cpu_us_per_req"] for c, b in pairs if b["server_cpu_us_per_req"] > 0]
    return spread(ratio), spread(cpu)


HTTP_CASES = ("rest-post-ids", "connect-json-http1", "connect-json-onewrite", "connect-proto-http1", "connect-proto-h2c", "grpc-h2c")


def http(rows, instr):
    rounds = by_round(rows)
    print("\n%d interleaved rounds; each figure is the median [min-max] over the rounds" % len(rounds))
    print("%-27s %22s %22s %22s %22s %9s %9s %8s %8s" % ("case", "req/s vs baseline", "CPU/req vs baseline", "req/s vs floor",
                                                          "CPU/req vs floor", "req/s", "base", "p50 ms", "p99 ms"))
    for case in HTTP_CASES:
        base = case + "/base"
        if not any(case in rd and base in rd for rd in rounds):
            continue
        ratio, cpu = versus(rounds, case, base)
        fratio, fcpu = versus(rounds, case, case + "/floor")
        print("%-27s %22s %22s %22s %22s %9.0f %9.0f %8.2f %8.2f" % (case, ratio, cpu, fratio, fcpu, median_of(rounds, case, "req_per_s"),
              median_of(rounds, base, "req_per_s"), median_of(rounds, case, "p50_ms"), median_of(rounds, case, "p99_ms")))
    for case in HTTP_CASES:
        for floor, what in (("/floor", "connect-go floor"), ("/grpcgo", "grpc-go floor")):
            if any(case + floor in rd for rd in rounds):
                ratio, cpu = versus(rounds, case + floor, case + "/base")
                print("%-27s %22s %22s %22s %22s %9.0f" % (case + floor, ratio, cpu, "", "", median_of(rounds, case + floor, "req_per_s")))
        if any(case in rd and case + "/grpcgo" in rd for rd in rounds):
            ratio, cpu = versus(rounds, case, case + "/grpcgo")
            print("%-27s req/s %s, CPU/req %s x the grpc-go floor's" % (case, ratio, cpu))
    print("(baseline: the bare handler over HTTP/1.1; for connect-proto-h2c and grpc-h2c, the bare handler over h2c;")
    print(" floor: connect-go's stock handler answering the same call with a constant ID, bench/cmd/connectfloor;")
    print(" /floor and /grpcgo rows: the floors themselves against the baseline)")
    limit = 1024000
    for case in ("rest-batch-1000", "client-library/base", "client-library"):
        vals = [100 * rd[case]["ids_per_s"] / limit for rd in rounds if case in rd]
        if vals:
            print("%-24s %s %% of the v2 layout's limit per machine number (1,024,000 IDs/s)" % (case, spread(vals, "%.1f")))
    pairs = [(rd["client-library"], rd["client-library/base"]) for rd in rounds if "client-library" in rd and "client-library/base" in rd]
    if pairs:
        print("%-24s %s x the IDs/s of its baseline (client-library/base: batches back to back on 4 connections, IDs dropped)" %
              ("client-library", spread([c["ids_per_s"] / b["ids_per_s"] for c, b in pairs], "%.3f")))
    instr_table(instr, [("rest-post-ids", "bare-http"), ("connect-json-http1", "bare-http"), ("connect-proto-http1", "bare-http"),
                        ("connect-proto-h2c", "bare-h2c"), ("grpc-h2c", "bare-h2c"),
                        ("connect-json-http1/floor", "bare-http"), ("connect-proto-http1/floor", "bare-http"),
                        ("connect-proto-h2c/floor", "bare-h2c"), ("grpc-h2c/floor", "bare-h2c"), ("grpc-h2c/grpcgo", "bare-h2c")],
                {"bare-http": "bare-default-http", "bare-h2c": "bare-default-h2c"})
    print("(baseline: the bare handler on the services' skeleton; second baseline: on net/http's default server, h2c enabled;")
    print(" the first lines: the services' skeleton over the default server, bench/skeleton.sh splits it by setting)")
    floors_table(instr)


SKELETON_VARIANTS = (("services", "the services' skeleton (libs/svc/serve)"), ("default", "net/http's default server, h2c enabled"),
                     ("no-timeouts", "without the timeouts"), ("no-h2c", "without h2c (HTTP/1.1 only)"),
                     ("no-h2c-pool", "without the h2c goroutine pool"), ("no-gc", "without the GC target (Go's default GC)"),
                     ("no-all-but-h2c", "without the timeouts, the pool and the GC target"))


def skeleton(rows, instr):
    """bench/skeleton.sh: the bare handler on each variant of the services' skeleton, in
    instructions per request against the services' skeleton and net/http's default server, then
    in server CPU per request against the services' skeleton in the same rounds."""
    passes = {}
    for r in instr:
        passes.setdefault(r["name"], []).append(r["instr_per_req"])
    got = {k: statistics.median(v) for k, v in passes.items()}
    if got:
        print("\ninstructions per request of the bare handler (callgrind; h2c-16: 16 workers, otherwise one; the median of")
        print("%d pass(es), min-max beside; independent of load):" % max(len(v) for v in passes.values()))
        print("%-16s %-9s %10s %17s %11s %11s  %s" % ("variant", "protocol", "instr/req", "min-max", "vs services", "vs default", ""))
        for name, what in SKELETON_VARIANTS:
            for proto in ("http", "h2c", "h2c-16"):
                k = name + "/" + proto
                if k not in got:
                    continue
                s, d = got.get("services/" + proto), got.get("default/" + proto)
                print("%-16s %-9s %10.0f %17s %11s %11s  %s" % (name, proto, got[k], "%.0f-%.0f" % (min(passes[k]), max(passes[k])),
                                                              "%+.0f" % (got[k] - s) if s else "-", "%+.0f" % (got[k] - d) if d else "-", what))
        errs = [r["name"] for r in instr if r.get("errors")]
        if errs:
            print("errors during the counted requests in: " + ", ".join(errs))
    rounds = by_round(rows)
    if not rounds:
        return
    print("\n%d interleaved rounds, each variant right after the services' skeleton; median [min-max] over the rounds:" % len(rounds))
    print("%-16s %-10s %22s %22s %9s %9s" % ("variant", "protocol", "CPU/req vs services", "req/s vs services", "req/s", "services"))
    for name, _ in SKELETON_VARIANTS[1:]:
        for proto in ("http", "h2c", "h2c-1"):
            case = name + "/" + proto
            if not any(case in rd for rd in rounds):
                continue
            ratio, cpu = versus(rounds, case, case + "/base")
            print("%-16s %-10s %22s %22s %9.0f %9.0f" % (name, proto, cpu, ratio, median_of(rounds, case, "req_per_s"),
                                                       median_of(rounds, case + "/base", "req_per_s")))
    print("(http: -mode rest; h2c: -mode get-h2c, one connection per worker; h2c-1: one worker)")


# The goal of each Connect and gRPC path: at most 1.10x its connect-go floor's instructions.
CONNECT_GOAL = 1.10


def floors_table(instr):
    """Each Connect and gRPC case's instructions per request against its floors measured in the
    same run: the bare handler, connect-go's stock handler with a constant answer (its
    connect-go floor, whose excess over the bare handler is connect-go's own cost per call), and
    for gRPC grpc-go serving the same RPC; with the goal and whether it is met."""
    got = {r["name"]: r["instr_per_req"] for r in instr}
    rows = [("connect-json-http1", "bare-http"), ("connect-proto-http1", "bare-http"), ("connect-proto-h2c", "bare-h2c"), ("grpc-h2c", "bare-h2c")]
    if not any(c in got and c + "/floor" in got for c, _ in rows):
        return
    print("\nagainst the floors (instructions per request; goal: each at most %.2fx its connect-go floor):" % CONNECT_GOAL)
    print("%-22s %10s %10s %7s %12s %7s %12s %10s %7s %s" % ("case", "instr/req", "bare", "ratio", "connect-go", "ratio",
                                                          "connect-go's", "grpc-go", "ratio", "goal"))
    for case, bare in rows:
        if case not in got or case + "/floor" not in got or bare not in got:
            continue
        c, b, f = got[case], got[bare], got[case + "/floor"]
        g = got.get(case + "/grpcgo")
        gcol = ("%10.0f %6.2fx" % (g, c / g)) if g else "%10s %7s" % ("", "")
        print("%-22s %10.0f %10.0f %6.2fx %12.0f %6.2fx %12.0f %s %s" % (case, c, b, c / b, f, c / f, f - b, gcol,
              "met" if c / f <= CONNECT_GOAL else "not met"))
    print("(connect-go's: the connect-go floor's instructions over the bare handler's, what connect-go itself costs a call)")


def publicid(rows, instr):
    rounds = by_round(rows)
    print("\n%d interleaved rounds; each figure is the median [min-max] over the rounds" % len(rounds))
    print("%-34s %10s %8s %8s" % ("case (medians)", "req/s", "p50 ms", "p99 ms"))
    for name in ("bare", "resolve", "publish", "direct", "revproxy", "gateway"):
        if not any(name in rd for rd in rounds):
            continue
        print("%-34s %10.0f %8.2f %8.2f" % (name, median_of(rounds, name, "req_per_s"), median_of(rounds, name, "p50_ms"), median_of(rounds, name, "p99_ms")))
    for name in ("redis-get", "redis-set"):
        print("%-34s %10.0f" % ("redis-benchmark " + name[6:].upper() + (" (AOF always)" if name == "redis-set" else ""), median_of(rounds, name, "req_per_s")))
    full = [rd for rd in rounds if all(k in rd for k in ("bare", "resolve", "redis-get", "publish", "redis-set", "direct", "gateway"))]
    res = [rd["resolve"]["req_per_s"] * (1 / rd["bare"]["req_per_s"] + 1 / rd["redis-get"]["req_per_s"]) for rd in full]
    tail = [rd["resolve"]["p99_ms"] / max(rd["resolve"]["p50_ms"], 0.001) for rd in full]
    baretail = [rd["bare"]["p99_ms"] / max(rd["bare"]["p50_ms"], 0.001) for rd in full]
    pub = [rd["publish"]["req_per_s"] / rd["redis-set"]["req_per_s"] for rd in full]
    gw50 = [rd["gateway"]["p50_ms"] - rd["direct"]["p50_ms"] for rd in full]
    gw99 = [rd["gateway"]["p99_ms"] - rd["direct"]["p99_ms"] for rd in full]
    gwcpu = [rd["gateway"]["server_cpu_us_per_req"] / rd["direct"]["server_cpu_us_per_req"] for rd in full if rd["direct"]["server_cpu_us_per_req"] > 0]
    print("resolve: %s x of 1/(1/bare + 1/redis GET); p99/p50 %s (the bare handler's: %s)" % (spread(res), spread(tail, "%.1f"), spread(baretail, "%.1f")))
    print("resolve p50 %s ms, p99 %s ms" % (spread([rd["resolve"]["p50_ms"] for rd in full]), spread([rd["resolve"]["p99_ms"] for rd in full])))
    print("publish: %s x of redis-benchmark's AOF-always SET" % spread(pub))
    durable_writes(full)
    print("gateway, one client: adds %s ms at p50, %s ms at p99 over calling the upstream directly" % (spread(gw50), spread(gw99)))
    print("gateway CPU per request (the gateway process) over the bare upstream's own: %s x" % spread(gwcpu, "%.1f"))
    gateway_vs_proxy([rd for rd in full if "revproxy" in rd])
    harness_table(rounds, ("bare", "resolve", "publish", "direct", "revproxy", "gateway"))
    instr_table(instr, [("bare-resolve-request", "bare-get"), ("bare-publish-request", "bare-get"),
                        ("resolve", "bare-get"), ("publish", "bare-get"), ("publish-dynamo", "bare-get"), ("gateway", "bare-get"),
                        ("revproxy", "bare-get"), ("gateway", "revproxy")])
    publicid_goals(instr)
    got = {r["name"]: r["instr_per_req"] for r in instr}
    if "gateway" in got and "revproxy" in got:
        ratio = got["gateway"] / got["revproxy"]
        print("gateway against its floor (httputil.ReverseProxy on the same route): %.2fx, goal at most %.2fx: %s" % (
            ratio, GATEWAY_GOAL, "met" if ratio <= GATEWAY_GOAL else "not met"))


# The gateway's goal: at most 2x the instructions of a plain reverse proxy on its route.
GATEWAY_GOAL = 2.0

# The internal API's goals, in instructions per request of the public-id process against the
# bare handler's asked the same request (its path, its body: net/http's parsing and ServeMux's
# path cleaning grow with them, whatever the handler): a resolve answered from the cache at most
# 1.15x, a publish on Redis (AOF always, the client library included) at most 3x. The publish on
# the store of record (DynamoDB, here dynalite, whose own CPU is not counted) is reported beside
# them, with no goal. Each is also shown against the bare handler's GET /.
PUBLICID_GOALS = (("resolve", "resolve (cache hit)", "bare-resolve-request", 1.15),
                  ("publish", "publish, Redis", "bare-publish-request", 3.0),
                  ("publish-dynamo", "publish, DynamoDB (dynalite)", "bare-publish-request", None))


def publicid_goals(instr):
    """The internal API's instructions per request against the bare handler's on the same
    request and on GET /, with each goal (judged on the same request) and whether it is met."""
    got = {r["name"]: r["instr_per_req"] for r in instr}
    if "bare-get" not in got:
        return
    print("\nthe internal API against the bare handler (GET /: %.0f instructions per request):" % got["bare-get"])
    print("%-30s %12s %-22s %12s %8s %8s %8s %8s" % ("case", "instr/req", "bare, same request", "its instr", "ratio", "/ GET /", "goal", ""))
    for name, label, same, goal in PUBLICID_GOALS:
        if name not in got:
            continue
        base = same if same in got else "bare-get"
        ratio = got[name] / got[base]
        line = "%-30s %12.0f %-22s %12.0f %7.2fx %7.2fx" % (label, got[name], base, got[base], ratio, got[name] / got["bare-get"])
        if goal is None:
            print(line + " %8s %8s" % ("-", "reported"))
        else:
            print(line + " %7.2fx %8s" % (goal, "met" if ratio <= goal else "not met"))


def gateway_vs_proxy(rounds):
    """The gateway against the plain reverse proxy (bench/cmd/revproxy) in front of the same
    upstream, one client, in the same rounds: the latency it adds over the proxy's, and its
    process's CPU per request over the proxy process's."""
    if not rounds:
        print("gateway vs reverse proxy: no revproxy runs")
        return
    rp50 = [rd["revproxy"]["p50_ms"] - rd["direct"]["p50_ms"] for rd in rounds]
    gw50 = [rd["gateway"]["p50_ms"] - rd["revproxy"]["p50_ms"] for rd in rounds]
    gw99 = [rd["gateway"]["p99_ms"] - rd["revproxy"]["p99_ms"] for rd in rounds]
    cpu = [rd["gateway"]["server_cpu_us_per_req"] / rd["revproxy"]["server_cpu_us_per_req"] for rd in rounds
           if rd["revproxy"]["server_cpu_us_per_req"] > 0]
    print("revproxy, one client: adds %s ms at p50 over calling the upstream directly" % spread(rp50))
    print("gateway over revproxy, one client: adds %s ms at p50, %s ms at p99; CPU per request %s x the proxy's" % (
        spread(gw50), spread(gw99), spread(cpu, "%.1f")))


def durable_writes(rounds):
    """Publish and SET by Redis's fsyncs, which bound both: writes per fsync (how many acknowledged
    writes share one, which the disk's speed does not set), the time from one fsync to the next
    (which it does: the req/s ratio moves with it), and core 0's CPU per write (Redis's, plus the
    service's for publish)."""
    def per(rd, name):
        r = rd[name]
        if not r.get("store_fsyncs"):
            return None
        return (r["requests"] / r["store_fsyncs"], r["requests"] / r["req_per_s"] / r["store_fsyncs"] * 1000,
                r.get("server_cpu_us_per_req", 0) + r["store_cpu_us_per_req"] if name == "publish" else r["store_cpu_us_per_req"])
    pairs = [(per(rd, "publish"), per(rd, "redis-set")) for rd in rounds]
    pairs = [(p, s) for p, s in pairs if p and s]
    if not pairs:
        print("writes per fsync: not counted (perf missing, or it cannot trace syscalls here)")
        return
    print("writes per fsync: publish %s, SET %s (%s x); ms from one fsync to the next: publish %s, SET %s" % (
        spread([p[0] for p, _ in pairs], "%.1f"), spread([s[0] for _, s in pairs], "%.1f"), spread([p[0] / s[0] for p, s in pairs]),
        spread([p[1] for p, _ in pairs]), spread([s[1] for _, s in pairs])))
    print("core 0's CPU per write: publish (service + Redis) %s us, SET (Redis alone) %s us" % (
        spread([p[2] for p, _ in pairs], "%.0f"), spread([s[2] for _, s in pairs], "%.0f")))


def harness_table(rounds, names):
    """What each run did besides its requests, which the machine's load does not move (garbage
    collections per request, loadgen's allocations), and what the load did to it (CPU waits)."""
    print("\nper run (medians): garbage collections, loadgen's allocations per request, and the time the server's")
    print("and loadgen's threads waited for a CPU while runnable, as a share of the run (other load on the machine):")
    print("%-10s %10s %14s %12s %14s %16s %17s" % ("case", "server GCs", "per 10k req", "loadgen GCs", "loadgen B/req",
                                                 "server CPU wait", "loadgen CPU wait"))
    for name in names:
        runs = [rd[name] for rd in rounds if name in rd and rd[name].get("req_per_s")]
        if not runs:
            continue

        def med(value):
            vals = [value(r) for r in runs]
            vals = [v for v in vals if v is not None]
            return statistics.median(vals) if vals else float("nan")

        def share(key):  # a wait in ms over the run's length, in %
            return lambda r: r[key] / (r["requests"] / r["req_per_s"] * 1000) * 100 if key in r else None

        print("%-10s %10.0f %14.1f %12.0f %14.0f %15.1f%% %16.1f%%" % (
            name, med(lambda r: r.get("server_gcs")), med(lambda r: r["server_gcs"] / r["requests"] * 1e4 if "server_gcs" in r else None),
            med(lambda r: r.get("loadgen_gcs")), med(lambda r: r.get("loadgen_alloc_per_req")),
            med(share("server_cpu_wait_ms")), med(share("loadgen_cpu_wait_ms"))))


if __name__ == "__main__":
    kind, results = sys.argv[1], load(sys.argv[2])
    instr = load(sys.argv[3]) if len(sys.argv) > 3 else []
    {"http": http, "publicid": publicid, "skeleton": skeleton}[kind](results, instr)
