package publicid_test

import (
	"errors"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/idgen/idgen/services/public-id/publicid"
)

func TestNewAndParse(t *testing.T) {
	m, err := publicid.NewMaker("ord", "usr")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for range 10_000 {
		id, err := m.New("ord")
		if err != nil {
			t.Fatal(err)
		}
		if seen[id] {
			t.Fatalf("repeated public id %s", id)
		}
		seen[id] = true
		if p, err := m.Parse(id); err != nil || p != "ord" {
			t.Fatalf("Parse(%s) = %q, %v", id, p, err)
		}
	}
	for _, bad := range []string{"", "ord", "ord_", "ord_abc", "xyz_5v1PqLkJ", "ORD_5v1PqLkJ", "ord_5v1P-qLkJ", "ord_" + strings.Repeat("a", 40), "ord_5v1Pq LkJ", "usr5v1PqLkJ"} {
		if _, err := m.Parse(bad); !errors.Is(err, publicid.ErrMalformed) {
			t.Errorf("Parse(%q) = %v, want ErrMalformed", bad, err)
		}
	}
	if _, err := m.New("xyz"); err == nil {
		t.Fatal("unknown prefix accepted")
	}
	if _, err := publicid.NewMaker("Orders"); err == nil {
		t.Fatal("bad prefix accepted")
	}
}

// Public IDs made for sequential internal IDs are unique and their order tells nothing: the rank
// correlation between creation order and the order of the public IDs is near zero.
func TestNoOrderLeaks(t *testing.T) {
	m, _ := publicid.NewMaker("ord")
	const n = 10_000
	ids := make([]string, n)
	for i := range ids {
		ids[i], _ = m.New("ord")
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return ids[idx[a]] < ids[idx[b]] })
	// Spearman's rho between creation rank i and sorted rank.
	rank := make([]int, n)
	for r, i := range idx {
		rank[i] = r
	}
	var d2 float64
	for i := range n {
		d := float64(i - rank[i])
		d2 += d * d
	}
	rho := 1 - 6*d2/(float64(n)*(float64(n)*float64(n)-1))
	// For independent orders rho has standard deviation 1/sqrt(n-1) ≈ 0.01; 0.05 is 5 sigma.
	t.Logf("Spearman rank correlation over %d public ids: %.4f", n, rho)
	if math.Abs(rho) > 0.05 {
		t.Fatalf("rank correlation %.4f: public ids follow creation order", rho)
	}
}

func FuzzParse(f *testing.F) {
	m, _ := publicid.NewMaker("ord")
	good, _ := m.New("ord")
	for _, s := range []string{good, "ord_", "ord_abc", "x_y", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := m.Parse(s)
		if err != nil {
			return
		}
		body := strings.TrimPrefix(s, p+"_")
		if p != "ord" || len(body) < publicid.MinBodyLen || len(body) > publicid.MaxBodyLen || strings.ContainsAny(body, "_- /") {
			t.Fatalf("accepted %q", s)
		}
	})
}

func BenchmarkNew(b *testing.B) {
	m, _ := publicid.NewMaker("ord")
	b.ReportAllocs()
	for b.Loop() {
		_, _ = m.New("ord")
	}
}

func BenchmarkParse(b *testing.B) {
	m, _ := publicid.NewMaker("ord")
	id, _ := m.New("ord")
	b.ReportAllocs()
	for b.Loop() {
		_, _ = m.Parse(id)
	}
}
