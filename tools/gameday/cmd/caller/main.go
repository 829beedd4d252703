// Command caller is the game day's calling service: one per region, it takes IDs through
// libs/idclient, configured from the topology's client config file (--client-config, its
// --region's entry: its own region's endpoint, then its peer's) and nothing else, at --rate IDs
// a second, and prints what it received on stdout, a line every --every:
//
//	ids UNIX_US WAIT_US ACTIVE LO+N …  the IDs received since the last line (runs of consecutive
//	                                  IDs, in the order Next returned them); UNIX_US when the line
//	                                  was written; WAIT_US the longest a call to Next waited;
//	                                  ACTIVE the highest endpoint index the client was on meanwhile
//	                                  (0: its own region, 1: its peer)
//	error UNIX_US MESSAGE             a call to Next failed (it waits at most --next-timeout)
//
// Its client's metrics (idgen_client_active_endpoint, …) are on --metrics at /metrics, labelled
// with its region, for Prometheus and the alert IdgenClientOnPeerRegion.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/idgen/idgen/libs/idclient"
	"github.com/idgen/idgen/libs/idcore"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func main() {
	file := flag.String("client-config", "", "the topology's client config (JSON of terraform output -json client_config)")
	region := flag.String("region", "", "this caller's region: its entry of the client config")
	rate := flag.Float64("rate", 1000, "IDs a second")
	batch := flag.Int("batch", 200, "IDs per refill")
	probe := flag.Duration("probe-every", time.Second, "health probe of the own region")
	hedge := flag.Duration("hedge-after", 50*time.Millisecond, "hedge to the peer after this long with the buffer empty")
	every := flag.Duration("every", 20*time.Millisecond, "how often a line of IDs is written")
	nextTimeout := flag.Duration("next-timeout", 5*time.Second, "the longest one call to Next waits")
	metrics := flag.String("metrics", "", "host:port serving /metrics")
	flag.Parse()
	if err := run(*file, *region, *rate, *batch, *probe, *hedge, *every, *nextTimeout, *metrics); err != nil {
		fmt.Fprintln(os.Stderr, "caller:", err)
		os.Exit(2)
	}
}

func run(file, region string, rate float64, batch int, probe, hedge, every, nextTimeout time.Duration, metrics string) error {
	if file == "" || region == "" {
		return errors.New("--client-config and --region are required: a caller's endpoints come from the topology only")
	}
	cc, err := idclient.ReadClientConfig(file)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	cfg, err := cc.ConfigFor(region, idclient.Config{Batch: batch, ProbeEvery: probe, HedgeAfter: hedge, Logger: log})
	if err != nil {
		return err
	}
	c, err := idclient.New(cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	reg := prometheus.NewRegistry()
	prometheus.WrapRegistererWith(prometheus.Labels{"region": region}, reg).MustRegister(c.Collectors()...)
	if metrics != "" {
		l, err := net.Listen("tcp", metrics)
		if err != nil {
			return err
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(l) }()
		defer srv.Close()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	var ids []idcore.ID
	var maxWait time.Duration
	active := 0
	endpoint := map[string]int{cfg.Endpoints[0]: 0, cfg.Endpoints[1]: 1}
	line := make([]byte, 0, 4096)
	flush := func(now time.Time) {
		line = append(line[:0], "ids "...)
		line = strconv.AppendInt(line, now.UnixMicro(), 10)
		line = append(line, ' ')
		line = strconv.AppendInt(line, maxWait.Microseconds(), 10)
		line = append(line, ' ')
		line = strconv.AppendInt(line, int64(active), 10)
		for i := 0; i < len(ids); {
			j := i + 1
			for j < len(ids) && ids[j] == ids[j-1]+1 {
				j++
			}
			line = append(line, ' ')
			line = strconv.AppendInt(line, int64(ids[i]), 10)
			line = append(line, '+')
			line = strconv.AppendInt(line, int64(j-i), 10)
			i = j
		}
		line = append(line, '\n')
		out.Write(line)
		out.Flush()
		ids, maxWait, active = ids[:0], 0, 0
	}
	gap := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	lastLine := start
	for n := int64(0); ctx.Err() == nil; n++ {
		// Paced from the start, in steps of a few milliseconds (a timer per ID would cost more than
		// the IDs); a stall of over a second is not made up for by a burst afterwards.
		if d := time.Until(start.Add(time.Duration(n) * gap)); d > 2*time.Millisecond {
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
		} else if d < -time.Second {
			start, n = time.Now(), 0
		}
		if ctx.Err() != nil {
			break
		}
		t0 := time.Now()
		nctx, cancel := context.WithTimeout(ctx, nextTimeout)
		id, err := c.Next(nctx)
		cancel()
		now := time.Now()
		if w := now.Sub(t0); w > maxWait {
			maxWait = w
		}
		active = max(active, endpoint[c.Active()])
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			fmt.Fprintf(out, "error %d %s\n", now.UnixMicro(), strings.ReplaceAll(err.Error(), "\n", " "))
			out.Flush()
		} else {
			ids = append(ids, id)
		}
		if now.Sub(lastLine) >= every {
			flush(now)
			lastLine = now
		}
	}
	if len(ids) > 0 {
		flush(time.Now())
	}
	return nil
}
