// Command customer is the game day's public-ID customer: one per region of the scenario's
// customers, it takes IDs of its region's generators through libs/idclient, configured from the
// topology's client config file (--client-config, its --region's entry) as the callers are,
// publishes each through its region's internal public-ID API (--api, POST /v1/public-ids), and
// right after an acknowledged publish opens the order at every region's gateway (--gateways, GET
// /order/{public_id}), at --rate publishes a second. It prints, a line an event, on stdout:
//
//	ack UNIX_US MS INTERNAL PUBLIC            a publish acknowledged (200) after MS milliseconds
//	publish UNIX_US MS STATUS INTERNAL WHY    a publish not acknowledged: STATUS the HTTP status
//	                                          (0: no answer; WHY refused, timeout or the error)
//	resolve UNIX_US MS REGION STATUS PUBLIC WHY
//	                                          an order opened at REGION's gateway: STATUS 200 with
//	                                          WHY ok, or wrong when the order's id is not PUBLIC;
//	                                          any other status (0: no answer) with WHY the reason
//	next UNIX_US MESSAGE                      a call to Next failed
//
// UNIX_US is when the request ended.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/idgen/idgen/libs/idclient"
)

func main() {
	file := flag.String("client-config", "", "the topology's client config (JSON of terraform output -json client_config)")
	region := flag.String("region", "", "this customer's region: its entry of the client config")
	api := flag.String("api", "", "the region's internal public-ID API (http://host:port)")
	gateways := flag.String("gateways", "", "every region's gateway, name=http://host:port,… (its own first)")
	rate := flag.Float64("rate", 10, "publishes a second")
	timeout := flag.Duration("timeout", 5*time.Second, "the longest one request waits")
	inFlight := flag.Int("in-flight", 16, "publishes (each with its resolves) under way at once; a tick with none free is skipped")
	flag.Parse()
	if err := run(*file, *region, *api, *gateways, *rate, *timeout, *inFlight); err != nil {
		fmt.Fprintln(os.Stderr, "customer:", err)
		os.Exit(2)
	}
}

type gateway struct{ name, url string }

func run(file, region, api, gws string, rate float64, timeout time.Duration, inFlight int) error {
	if file == "" || region == "" || api == "" || gws == "" {
		return errors.New("--client-config, --region, --api and --gateways are required")
	}
	if rate <= 0 || inFlight < 1 {
		return errors.New("--rate and --in-flight must be positive")
	}
	var gateways []gateway
	for _, g := range strings.Split(gws, ",") {
		name, url, ok := strings.Cut(g, "=")
		if !ok || name == "" || url == "" {
			return fmt.Errorf("--gateways: %q: want name=http://host:port", g)
		}
		gateways = append(gateways, gateway{name, strings.TrimSuffix(url, "/")})
	}
	cc, err := idclient.ReadClientConfig(file)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	cfg, err := cc.ConfigFor(region, idclient.Config{Batch: 20, Logger: log})
	if err != nil {
		return err
	}
	c, err := idclient.New(cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	out := &printer{w: bufio.NewWriterSize(os.Stdout, 64<<10)}
	hc := &http.Client{Timeout: timeout, Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}}
	slots := make(chan struct{}, inFlight)
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
		if ctx.Err() != nil {
			break
		}
		select {
		case slots <- struct{}{}:
		default:
			continue // every slot busy: this tick's publish is skipped
		}
		nctx, cancel := context.WithTimeout(ctx, timeout)
		id, err := c.Next(nctx)
		cancel()
		if err != nil {
			<-slots
			if ctx.Err() == nil {
				out.line("next %d %s", time.Now().UnixMicro(), oneLine(err.Error()))
			}
			continue
		}
		wg.Go(func() {
			defer func() { <-slots }()
			internal := id.String()
			t0 := time.Now()
			pub, status, why := publish(hc, api, internal)
			if status != http.StatusOK {
				out.line("publish %d %d %d %s %s", time.Now().UnixMicro(), time.Since(t0).Milliseconds(), status, internal, why)
				return
			}
			out.line("ack %d %d %s %s", time.Now().UnixMicro(), time.Since(t0).Milliseconds(), internal, pub)
			var rw sync.WaitGroup
			for _, g := range gateways {
				rw.Go(func() {
					t0 := time.Now()
					status, why := open(hc, g.url, pub)
					out.line("resolve %d %d %s %d %s %s", time.Now().UnixMicro(), time.Since(t0).Milliseconds(), g.name, status, pub, why)
				})
			}
			rw.Wait()
		})
	}
	wg.Wait()
	return nil
}

type printer struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (p *printer) line(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format+"\n", args...)
	_ = p.w.Flush()
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "-"
	}
	return s
}

// reason is a failed request's WHY: refused, timeout, or the error.
func reason(err error) string {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "Client.Timeout"):
		return "timeout"
	}
	return oneLine(err.Error())
}

// publish asks the internal API for the public ID of internal.
func publish(hc *http.Client, api, internal string) (string, int, string) {
	resp, err := hc.Post(api+"/v1/public-ids", "application/json", strings.NewReader(`{"internal_id":"`+internal+`","resource":"ord"}`))
	if err != nil {
		return "", 0, reason(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", 0, reason(err)
	}
	var body struct {
		PublicID string `json:"public_id"`
	}
	if resp.StatusCode != http.StatusOK {
		return "", resp.StatusCode, oneLine(string(b))
	}
	if err := json.Unmarshal(b, &body); err != nil || body.PublicID == "" {
		return "", 0, "no public_id in " + oneLine(string(b))
	}
	return body.PublicID, http.StatusOK, ""
}

// open is a customer's GET /order/{public_id} at a gateway: the order's id is the public ID
// (the order service answers with the internal ID, which the gateway writes as its public ID).
func open(hc *http.Client, gw, pub string) (int, string) {
	resp, err := hc.Get(gw + "/order/" + pub)
	if err != nil {
		return 0, reason(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, reason(err)
	}
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, oneLine(string(b))
	}
	var body struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(b, &body) != nil || body.ID != pub {
		return resp.StatusCode, "wrong " + oneLine(string(b))
	}
	return resp.StatusCode, "ok"
}
