// Command loadgen drives one endpoint of a generator (or the bare baseline) with a fixed number
// of concurrent workers for a fixed time (or a fixed number of requests, -n) and prints req/s,
// IDs/s and latency percentiles as JSON.
//
// Its own overhead is kept out of the latencies it records: each worker records into memory
// allocated before the run, and the garbage collector is off during the run (-gc-limit) unless
// the heap reaches a soft limit. The JSON also gives the collections the run did take
// (loadgen_gcs), the bytes loadgen allocated per request (loadgen_alloc_per_req) and, on Linux, how
// long its threads waited for a CPU while runnable during the run (loadgen_cpu_wait_ms, from
// /proc/self/task/*/schedstat): a run whose loadgen waited is one the machine's other load
// disturbed. -trace writes a Go execution trace of the run with a region "request" around each
// call.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	idgenv1 "github.com/idgen/idgen/libs/api/idgen/v1"
	"github.com/idgen/idgen/libs/api/idgen/v1/idgenv1connect"
	"github.com/idgen/idgen/libs/idclient"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:7001", "base URL")
	mode := flag.String("mode", "rest", "rest (POST /v1/ids), rest-batch, connect-json (HTTP/1.1), connect-proto (h2c), connect-proto-http1, connect-json-onewrite (HTTP/1.1 through idclient.OneWrite), grpc (gRPC over h2c through connect-go's client), client (idclient Next), client-base (GenerateBatch over h2c back to back, the IDs counted and dropped: the client library's baseline, -c calls in flight), get (GET -path), publish (POST /v1/public-ids with new internal IDs)")
	path := flag.String("path", "/", "path for -mode get")
	workers := flag.Int("c", 16, "concurrent workers")
	h2conns := flag.Int("h2conns", 0, "h2c connections the workers share (0: one per worker)")
	dur := flag.Duration("d", 5*time.Second, "duration")
	batch := flag.Int("batch", 1000, "batch size for rest-batch and client")
	total := flag.Int("n", 0, "stop after this many requests in all (0: run for -d); the instruction counts use a fixed number")
	gcLimit := flag.Int64("gc-limit", 1<<30, "bytes: during the run loadgen's garbage collector is off (GOGC=off) until its heap reaches this soft limit (GOMEMLIMIT), so that its own collections stay out of the latencies; 0: the collector as GOGC and GOMEMLIMIT set it")
	traceFile := flag.String("trace", "", "write a Go execution trace of the run (a region \"request\" around each call) to this file")
	flag.Parse()

	h1 := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *workers, MaxConnsPerHost: *workers}}
	// h2c returns the next h2c client: one per worker, or -h2conns shared round-robin (HTTP/2
	// multiplexes the workers' requests as streams on each connection).
	var shared []*http.Client
	for range *h2conns {
		shared = append(shared, idclient.H2CClient())
	}
	nextH2 := 0
	h2c := func() *http.Client {
		if len(shared) == 0 {
			return idclient.H2CClient()
		}
		nextH2++
		return shared[nextH2%len(shared)]
	}
	var call func(ctx context.Context) (int, error)
	switch *mode {
	case "rest", "rest-batch":
		path, body, n := "/v1/ids", []byte("{}"), 1
		if *mode == "rest-batch" {
			path, body, n = "/v1/ids:batch", []byte(fmt.Sprintf(`{"count":%d}`, *batch)), *batch
		}
		call = func(ctx context.Context) (int, error) {
			return drained(n)(h1.Post(*url+path, "application/json", bytes.NewReader(body)))
		}
	case "connect-json", "connect-proto", "connect-proto-http1", "connect-json-onewrite", "grpc":
		one := &http.Client{Transport: idclient.OneWrite(h1.Transport)}
		// One client per worker: 16 HTTP/1.1 connections, or 16 h2c connections (as many
		// connections as the REST and baseline runs use).
		cs := make(chan idgenv1connect.IdServiceClient, *workers)
		for range *workers {
			switch *mode {
			case "connect-json":
				cs <- idgenv1connect.NewIdServiceClient(h1, *url, connect.WithProtoJSON())
			case "connect-proto-http1":
				cs <- idgenv1connect.NewIdServiceClient(h1, *url)
			case "connect-json-onewrite":
				cs <- idgenv1connect.NewIdServiceClient(one, *url, connect.WithProtoJSON())
			case "grpc":
				cs <- idgenv1connect.NewIdServiceClient(h2c(), *url, connect.WithGRPC())
			default:
				cs <- idgenv1connect.NewIdServiceClient(h2c(), *url)
			}
		}
		call = func(ctx context.Context) (int, error) {
			c := <-cs
			defer func() { cs <- c }()
			// No deadline on the call (as the REST modes send none): a deadline travels as
			// Connect-Timeout-Ms and costs the server a timer per request.
			_, err := c.Generate(context.WithoutCancel(ctx), connect.NewRequest(&idgenv1.GenerateRequest{}))
			return 1, err
		}
	case "get", "get-h2c":
		hc := h1
		if *mode == "get-h2c" {
			hcs := make(chan *http.Client, *workers)
			for range *workers {
				hcs <- h2c()
			}
			hc = &http.Client{Transport: roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				c := <-hcs
				defer func() { hcs <- c }()
				return c.Transport.RoundTrip(r)
			})}
		}
		call = func(ctx context.Context) (int, error) {
			return drained(1)(hc.Get(*url + *path))
		}
	case "publish":
		var next atomic.Int64
		next.Store(time.Now().UnixNano() & (1<<62 - 1))
		call = func(ctx context.Context) (int, error) {
			body := fmt.Sprintf(`{"internal_id":"%d"}`, next.Add(1))
			return drained(1)(h1.Post(*url+"/v1/public-ids", "application/json", strings.NewReader(body)))
		}
	case "client-base":
		// The generator's own rate for the client's calls: each worker one h2c connection asking
		// for batches as the client library does, with nothing buffered or handed out.
		cs := make(chan idgenv1connect.IdServiceClient, *workers)
		for range *workers {
			cs <- idgenv1connect.NewIdServiceClient(h2c(), *url)
		}
		req := &idgenv1.GenerateBatchRequest{Count: int32(*batch)}
		call = func(ctx context.Context) (int, error) {
			c := <-cs
			defer func() { cs <- c }()
			resp, err := c.GenerateBatch(ctx, connect.NewRequest(req))
			if err != nil {
				return 0, err
			}
			return len(resp.Msg.GetIds()), nil
		}
	case "client":
		cl, err := idclient.New(idclient.Config{Endpoints: []string{*url}, Batch: *batch, LowWater: *batch * 4})
		if err != nil {
			fail(err)
		}
		defer cl.Close()
		call = func(ctx context.Context) (int, error) {
			_, err := cl.Next(ctx)
			return 1, err
		}
	default:
		fail(fmt.Errorf("unknown mode %q", *mode))
	}

	d := *dur
	if *total > 0 {
		d = 10 * time.Minute // -n bounds the run; the timeout only guards against a stall
	}
	// Each worker's latencies go into memory allocated now: enough for -n, or for 64Ki requests
	// per worker (more grow the slice).
	perWorker := 1 << 16
	if *total > 0 {
		perWorker = min(perWorker, *total/max(*workers, 1)+1)
	}
	recs := make([]recorder, *workers)
	for i := range recs {
		recs[i].us = make([]int32, 0, perWorker)
	}
	if *gcLimit > 0 {
		runtime.GC() // what setting up left behind, so that the run starts with an empty heap
		debug.SetGCPercent(-1)
		debug.SetMemoryLimit(*gcLimit)
	}
	if *traceFile != "" {
		f, err := os.Create(*traceFile)
		if err != nil {
			fail(err)
		}
		if err := trace.Start(f); err != nil {
			fail(err)
		}
		defer func() { trace.Stop(); _ = f.Close() }()
	}
	m0 := readRuntime()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var ids, errs atomic.Int64
	var wg sync.WaitGroup
	var issued atomic.Int64
	tracing := *traceFile != ""
	start := time.Now()
	for w := range *workers {
		rec := &recs[w]
		wg.Go(func() {
			myIDs, myErrs := 0, 0
			for ctx.Err() == nil {
				if *total > 0 && issued.Add(1) > int64(*total) {
					break
				}
				var region *trace.Region
				if tracing {
					region = trace.StartRegion(ctx, "request")
				}
				t0 := time.Now()
				n, err := call(ctx)
				el := time.Since(t0)
				if tracing {
					region.End()
				}
				if err != nil {
					if ctx.Err() == nil {
						myErrs++
					}
					continue
				}
				rec.add(el)
				myIDs += n
			}
			ids.Add(int64(myIDs))
			errs.Add(int64(myErrs))
		})
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	m1 := readRuntime()
	lat := merged(recs)
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[int(p*float64(len(lat)-1))]) / 1000
	}
	out := map[string]any{
		"mode": *mode, "requests": len(lat), "errors": errs.Load(), "req_per_s": float64(len(lat)) / el,
		"ids_per_s": float64(ids.Load()) / el, "p50_ms": pct(0.50), "p99_ms": pct(0.99),
		"loadgen_gcs":           m1.gcs - m0.gcs,
		"loadgen_alloc_per_req": float64(m1.allocBytes-m0.allocBytes) / float64(max(len(lat), 1)),
	}
	if m0.cpuWait >= 0 && m1.cpuWait >= 0 {
		out["loadgen_cpu_wait_ms"] = float64(m1.cpuWait-m0.cpuWait) / 1e6
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
}

// recorder holds one worker's latencies in whole microseconds (as the percentiles are given).
type recorder struct{ us []int32 }

func (r *recorder) add(d time.Duration) {
	r.us = append(r.us, int32(min(d.Microseconds(), 1<<31-1)))
}

// merged returns every worker's latencies (microseconds) in one sorted slice.
func merged(recs []recorder) []int32 {
	var n int
	for _, r := range recs {
		n += len(r.us)
	}
	all := make([]int32, 0, n)
	for _, r := range recs {
		all = append(all, r.us...)
	}
	slices.Sort(all)
	return all
}

type runtimeCounts struct {
	gcs, allocBytes uint64
	cpuWait         int64 // ns; -1 where /proc/self/task/*/schedstat cannot be read
}

// readRuntime reads the collections completed and the bytes allocated so far (runtime/metrics,
// without stopping the world), and the time the process's threads have waited for a CPU.
func readRuntime() runtimeCounts {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return runtimeCounts{gcs: s[0].Value.Uint64(), allocBytes: s[1].Value.Uint64(), cpuWait: cpuWait()}
}

// cpuWait returns the time (ns) the process's threads have spent runnable but waiting for a CPU:
// the second field of each thread's /proc schedstat. Threads that have exited are not counted
// (Go rarely ends one).
func cpuWait() int64 {
	files, _ := filepath.Glob("/proc/self/task/*/schedstat")
	if len(files) == 0 {
		return -1
	}
	var sum int64
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread exited
		}
		fields := strings.Fields(string(b))
		if len(fields) < 2 {
			return -1
		}
		v, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			return -1
		}
		sum += v
	}
	return sum
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "loadgen:", err)
	os.Exit(2)
}

// drained reads a response to its end and counts n IDs for a 200, an error otherwise.
func drained(n int) func(*http.Response, error) (int, error) {
	return func(resp *http.Response, err error) (int, error) {
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return 0, fmt.Errorf("status %d", resp.StatusCode)
		}
		return n, nil
	}
}
