package testenv

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/localstack/proc"
)

// TLSService is a service binary for CheckTLSReload and CheckTLSStartRefused.
type TLSService struct {
	Bin string
	// Args are the service's arguments to serve mutual TLS on listen with the files of f (the
	// checks add --tls-reload-every).
	Args func(listen string, f TLSFiles) []string
	// Probe makes a request that only a known caller may make and returns its status.
	Probe func(c *http.Client, base string) (int, error)
	// Allowed is Probe's status for a known caller; an unknown one gets 403.
	Allowed int
	// Refused, when set, checks what a service that refused to start left behind.
	Refused func(t *testing.T, f TLSFiles)
}

// TLSFiles are the files of a service's edge, in Dir, that the checks rename into place.
type TLSFiles struct {
	Dir                          string
	Cert, Key, ClientCA, Callers string
}

// TLSReload is what CheckTLSReload measured: how long after a rename the new file was in use,
// through the folder watch and through the periodic re-read alone.
type TLSReload struct {
	Every             time.Duration // the process's --tls-reload-every
	Watched           []time.Duration
	Periodic          time.Duration
	PID               int
	ServedSerials     []string
	RefusedRenewals   int
	HealthAfterExpiry string
}

// String is the measurement as the services' tests log it.
func (r TLSReload) String() string {
	return fmt.Sprintf("pid %d; served serials %v; renewal and added CA in use after %v (watched), added caller after %v (periodic re-read, every %v); %d bad renewals refused; /healthz after the expiry: %s",
		r.PID, r.ServedSerials, r.Watched, r.Periodic, r.Every, r.RefusedRenewals, r.HealthAfterExpiry)
}

const tlsTrustDomain = "idgen.test"

func callersFile(names ...string) []byte {
	var cs []string
	for _, n := range names {
		cs = append(cs, `{"name": "`+n+`"}`)
	}
	cs = append(cs, `{"name": "prometheus", "scraper": true}`)
	return []byte(`{"trust_domain": "` + tlsTrustDomain + `", "callers": [` + strings.Join(cs, ", ") + `]}`)
}

func spiffe(name string) string { return "spiffe://" + tlsTrustDomain + "/svc/" + name }

// CheckTLSReload runs svc with mutual TLS and a reload interval of one second, and checks with
// real handshakes, by the same process throughout: a renewed certificate and key renamed into
// place are served within the interval; an expired renewal, one not yet valid and a key that is
// not the certificate's are each refused, counted (idgen_tls_reloads_total) and logged while
// the previous pair is still served; a CA added to the client CA bundle admits its callers; a
// caller added to the callers file (a symbolic link whose target changes in a folder nobody
// watches, so only the periodic re-read sees it) is admitted; SIGHUP re-reads and does not end
// the process; idgen_tls_certificate_expiry_timestamp_seconds gives each expiry; and /healthz
// answers 503 once the certificate served has expired.
func CheckTLSReload(t *testing.T, svc TLSService) TLSReload {
	t.Helper()
	const every = time.Second
	res := TLSReload{Every: every}
	dir, elsewhere := t.TempDir(), t.TempDir()
	ca := NewCA(t, "first CA")
	first := ca.Server(t)
	f := WriteTLSFiles(t, dir, first, ca.PEM, callersFile("orders"))
	writePair := func(cert tls.Certificate) {
		c, k := EncodePEM(t, cert)
		RenameInto(t, f.Key, k)
		RenameInto(t, f.Cert, c)
	}
	// The callers file is a symbolic link to a file in a folder nobody watches.
	callersTarget := filepath.Join(elsewhere, "callers.json")
	RenameInto(t, callersTarget, callersFile("orders"))
	link := filepath.Join(dir, ".callers.link")
	if err := os.Symlink(callersTarget, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(link, f.Callers); err != nil {
		t.Fatal(err)
	}

	addr := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	base := "https://" + addr
	hour := time.Now().Add(time.Hour)
	orders := ca.Client(t, hour, spiffe("orders"))
	scraper := ca.Client(t, hour, spiffe("prometheus"))
	probe := func(roots *CA, cert tls.Certificate) (int, error) {
		c := roots.HTTPSClient(&cert)
		defer c.CloseIdleConnections()
		return svc.Probe(c, base)
	}
	p := proc.StartT(t, proc.Spec{Bin: svc.Bin, Args: append(svc.Args(addr, f), "--tls-reload-every", every.String()),
		HealthTimeout: 30 * time.Second, Health: func(context.Context) error {
			if code, err := probe(ca, orders); err != nil || code != svc.Allowed {
				return fmt.Errorf("a known caller: %d, %v", code, err)
			}
			return nil
		}})
	res.PID = p.Pid()
	servedSerial := func() string {
		c, err := ServedCertificate(addr, &orders)
		if err != nil {
			return "handshake: " + err.Error()
		}
		return c.SerialNumber.String()
	}
	serialOf := func(c tls.Certificate) string {
		leaf, _ := x509.ParseCertificate(c.Certificate[0])
		return leaf.SerialNumber.String()
	}
	if got := servedSerial(); got != serialOf(first) {
		t.Fatalf("serves serial %s, want the first certificate's %s", got, serialOf(first))
	}
	res.ServedSerials = append(res.ServedSerials, serialOf(first))
	metric := func(name string, labels Labels) float64 {
		c := ca.HTTPSClient(&scraper)
		defer c.CloseIdleConnections()
		return Scrape(t, c, base+"/metrics").Get(t, name, labels)
	}

	// A renewal renamed into place is served within the interval, by the same process.
	renewed := ca.Server(t)
	began := time.Now()
	writePair(renewed)
	Eventually(t, 10*time.Second, func() (bool, string) {
		got := servedSerial()
		return got == serialOf(renewed), "serves " + got + ", want the renewal's " + serialOf(renewed)
	})
	res.Watched = append(res.Watched, time.Since(began))
	res.ServedSerials = append(res.ServedSerials, serialOf(renewed))
	if res.Watched[0] > every {
		t.Errorf("the renewal was served %v after its rename, more than the reload interval %v", res.Watched[0], every)
	}
	renewedLeaf, _ := x509.ParseCertificate(renewed.Certificate[0])
	if got := metric("idgen_tls_certificate_expiry_timestamp_seconds", Labels{"kind": "server"}); got != float64(renewedLeaf.NotAfter.Unix()) {
		t.Errorf("server expiry %v, want the renewal's %d", got, renewedLeaf.NotAfter.Unix())
	}
	if got := metric("idgen_tls_reloads_total", Labels{"kind": "server", "outcome": "ok"}); got < 1 {
		t.Errorf("idgen_tls_reloads_total{kind=server,outcome=ok} = %v after a renewal", got)
	}

	// Bad renewals: refused, counted and logged, and the renewal stays served.
	now := time.Now()
	other := ca.Server(t)
	otherCert, _ := EncodePEM(t, other)
	_, renewedKey := EncodePEM(t, renewed)
	for _, bad := range []struct {
		name    string
		cert    tls.Certificate
		certPEM []byte // instead of cert's, with the renewal's key
		log     string
	}{
		{"expired", ca.ServerValid(t, now.Add(-2*time.Hour), now.Add(-time.Hour)), nil, "expired at"},
		{"not yet valid", ca.ServerValid(t, now.Add(time.Hour), now.Add(2*time.Hour)), nil, "not valid before"},
		{"a key that is not the certificate's", tls.Certificate{}, otherCert, "private key does not match public key"},
	} {
		errorsBefore := metric("idgen_tls_reloads_total", Labels{"kind": "server", "outcome": "error"})
		if bad.certPEM != nil {
			RenameInto(t, f.Key, renewedKey)
			RenameInto(t, f.Cert, bad.certPEM)
		} else {
			writePair(bad.cert)
		}
		Eventually(t, 10*time.Second, func() (bool, string) {
			n := metric("idgen_tls_reloads_total", Labels{"kind": "server", "outcome": "error"})
			return n > errorsBefore && strings.Contains(p.Tail(0), bad.log),
				fmt.Sprintf("%s renewal: reload errors %v (before %v); log line with %q: %v", bad.name, n, errorsBefore, bad.log, strings.Contains(p.Tail(0), bad.log))
		})
		if got := servedSerial(); got != serialOf(renewed) {
			t.Fatalf("after the %s renewal it serves %s, want the previous pair's %s", bad.name, got, serialOf(renewed))
		}
		res.RefusedRenewals++
	}
	if !strings.Contains(p.Tail(0), "TLS reload refused") {
		t.Errorf("no log line says a reload was refused:\n%s", p.Tail(0))
	}

	// A CA added to the bundle admits the callers it signed.
	ca2 := NewCA(t, "second CA")
	fromCA2 := ca2.Client(t, hour, spiffe("orders"))
	if code, err := probe(ca, fromCA2); err == nil {
		t.Fatalf("a caller of a CA the bundle does not hold was answered %d", code)
	}
	began = time.Now()
	RenameInto(t, f.ClientCA, append(append([]byte(nil), ca.PEM...), ca2.PEM...))
	Eventually(t, 10*time.Second, func() (bool, string) {
		code, err := probe(ca, fromCA2)
		return err == nil && code == svc.Allowed, fmt.Sprintf("a caller of the added CA: %d, %v", code, err)
	})
	res.Watched = append(res.Watched, time.Since(began))

	// A caller added to the callers file, where only the periodic re-read sees it.
	billing := ca.Client(t, hour, spiffe("billing"))
	if code, err := probe(ca, billing); err != nil || code != http.StatusForbidden {
		t.Fatalf("an unknown caller: %d, %v; want 403", code, err)
	}
	began = time.Now()
	RenameInto(t, callersTarget, callersFile("orders", "billing"))
	Eventually(t, 10*time.Second, func() (bool, string) {
		code, err := probe(ca, billing)
		return err == nil && code == svc.Allowed, fmt.Sprintf("the added caller: %d, %v", code, err)
	})
	res.Periodic = time.Since(began)
	if res.Periodic > every+time.Second {
		t.Errorf("the added caller was admitted %v after the change, more than the reload interval %v and a second", res.Periodic, every)
	}

	// SIGHUP re-reads and does not end the process.
	if err := p.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 10*time.Second, func() (bool, string) {
		return strings.Contains(p.Tail(0), "SIGHUP"), "no log line about the SIGHUP"
	})
	if code, err := probe(ca, orders); err != nil || code != svc.Allowed || p.Exited() {
		t.Fatalf("after SIGHUP: %d, %v, exited %v", code, err, p.Exited())
	}
	ca2Expiry := min(ca.Cert.NotAfter.Unix(), ca2.Cert.NotAfter.Unix())
	if got := metric("idgen_tls_certificate_expiry_timestamp_seconds", Labels{"kind": "client_ca"}); got != float64(ca2Expiry) {
		t.Errorf("client CA expiry %v, want the bundle's earliest %d", got, ca2Expiry)
	}

	// /healthz turns 503 once the certificate served expires.
	shortLived := ca.ServerValid(t, time.Now().Add(-time.Hour), time.Now().Add(3*time.Second))
	writePair(shortLived)
	Eventually(t, 10*time.Second, func() (bool, string) {
		got := servedSerial()
		return got == serialOf(shortLived), "serves " + got + ", want the short-lived one's " + serialOf(shortLived)
	})
	health := func() (int, string) {
		c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			InsecureSkipVerify: true, Certificates: []tls.Certificate{orders}, MinVersion: tls.VersionTLS12}}} // a load balancer's check
		defer c.CloseIdleConnections()
		resp, err := c.Get(base + "/healthz")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := health(); code != http.StatusOK {
		t.Fatalf("/healthz before the expiry: %d %s", code, body)
	}
	Eventually(t, 15*time.Second, func() (bool, string) {
		code, body := health()
		res.HealthAfterExpiry = fmt.Sprintf("%d %s", code, strings.TrimSpace(body))
		return code == http.StatusServiceUnavailable && strings.Contains(body, "certificate_expired"), "/healthz: " + res.HealthAfterExpiry
	})
	if p.Exited() || p.Pid() != res.PID {
		t.Fatalf("the process ended or changed")
	}
	return res
}

// CheckTLSStartRefused starts svc with an expired server certificate, then with one not valid
// yet: each time it must exit non-zero, saying why, without serving.
func CheckTLSStartRefused(t *testing.T, svc TLSService) {
	t.Helper()
	now := time.Now()
	for _, c := range []struct {
		name     string
		from, to time.Time
		message  string
	}{
		{"expired", now.Add(-2 * time.Hour), now.Add(-time.Hour), "expired at"},
		{"not yet valid", now.Add(time.Hour), now.Add(2 * time.Hour), "not valid before"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ca := NewCA(t, "CA")
			f := WriteTLSFiles(t, t.TempDir(), ca.ServerValid(t, c.from, c.to), ca.PEM, callersFile("orders"))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, svc.Bin, svc.Args(fmt.Sprintf("127.0.0.1:%d", FreePort(t)), f)...)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() <= 0 {
				t.Fatalf("with a server certificate %s: %v, want a non-zero exit\n%s", c.name, err, out)
			}
			if !strings.Contains(string(out), "server certificate") || !strings.Contains(string(out), c.message) {
				t.Fatalf("the refusal does not say the server certificate is %s (%q):\n%s", c.name, c.message, out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			t.Logf("exit %d: %s", exit.ExitCode(), lines[len(lines)-1])
			if svc.Refused != nil {
				svc.Refused(t, f)
			}
		})
	}
}
