package publicid

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sqids/sqids-go"
)

// TestEncodeIsSqids: the maker's encoding is sqids' own with its blocklist on, for random numbers
// and for numbers whose first candidate the blocklist refuses (a few thousand of them here).
func TestEncodeIsSqids(t *testing.T) {
	m, err := NewMaker("ord")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := sqids.New(sqids.Options{Alphabet: Alphabet}) // the default blocklist
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	n := 200_000
	if testing.Short() {
		n = 20_000
	}
	refused := 0
	for range n {
		nums := []uint64{r.Uint64(), r.Uint64()}
		got, err := m.encode(nums)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Encode(nums)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("encode(%v) = %q; sqids says %q", nums, got, want)
		}
		if first, _ := m.fast.Encode(nums); first != want {
			refused++
		}
	}
	if refused == 0 {
		t.Fatal("no first candidate was refused: the blocked path went untested")
	}
	t.Logf("%d of %d first candidates refused by the blocklist", refused, n)
}

// TestBlockedIsSqidsRule: blocked agrees with sqids' rule (words of 3 letters only equal to a
// short ID; words with a digit at either end; other words anywhere, in any case) on strings made
// to hold blocklist words at every place.
func TestBlockedIsSqidsRule(t *testing.T) {
	b := newBlocklist(Alphabet)
	rule := func(id string) bool { // sqids-go v0.4.1's isBlockedID over the same words
		id = strings.ToLower(id)
		for _, w := range b.all {
			if len(w) > len(id) {
				continue
			}
			switch {
			case len(id) <= 3 || len(w) <= 3:
				if id == w {
					return true
				}
			case strings.ContainsAny(w, "0123456789"):
				if strings.HasPrefix(id, w) || strings.HasSuffix(id, w) {
					return true
				}
			case strings.Contains(id, w):
				return true
			}
		}
		return false
	}
	r := rand.New(rand.NewPCG(3, 4))
	randomText := func(n int) string {
		var sb strings.Builder
		for range n {
			sb.WriteByte(Alphabet[r.IntN(len(Alphabet))])
		}
		return sb.String()
	}
	upper := func(s string) string {
		var sb strings.Builder
		for _, c := range s {
			if r.IntN(2) == 0 {
				sb.WriteString(strings.ToUpper(string(c)))
			} else {
				sb.WriteRune(c)
			}
		}
		return sb.String()
	}
	checked, blockedCount := 0, 0
	for _, w := range b.all {
		for _, id := range []string{w, upper(w), w + randomText(5), randomText(5) + w, randomText(3) + upper(w) + randomText(4), randomText(len(w)),
			w[:len(w)-1], randomText(2) + w[1:]} {
			got, want := b.blocked(id), rule(id)
			if got != want {
				t.Fatalf("blocked(%q) = %v; sqids' rule says %v", id, got, want)
			}
			checked++
			if want {
				blockedCount++
			}
		}
	}
	if blockedCount == 0 || blockedCount == checked {
		t.Fatalf("%d of %d blocked: the cases do not cover both answers", blockedCount, checked)
	}
}

// FuzzBlocked: blocked, which looks up only the index's keys in an ID lowered without
// allocating, answers as blockedSlow (sqids' rule on the index, strings.ToLower and every key)
// for any string.
func FuzzBlocked(f *testing.F) {
	b := newBlocklist(Alphabet)
	for _, s := range []string{"", "abc", "Shit0000", "0000Shit", "xxSHITxx", "3WPYveoi14JxhMlLgDSruTAq", "ab€cd", strings.Repeat("a", 40)} {
		f.Add(s)
	}
	for _, w := range b.all {
		f.Add("Q" + w + "7")
		f.Add(strings.ToUpper(w) + "zz")
		f.Add("zz" + w)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := b.blocked(s), b.blockedSlow(s); got != want {
			t.Fatalf("blocked(%q) = %v; blockedSlow says %v", s, got, want)
		}
	})
}
