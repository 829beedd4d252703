package terraform

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/idgen/idgen/libs/testenv"
	"github.com/zclconf/go-cty/cty"
)

// renderedUserData returns every evaluated fleet instance's user data as the launch template gets
// it (templatefile rendered with the instance's values).
func renderedUserData(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, in := range fleets(t) {
		v := in.locals["user_data"]
		if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
			t.Errorf("%s: the user data is not known at plan time", in.addr)
			continue
		}
		out[in.addr] = v.AsString()
	}
	return out
}

// TestRenderedUserData: every fleet's rendered boot script holds the clock rules, fits EC2's 16 KB,
// is valid bash, fetches from the fleet's own region, copies its certificate files with the
// refresher (linked from /etc/idgen) and starts the refresher's timer after the service.
func TestRenderedUserData(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal(err)
	}
	scripts := renderedUserData(t)
	if len(scripts) == 0 {
		t.Fatal("no fleet rendered")
	}
	withCertificates := map[string]bool{}
	for _, in := range fleets(t) {
		if v := in.vars["certificate_files"]; v.IsWhollyKnown() && !v.IsNull() && v.LengthInt() > 0 {
			withCertificates[in.addr] = true
		}
	}
	for addr, script := range scripts {
		for _, p := range checkUserData(script) {
			t.Errorf("%s: %s", addr, p)
		}
		// EC2 takes at most 16 KB of user data (before base64): more fails the launch template.
		if len(script) > 16*1024 {
			t.Errorf("%s: the user data is %d bytes, over EC2's 16 KB", addr, len(script))
		}
		cmd := exec.Command("bash", "-n")
		cmd.Stdin = strings.NewReader(script)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: the user data is not valid bash: %v\n%s", addr, err, out)
		}
		refresher, err := refresherOf(script)
		if !withCertificates[addr] {
			// A fleet without certificate files (the customer gateway: TLS ends on its ALB) has no
			// refresher and no timer.
			if err == nil || strings.Contains(script, "idgen-cert-refresh.timer") {
				t.Errorf("%s: has no certificate files but a certificate refresher", addr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", addr, err)
			continue
		}
		cmd = exec.Command("bash", "-n")
		cmd.Stdin = strings.NewReader(refresher)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: the refresher is not valid bash: %v\n%s", addr, err, out)
		}
		for _, want := range []string{"tls.crt", "tls.key", "client-ca.pem"} {
			if !strings.Contains(refresher, `"$new/`+want+`"`) || !strings.Contains(script, "ln -sfn certs/"+want+" /etc/idgen/"+want) {
				t.Errorf("%s: %s is not fetched by the refresher and linked into /etc/idgen", addr, want)
			}
		}
		// Every S3 copy names the region (the gateway endpoint serves its own region's buckets),
		// and every bucket is that region's copy.
		region := regexp.MustCompile(`(?m)^Environment=AWS_REGION=(\S+)$`).FindStringSubmatch(script)
		if region == nil {
			t.Errorf("%s: no AWS_REGION in the unit", addr)
			continue
		}
		for _, m := range regexp.MustCompile(`(?m)^.*aws"? (.*)s3 cp .*'s3://([^/']+)/`).FindAllStringSubmatch(script, -1) {
			if !strings.Contains(m[1], "--region '"+region[1]+"'") {
				t.Errorf("%s: an S3 copy without --region %s: %s", addr, region[1], m[0])
			}
			if !strings.HasSuffix(m[2], "-"+region[1]) {
				t.Errorf("%s: bucket %s is not the %s copy", addr, m[2], region[1])
			}
		}
		start := strings.Index(script, "systemctl enable --now idgen-")
		timer := strings.Index(script, "systemctl enable --now idgen-cert-refresh.timer")
		if timer < 0 || start < 0 || timer < start || strings.Index(script, "systemctl enable --now idgen-cert-refresh.timer") == start {
			t.Errorf("%s: the refresher's timer does not start after the service", addr)
		}
	}
}

var refresherBlock = regexp.MustCompile(`(?s)cat > /usr/local/sbin/idgen-cert-refresh <<'REFRESH'\n(.*?)\nREFRESH\n`)

func refresherOf(script string) (string, error) {
	m := refresherBlock.FindStringSubmatch(script)
	if m == nil {
		return "", os.ErrNotExist
	}
	return m[1] + "\n", nil
}

// pair is a certificate and its key, PEM.
type pair struct{ crt, key []byte }

// newPair issues a server certificate of ca.
func newPair(t *testing.T, ca *testenv.CA) pair {
	t.Helper()
	crt, key := testenv.EncodePEM(t, ca.Server(t))
	return pair{crt, key}
}

// TestCertRefresher runs the refresher of the registry's rendered user data on a host folder of
// its own, with a fake aws that copies from a local folder laid out as the buckets: at boot it
// installs the files, unchanged it does nothing, a renewal replaces certificate, key and CA
// together, and a certificate that is not the key's, a key that is not a key or a missing object
// leave the files in use as they are. With a reload signal it signals the service, only when it
// replaced something.
func TestCertRefresher(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Fatal("the refresher checks certificates with openssl, as the hosts do:", err)
	}
	scripts := renderedUserData(t)
	var script string
	for addr, s := range scripts {
		if strings.HasSuffix(addr, "live/registry.module.registry.module.fleet") {
			script = s
		}
	}
	refresher, err := refresherOf(script)
	if err != nil {
		t.Fatal("no refresher in the registry's user data")
	}
	dir := t.TempDir()
	etc, s3, bin := filepath.Join(dir, "etc"), filepath.Join(dir, "s3"), filepath.Join(dir, "bin")
	for _, d := range []string{filepath.Join(etc, "certs.d"), s3, bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string, b []byte, mode os.FileMode) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, mode); err != nil {
			t.Fatal(err)
		}
	}
	// aws --region R s3 cp --only-show-errors s3://bucket/key DEST
	write(filepath.Join(bin, "aws"), []byte(`#!/bin/bash
set -eu
src="${@: -2:1}" dst="${@: -1}"
cp "$FAKE_S3/${src#s3://}" "$dst"
`), 0o755)
	// systemctl is-active: the service runs; systemctl kill: logged.
	write(filepath.Join(bin, "systemctl"), []byte(`#!/bin/bash
echo "$*" >> "$FAKE_SYSTEMCTL_LOG"
`), 0o755)
	script0 := refresher
	// The objects the registry's refresher fetches, from example.tfvars' tls_s3_prefix.
	objects := regexp.MustCompile(`'s3://([^']+)' "\$new/([^"]+)"`).FindAllStringSubmatch(script0, -1)
	if len(objects) != 3 {
		t.Fatalf("the refresher fetches %d objects, want 3 (certificate, key, CA)", len(objects))
	}
	key := map[string]string{}
	for _, o := range objects {
		key[o[2]] = o[1]
	}
	publish := func(p, ca pair) {
		write(filepath.Join(s3, key["tls.crt"]), p.crt, 0o644)
		write(filepath.Join(s3, key["tls.key"]), p.key, 0o644)
		write(filepath.Join(s3, key["client-ca.pem"]), ca.crt, 0o644)
	}
	log := filepath.Join(dir, "systemctl.log")
	run := func(signal string) (string, error) {
		s := strings.Replace(script0, "signal='SIGHUP'", "signal='"+signal+"'", 1)
		cmd := exec.Command("bash", "-c", s)
		cmd.Env = append(os.Environ(), "IDGEN_ETC="+etc, "IDGEN_OWNER="+currentOwner(t), "IDGEN_AWS="+filepath.Join(bin, "aws"),
			"FAKE_S3="+s3, "FAKE_SYSTEMCTL_LOG="+log, "PATH="+bin+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	inUse := func() (string, pair, []byte) {
		t.Helper()
		target, err := os.Readlink(filepath.Join(etc, "certs"))
		if err != nil {
			t.Fatal(err)
		}
		rd := func(f string) []byte {
			b, err := os.ReadFile(filepath.Join(etc, "certs", f))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		return target, pair{rd("tls.crt"), rd("tls.key")}, rd("client-ca.pem")
	}
	noLeftovers := func() {
		t.Helper()
		if m, _ := filepath.Glob(filepath.Join(etc, "certs.d", ".new.*")); len(m) > 0 {
			t.Errorf("left behind: %v", m)
		}
	}
	if !strings.Contains(script0, "signal='SIGHUP'") {
		t.Fatal("the registry's refresher sends no SIGHUP: the services reload their certificates on it")
	}

	authority := testenv.NewCA(t, "ca")
	ca, a, b, c := pair{crt: authority.PEM}, newPair(t, authority), newPair(t, authority), newPair(t, authority)
	publish(a, ca)
	if out, err := run("none"); err != nil {
		t.Fatalf("at boot: %v\n%s", err, out)
	}
	first, got, gotCA := inUse()
	if !bytes.Equal(got.crt, a.crt) || !bytes.Equal(got.key, a.key) || !bytes.Equal(gotCA, ca.crt) {
		t.Fatal("at boot: not the published files")
	}
	// Unchanged: nothing moves.
	if out, err := run("none"); err != nil {
		t.Fatalf("unchanged: %v\n%s", err, out)
	}
	if now, _, _ := inUse(); now != first {
		t.Errorf("unchanged files made a new folder: %s, was %s", now, first)
	}
	noLeftovers()
	// Renewed: certificate and key change together.
	publish(b, ca)
	if out, err := run("none"); err != nil || !strings.Contains(out, "certificate files replaced") {
		t.Fatalf("renewal: %v\n%s", err, out)
	}
	second, got, _ := inUse()
	if second == first || !bytes.Equal(got.crt, b.crt) || !bytes.Equal(got.key, b.key) {
		t.Fatalf("renewal: in use %s, the renewed pair: %v", second, bytes.Equal(got.crt, b.crt))
	}
	if _, err := os.Stat(filepath.Join(etc, first)); err != nil {
		t.Errorf("the previous folder %s is not kept: %v", first, err)
	}
	// Bad renewals leave the files in use as they are.
	for _, bad := range []struct {
		name  string
		setup func()
		say   string
	}{
		{"certificate of another key", func() {
			write(filepath.Join(s3, key["tls.crt"]), c.crt, 0o644)
			write(filepath.Join(s3, key["tls.key"]), b.key, 0o644)
		}, "is not the certificate of tls.key"},
		{"a key that is not one", func() {
			write(filepath.Join(s3, key["tls.crt"]), c.crt, 0o644)
			write(filepath.Join(s3, key["tls.key"]), []byte("not a key\n"), 0o644)
		}, "tls.key is not a PEM private key"},
		{"a missing object", func() { publish(c, ca); os.Remove(filepath.Join(s3, key["client-ca.pem"])) }, ""},
	} {
		bad.setup()
		out, err := run("none")
		if err == nil || !strings.Contains(out, bad.say) {
			t.Errorf("%s: err %v, output %q, want a refusal saying %q", bad.name, err, out, bad.say)
		}
		if now, got, _ := inUse(); now != second || !bytes.Equal(got.crt, b.crt) {
			t.Errorf("%s: the files in use changed", bad.name)
		}
		noLeftovers()
	}
	// A third renewal, with a reload signal: the service is signalled once, the oldest folder goes.
	publish(c, ca)
	if out, err := run("SIGHUP"); err != nil {
		t.Fatalf("third renewal: %v\n%s", err, out)
	}
	third, got, _ := inUse()
	if third == second || !bytes.Equal(got.crt, c.crt) {
		t.Fatal("third renewal: not in use")
	}
	if _, err := os.Stat(filepath.Join(etc, first)); !os.IsNotExist(err) {
		t.Errorf("the oldest folder %s is still there", first)
	}
	if _, err := run("SIGHUP"); err != nil {
		t.Fatal(err)
	}
	calls, _ := os.ReadFile(log)
	if want := "is-active --quiet idgen-registry.service\nkill --signal=SIGHUP idgen-registry.service\n"; string(calls) != want {
		t.Errorf("systemctl calls %q, want one signal after the one replacement: %q", calls, want)
	}
}

func currentOwner(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("id", "-u").Output()
	if err != nil {
		t.Fatal(err)
	}
	g, err := exec.Command("id", "-g").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out)) + ":" + strings.TrimSpace(string(g))
}
