package proc

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// BuildOptions are how Build compiles. The zero value builds without tags from the working folder.
type BuildOptions struct {
	// Tags are the build tags (go build -tags); none by default.
	Tags []string
	// Dir is the folder relative package paths start from; "" is the working folder.
	Dir string
}

// CacheEnv names the environment variable that chooses Build's cache folder; by default it is
// idgen-proc-UID under os.TempDir().
const CacheEnv = "IDGEN_PROC_CACHE"

// built is one package's build in this process: its result is kept while the binary is there.
type built struct {
	mu   sync.Mutex
	path string
	err  error
}

var builds sync.Map // buildKey → *built

type buildKey struct{ dir, pkg, tags string }

// Build compiles each main package (an import path, or a folder relative to the working folder:
// "../cmd/generator") without build tags and returns the binaries' paths in the same order.
func Build(ctx context.Context, pkgs ...string) ([]string, error) {
	return BuildWith(ctx, BuildOptions{}, pkgs...)
}

// BuildWith is Build with options. A package built before in this process with the same tags is
// not looked at again while its binary is there (a failed build is not retried); otherwise go
// build runs under the binary's lock file, relinking only when the binary in the cache is not up
// to date.
func BuildWith(ctx context.Context, o BuildOptions, pkgs ...string) ([]string, error) {
	dir := o.Dir
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return nil, err
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	tags := strings.Join(o.Tags, ",")
	out := make([]string, len(pkgs))
	for i, pkg := range pkgs {
		b, _ := builds.LoadOrStore(buildKey{dir, pkg, tags}, &built{})
		bb := b.(*built)
		bb.mu.Lock()
		if bb.err == nil && (bb.path == "" || !fileExists(bb.path)) {
			bb.path, bb.err = build(ctx, dir, pkg, tags)
		}
		path, err := bb.path, bb.err
		bb.mu.Unlock()
		if err != nil {
			return nil, err
		}
		out[i] = path
	}
	return out, nil
}

// build resolves pkg to its folder, then runs go build into the cache under the binary's lock.
func build(ctx context.Context, dir, pkg, tags string) (string, error) {
	args := []string{"list"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	list := exec.CommandContext(ctx, "go", append(args, "-f", "{{.Name}}\t{{.Dir}}", pkg)...)
	list.Dir = dir
	var stderr bytes.Buffer
	list.Stderr = &stderr
	b, err := list.Output()
	if err != nil {
		return "", fmt.Errorf("proc: go list %s: %w\n%s", pkg, err, stderr.Bytes())
	}
	listed := strings.TrimSpace(string(b))
	if listed == "" {
		return "", fmt.Errorf("proc: %s matches no package", pkg)
	}
	if strings.Contains(listed, "\n") {
		return "", fmt.Errorf("proc: %s names several packages; Build takes one main package each", pkg)
	}
	name, pkgDir, _ := strings.Cut(listed, "\t")
	if name != "main" {
		return "", fmt.Errorf("proc: %s is package %s, not a main package", pkg, name)
	}
	cache, err := cacheDir()
	if err != nil {
		return "", err
	}
	// The key is everything that makes one binary differ from another for the same sources.
	sum := sha256.Sum256([]byte(strings.Join([]string{pkgDir, tags, os.Getenv("GOOS"),
		os.Getenv("GOARCH"), os.Getenv("GOFLAGS"), os.Getenv("CGO_ENABLED"), os.Getenv("GOTOOLCHAIN")}, "\x00")))
	base := filepath.Base(pkgDir)
	key := base + "-" + hex.EncodeToString(sum[:8])
	bin := filepath.Join(cache, key, base)
	unlock, err := lockFile(filepath.Join(cache, key+".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	args = []string{"build"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.CommandContext(ctx, "go", append(args, "-o", bin, ".")...)
	cmd.Dir = pkgDir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("proc: go build %s: %w\n%s", pkg, err, out)
	}
	return bin, nil
}

func fileExists(path string) bool { _, err := os.Stat(path); return err == nil }

func cacheDir() (string, error) {
	dir := os.Getenv(CacheEnv)
	if dir == "" {
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("idgen-proc-%d", os.Getuid()))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("proc: build cache: %w", err)
	}
	return dir, nil
}
