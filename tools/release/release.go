package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"
)

// Lib is a released library: its folder in the repository, its module path and the version the
// last release named.
type Lib struct{ Dir, Path, Version string }

// versionsFile lists the released libraries, in dependency order, with their versions.
const versionsFile = "release/versions.txt"

// findRoot is the repository's root: the nearest folder up from dir with go.work and
// release/versions.txt.
func findRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if fileExists(filepath.Join(d, "go.work")) && fileExists(filepath.Join(d, versionsFile)) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.work with %s in %s or above", versionsFile, dir)
		}
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// readVersions reads release/versions.txt: "DIR VERSION" a line, "#" comments.
func readVersions(root string) ([]Lib, error) {
	f, err := os.Open(filepath.Join(root, versionsFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var libs []Lib
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 || !semver.IsValid(fields[1]) || semver.Canonical(fields[1]) != fields[1] {
			return nil, fmt.Errorf("%s:%d: want \"DIR vMAJOR.MINOR.PATCH\", not %q", versionsFile, n, line)
		}
		path, err := modulePath(filepath.Join(root, fields[0]))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", versionsFile, n, err)
		}
		libs = append(libs, Lib{Dir: fields[0], Path: path, Version: fields[1]})
	}
	return libs, sc.Err()
}

// modulePath is the module path that dir's go.mod declares.
func modulePath(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	if p := modfile.ModulePath(b); p != "" {
		return p, nil
	}
	return "", fmt.Errorf("%s/go.mod declares no module path", dir)
}

// zipFromGit zips the module in folder dir at git revision rev as the go command does when it
// fetches a tag from git: the files git archive gives (zip.CreateFromVCS does the same, but finds
// no repository in a git worktree, whose .git is a file).
func zipFromGit(w io.Writer, mv module.Version, root, rev, dir string) error {
	tmp, err := os.MkdirTemp("", "idgen-release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command("git", "-C", root, "archive", "--format=tar", rev, "--", dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	tr := tar.NewReader(out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg || !filepath.IsLocal(h.Name) {
			continue
		}
		p := filepath.Join(tmp, h.Name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("git archive %s %s: %v: %s", rev, dir, err, stderr.Bytes())
	}
	return zip.CreateFromDir(w, mv, filepath.Join(tmp, dir))
}

// buildProxy writes a file-based module proxy (GOPROXY=file://out) serving each library at its
// version: @v/list, .info, .mod and .zip. With rev "" the zips are made from the library
// folders as they are on disk (golang.org/x/mod/zip.CreateFromDir); otherwise from the git
// revision rev, which is what a tag of that revision serves.
func buildProxy(root, out string, libs []Lib, rev string) error {
	for _, l := range libs {
		mv := module.Version{Path: l.Path, Version: l.Version}
		escPath, err := module.EscapePath(l.Path)
		if err != nil {
			return err
		}
		escVer, err := module.EscapeVersion(l.Version)
		if err != nil {
			return err
		}
		vdir := filepath.Join(out, escPath, "@v")
		if err := os.MkdirAll(vdir, 0o755); err != nil {
			return err
		}
		var gomod []byte
		if rev == "" {
			gomod, err = os.ReadFile(filepath.Join(root, l.Dir, "go.mod"))
		} else {
			gomod, err = exec.Command("git", "-C", root, "show", rev+":"+l.Dir+"/go.mod").Output()
		}
		if err != nil {
			return fmt.Errorf("%s's go.mod: %w", l.Dir, err)
		}
		var zbuf bytes.Buffer
		if rev == "" {
			err = zip.CreateFromDir(&zbuf, mv, filepath.Join(root, l.Dir))
		} else {
			err = zipFromGit(&zbuf, mv, root, rev, l.Dir)
		}
		if err != nil {
			return fmt.Errorf("zip of %s: %w", l.Dir, err)
		}
		info, _ := json.Marshal(struct {
			Version string
			Time    time.Time
		}{l.Version, time.Unix(0, 0).UTC()})
		for name, b := range map[string][]byte{
			escVer + ".info": info,
			escVer + ".mod":  gomod,
			escVer + ".zip":  zbuf.Bytes(),
		} {
			if err := os.WriteFile(filepath.Join(vdir, name), b, 0o644); err != nil {
				return err
			}
		}
		if err := appendVersion(filepath.Join(vdir, "list"), l.Version); err != nil {
			return err
		}
	}
	return nil
}

func appendVersion(list, v string) error {
	b, err := os.ReadFile(list)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, have := range strings.Fields(string(b)) {
		if have == v {
			return nil
		}
	}
	return os.WriteFile(list, append(b, v+"\n"...), 0o644)
}

// proxyEnv is the environment for a go command that builds a module without the workspace
// (GOWORK=off), taking the libraries from the file proxy at dir and every other module as the
// environment does: no checksum database for github.com/idgen (it never saw these zips), and
// -mod=mod so that go.mod and go.sum may gain what is missing.
//
// The libraries' zips are the folders as they are now under a released version, which the
// module cache would keep as that version for good: the module cache is one of its own, cache,
// with -modcacherw so that it can be removed, and the environment's module cache is the second
// proxy, so third-party modules come from it without the network when it has them. -trimpath
// keeps the folders out of the build cache's keys, so packages built once from one such module
// cache are not built again from the next.
func proxyEnv(dir, cache string) ([]string, error) {
	out, err := exec.Command("go", "env", "GOPROXY", "GOFLAGS", "GONOSUMDB", "GOMODCACHE").Output()
	if err != nil {
		return nil, fmt.Errorf("go env: %w", err)
	}
	v := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	for len(v) < 4 {
		v = append(v, "")
	}
	nosum := "github.com/idgen/*"
	if v[2] != "" {
		nosum += "," + v[2]
	}
	proxy := "file://" + filepath.ToSlash(dir)
	if v[3] != "" && v[3] != cache {
		proxy += ",file://" + filepath.ToSlash(filepath.Join(v[3], "cache", "download"))
	}
	if v[0] != "" && v[0] != "off" {
		proxy += "," + v[0]
	}
	// A kept module cache holds the libraries at the same folders from run to run, with other
	// contents: the go command's index of module cache folders (in GOCACHE), which takes them to
	// be immutable, is off.
	godebug := "goindex=0"
	if g := os.Getenv("GODEBUG"); g != "" {
		godebug = g + "," + godebug
	}
	return []string{"GOPROXY=" + proxy, "GONOSUMDB=" + nosum, "GOFLAGS=" + strings.TrimSpace(v[1]+" -mod=mod -modcacherw -trimpath"),
		"GOMODCACHE=" + cache, "GOWORK=off", "GODEBUG=" + godebug}, nil
}

// keptCache is a module cache for proxyEnv kept between runs, outside the repository (whose
// checks read every file in it): in the user's cache folder, one per checkout and name.
func keptCache(root, name string) (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(dir, "idgen-modcache", fmt.Sprintf("%x-%s", sum[:6], name)), nil
}

// forgetLibs removes the libraries from the module cache at cache, which may have kept them as
// they were at an earlier run under the same versions.
func forgetLibs(cache string) error {
	for _, d := range []string{filepath.Join(cache, "github.com", "idgen"), filepath.Join(cache, "cache", "download", "github.com", "idgen")} {
		_ = filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				_ = os.Chmod(p, 0o755)
			}
			return nil
		})
		if err := os.RemoveAll(d); err != nil {
			return err
		}
	}
	return nil
}

// apiFile is where the API of l at version is kept: export data written by apidiff -m -w.
func apiFile(root string, l Lib, version string) string {
	return filepath.Join(root, "release", "api", l.Dir, version+".apidiff")
}

// writeAPI writes the API of the library in dir (module path l.Path) to file.
func writeAPI(apidiff, dir, path, file string, env []string) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	cmd := exec.Command(apidiff, "-m", "-w", file, path)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("apidiff -m -w %s %s: %v\n%s", file, path, err, out)
	}
	return nil
}

// sameAPI reports whether file exists and holds the API of the module in dir, change for change
// (apidiff reports nothing, compatible or not).
func sameAPI(apidiff, dir, path, file string, env []string) (bool, error) {
	if !fileExists(file) {
		return false, nil
	}
	cmd := exec.Command(apidiff, "-m", file, path)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return false, fmt.Errorf("apidiff -m %s %s: %v\n%s", file, path, err, out)
	}
	return strings.TrimSpace(string(out)) == "", nil
}

// checkAPI compares the exported API of the module in dir with the API file of its last release
// l. It fails on an incompatible change, unless the module's major version has changed (its path
// ends in another /vN than the release's), which is how Go marks a break. The report says what
// it compared.
func checkAPI(apidiff, root string, l Lib, dir string, env []string) (string, error) {
	path, err := modulePath(dir)
	if err != nil {
		return "", err
	}
	_, pathMajor, _ := module.SplitPathVersion(path)
	if module.CheckPathMajor(l.Version, pathMajor) != nil {
		return fmt.Sprintf("%s: module path %s is a new major version after %s: not compared", l.Dir, path, l.Version), nil
	}
	file := apiFile(root, l, l.Version)
	if !fileExists(file) {
		return "", fmt.Errorf("%s: no API file for its last release %s (%s): scripts/release.sh writes it", l.Dir, l.Version, file)
	}
	cmd := exec.Command(apidiff, "-m", "-incompatible", file, path)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("apidiff -m -incompatible %s %s: %v\n%s", file, path, err, out)
	}
	if report := strings.TrimSpace(string(out)); report != "" {
		return "", fmt.Errorf("%s: incompatible with its last release %s (a break needs a new major version, %s/v%d):\n%s",
			l.Dir, l.Version, strings.TrimSuffix(path, pathMajor), nextMajor(l.Version), report)
	}
	return fmt.Sprintf("%s: compatible with %s", l.Dir, l.Version), nil
}

func nextMajor(v string) int {
	var n int
	fmt.Sscanf(strings.TrimPrefix(semver.Major(v), "v"), "%d", &n)
	if n < 1 {
		return 2 // v0 and v1 share the unsuffixed path; the next path is /v2
	}
	return n + 1
}

// apidiffBin is the pinned apidiff that make setup installs under .tools/bin, or the one on PATH.
func apidiffBin(root string) (string, error) {
	if p := filepath.Join(root, ".tools", "bin", "apidiff"); fileExists(p) {
		return p, nil
	}
	if p, err := exec.LookPath("apidiff"); err == nil {
		return p, nil
	}
	return "", errors.New("apidiff is not installed: make setup installs it under .tools/bin")
}
