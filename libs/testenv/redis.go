package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/localstack/proc"
)

// Redis is a redis-server the test started: appendonly yes, appendfsync always, no RDB snapshots.
type Redis struct {
	Addr    string
	Port    int
	TLSAddr string // with StartRedisTLS: the TLS port's address
	CAFile  string // with StartRedisTLS: the PEM file of the CA that issued the server's certificate
	Dir     string
	args    []string
	p       *proc.Proc
}

// StartRedisTLS starts redis-server as StartRedis, with a TLS port as well (TLSAddr) whose
// certificate, for 127.0.0.1, a CA made for the test issues (CAFile). Clients need no certificate.
func StartRedisTLS(t testing.TB, dir string, extra ...string) *Redis {
	t.Helper()
	ca := NewCA(t, "redis-test-ca")
	certFile, keyFile := WritePEM(t, dir, "redis-server", ca.Server(t))
	caFile := filepath.Join(dir, "redis-ca.crt")
	if err := os.WriteFile(caFile, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	tlsPort := FreePort(t)
	r := StartRedis(t, dir, append([]string{"--tls-port", fmt.Sprint(tlsPort), "--tls-cert-file", certFile,
		"--tls-key-file", keyFile, "--tls-ca-cert-file", caFile, "--tls-auth-clients", "no"}, extra...)...)
	r.TLSAddr, r.CAFile = fmt.Sprintf("127.0.0.1:%d", tlsPort), caFile
	return r
}

// StartRedis starts redis-server (from the system, installed by make setup) on a free port with
// its data in dir, and stops it when the test ends. extra arguments are appended.
func StartRedis(t testing.TB, dir string, extra ...string) *Redis {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("testenv: redis-server is missing: run `make setup` (apt-get install redis-server)")
	}
	port := FreePort(t)
	r := &Redis{Port: port, Addr: fmt.Sprintf("127.0.0.1:%d", port), Dir: dir}
	r.args = append([]string{"--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--dir", dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "", "--daemonize", "no",
		"--protected-mode", "no", "--logfile", filepath.Join(dir, "redis.log")}, extra...)
	r.start(t)
	t.Cleanup(r.Stop)
	return r
}

func (r *Redis) start(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	logFile := filepath.Join(r.Dir, "redis.log")
	var before int64 // the log of an earlier start of this server
	if fi, err := os.Stat(logFile); err == nil {
		before = fi.Size()
	}
	p, err := proc.Start(ctx, proc.Spec{Bin: "redis-server", Args: r.args, Grace: 5 * time.Second,
		Health: func(ctx context.Context) error {
			out, err := exec.CommandContext(ctx, "redis-cli", "-p", fmt.Sprint(r.Port), "PING").Output()
			// NOAUTH: the server answers, and wants a password (--requirepass).
			if reply := strings.TrimSpace(string(out)); err != nil || (reply != "PONG" && !strings.HasPrefix(reply, "NOAUTH")) {
				return fmt.Errorf("PING: %q, %v", reply, err)
			}
			// The server that answers must be this process, not another test's that took the
			// port (free a moment ago) first: this one then fails to listen and ends.
			if b, _ := os.ReadFile(logFile); int64(len(b)) < before || !strings.Contains(string(b[before:]), "Ready to accept connections") {
				return fmt.Errorf("redis-server on %d does not say it is ready yet", r.Port)
			}
			return nil
		}})
	if err != nil {
		t.Fatalf("testenv: start redis-server: %v", err)
	}
	if err := p.WaitHealthy(ctx); err != nil {
		_ = p.Kill()
		b, _ := os.ReadFile(filepath.Join(r.Dir, "redis.log"))
		t.Fatalf("testenv: redis-server on %d did not answer: %v\n%s%s", r.Port, err, p.Tail(20), b)
	}
	r.p = p
}

// Kill stops the server with SIGKILL, as a crash would.
func (r *Redis) Kill() { _ = r.p.Kill() }

// Freeze stops the server with SIGSTOP, as a process the kernel no longer schedules: connections
// stay open and nothing answers. Thaw (SIGCONT) lets it go on; the test's cleanup thaws it too,
// so that it can be stopped.
func (r *Redis) Freeze(t testing.TB) {
	t.Helper()
	if err := r.p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("testenv: freeze redis-server: %v", err)
	}
	t.Cleanup(r.Thaw)
}

// Thaw lets a frozen server go on (SIGCONT).
func (r *Redis) Thaw() { _ = r.p.Signal(syscall.SIGCONT) }

// Restart starts the server again on the same port and data folder.
func (r *Redis) Restart(t testing.TB) { r.start(t) }

// Stop stops the server (SIGTERM, then SIGKILL) and waits for it.
func (r *Redis) Stop() { _ = r.p.Stop() }

// StartRedisCluster starts three masters with cluster mode on and joins them with
// `redis-cli --cluster create`; it returns their addresses.
func StartRedisCluster(t testing.TB) []string {
	t.Helper()
	var addrs []string
	for _, r := range StartRedisClusterServers(t) {
		addrs = append(addrs, r.Addr)
	}
	return addrs
}

// StartRedisClusterServers is StartRedisCluster returning the servers themselves (to stop or
// freeze them).
func StartRedisClusterServers(t testing.TB) []*Redis {
	t.Helper()
	var addrs []string
	var servers []*Redis
	for i := range 3 {
		dir := filepath.Join(t.TempDir(), fmt.Sprint(i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		r := StartRedis(t, dir, "--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"), "--cluster-node-timeout", "5000")
		addrs = append(addrs, r.Addr)
		servers = append(servers, r)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("testenv: redis-cli --cluster create: %v\n%s", err, out)
	}
	// Every master, not only the first: each learns the others' slots by gossip, and one that
	// has not yet answers CLUSTERDOWN.
	Eventually(t, 20*time.Second, func() (bool, string) {
		for _, r := range servers {
			out, _ := exec.Command("redis-cli", "-p", fmt.Sprint(r.Port), "CLUSTER", "INFO").Output()
			if !strings.Contains(string(out), "cluster_state:ok") {
				return false, fmt.Sprintf("testenv: the cluster is not ok on %s: %s", r.Addr, out)
			}
		}
		return true, ""
	})
	return servers
}
