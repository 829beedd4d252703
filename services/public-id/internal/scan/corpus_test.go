package scan_test

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/idgen/idgen/services/public-id/publicid"
	"github.com/sqids/sqids-go"
)

// The corpus of ordinary text on which TestFalsePositives measures how often the scanner takes
// something for an internal ID. It is built from text every machine of the project has offline
// (Go's own source, which the toolchain brings, and base-files' licences), and from values
// generated with a fixed seed, so that the figures are the same on every run of one toolchain.

// category is one kind of ordinary value, each value scanned on its own (as one plain field).
type category struct {
	name   string
	source string // what it is made of, as the README names it
	values []string
}

// corpus returns the categories. Any category whose source is missing on this machine is left
// out with a log line.
func corpus(t testing.TB) []category {
	t.Helper()
	var cats []category
	words, lines := goComments(t)
	if len(words) > 0 {
		cats = append(cats,
			category{"words", "distinct words of the // comments of GOROOT/src (non-test .go files, no testdata or vendor), punctuation trimmed", words},
			category{"words, letters only", "the words above made of letters only (A–Z, a–z)", lettersOnly(words)},
			category{"prose (Go comments)", "distinct // comment lines of the same files, 20 characters or more", lines})
	}
	if lic := licenceLines(t); len(lic) > 0 {
		cats = append(cats, category{"prose (licences)", "distinct non-empty lines of /usr/share/common-licenses/*", lic})
	}
	rng := rand.New(rand.NewPCG(32, 1))
	cats = append(cats,
		category{"product codes", "20,000 generated SKUs, order and booking codes, EANs (seed 32,1)", productCodes(rng, 20000)},
		category{"public IDs", "10,000 public IDs of this service (sqids of two random uint64, the service's alphabet)", publicIDs(t, rng, 10000)},
		category{"SHA-256 hex", "5,000 hex SHA-256 digests", digests(5000, func(i int) string { s := sha256.Sum256([]byte(fmt.Sprint(i))); return hex.EncodeToString(s[:]) })},
		category{"git SHAs", "5,000 full (40) and 5,000 short (7 and 12) hex SHA-1s", gitSHAs(5000)},
		category{"UUIDv4", "5,000 random version-4 UUIDs", uuids(rng, 5000)},
		category{"dates and numbers", "10,000 prices, phone numbers, RFC 3339 times, quantities", numbers(rng, 10000)},
	)
	return cats
}

func goroot() string {
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		if s := strings.TrimSpace(string(out)); s != "" {
			return s
		}
	}
	return ""
}

// goComments returns the distinct words and the distinct lines (20 characters or more) of the
// // comments of Go's non-test source files under GOROOT/src.
func goComments(t testing.TB) (words, lines []string) {
	src := filepath.Join(goroot(), "src")
	wordSet, lineSet := map[string]bool{}, map[string]bool{}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "vendor") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n") {
			c, ok := strings.CutPrefix(strings.TrimSpace(line), "//")
			if !ok || strings.HasPrefix(c, "go:") || strings.HasPrefix(c, "line ") {
				continue
			}
			c = strings.TrimSpace(c)
			if len(c) >= 20 {
				lineSet[c] = true
			}
			for _, w := range strings.Fields(c) {
				if w = strings.Trim(w, ".,;:()[]{}\"'`!?*<>"); w != "" {
					wordSet[w] = true
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Logf("no Go source under %s: %v", src, err)
		return nil, nil
	}
	return sorted(wordSet), sorted(lineSet)
}

func lettersOnly(words []string) []string {
	var out []string
	for _, w := range words {
		if strings.Trim(w, upper+lower) == "" {
			out = append(out, w)
		}
	}
	return out
}

func licenceLines(t testing.TB) []string {
	files, _ := filepath.Glob("/usr/share/common-licenses/*")
	set := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // a directory or a link to one
		}
		for _, l := range strings.Split(string(b), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				set[l] = true
			}
		}
	}
	if len(set) == 0 {
		t.Logf("no /usr/share/common-licenses")
	}
	return sorted(set)
}

func sorted(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

const (
	upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	lower = "abcdefghijklmnopqrstuvwxyz"
	digs  = "0123456789"
)

func pick(rng *rand.Rand, alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

func productCodes(rng *rand.Rand, n int) []string {
	formats := []func() string{
		func() string { return pick(rng, upper, 2) + "-" + pick(rng, digs, 4) + "-" + pick(rng, upper, 2) }, // AB-1234-XY
		func() string { return "SKU-" + pick(rng, digs, 6) },
		func() string { return pick(rng, upper, 3) + pick(rng, digs, 5) }, // ABC12345
		func() string {
			return pick(rng, upper+digs, 4) + "-" + pick(rng, upper+digs, 4) + "-" + pick(rng, upper+digs, 4)
		}, // licence-key style
		func() string { return pick(rng, upper+digs, 6) }, // airline booking code
		func() string { return fmt.Sprintf("BK-%d-%05d", 2020+rng.IntN(7), rng.IntN(100000)) },
		func() string { return pick(rng, digs, 13) },                                            // EAN-13
		func() string { return pick(rng, upper, 2) + pick(rng, digs, 9) + pick(rng, upper, 2) }, // parcel tracking
		func() string { return strings.ToLower(pick(rng, upper, 3)) + "-" + pick(rng, lower+digs, 8) },
		func() string { return pick(rng, upper, 1) + pick(rng, lower, 4+rng.IntN(6)) + "-" + pick(rng, digs, 3) },
	}
	out := make([]string, n)
	for i := range out {
		out[i] = formats[i%len(formats)]()
	}
	return out
}

func publicIDs(t testing.TB, rng *rand.Rand, n int) []string {
	sq, err := sqids.New(sqids.Options{Alphabet: publicid.Alphabet})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, n)
	for i := range out {
		body, err := sq.Encode([]uint64{rng.Uint64(), rng.Uint64()})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = "ord_" + body
	}
	return out
}

func digests(n int, f func(i int) string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

func gitSHAs(n int) []string {
	var out []string
	for i := range n {
		s := sha1.Sum([]byte(fmt.Sprint("commit ", i)))
		h := hex.EncodeToString(s[:])
		out = append(out, h)
		if i%2 == 0 {
			out = append(out, h[:7])
		} else {
			out = append(out, h[:12])
		}
	}
	return out
}

func uuids(rng *rand.Rand, n int) []string {
	out := make([]string, n)
	for i := range out {
		var b [16]byte
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		b[6] = b[6]&0x0f | 0x40
		b[8] = b[8]&0x3f | 0x80
		h := hex.EncodeToString(b[:])
		out[i] = h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	}
	return out
}

func numbers(rng *rand.Rand, n int) []string {
	formats := []func() string{
		func() string { return fmt.Sprintf("$%d,%03d.%02d", rng.IntN(1000), rng.IntN(1000), rng.IntN(100)) },
		func() string { return fmt.Sprintf("+44 20 %04d %04d", rng.IntN(10000), rng.IntN(10000)) },
		func() string {
			return fmt.Sprintf("2026-%02d-%02dT%02d:%02d:%02dZ", 1+rng.IntN(12), 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), rng.IntN(60))
		},
		func() string { return fmt.Sprintf("%d items, %d.%02d kg", rng.IntN(500), rng.IntN(100), rng.IntN(100)) },
		func() string {
			return fmt.Sprintf("%04d %04d %04d %04d", rng.IntN(10000), rng.IntN(10000), rng.IntN(10000), rng.IntN(10000))
		}, // a card number
		func() string { return fmt.Sprint(rng.Int64N(1e15)) },
	}
	out := make([]string, n)
	for i := range out {
		out[i] = formats[i%len(formats)]()
	}
	return out
}
