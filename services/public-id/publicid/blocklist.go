package publicid

import (
	"strings"

	"github.com/sqids/sqids-go"
)

// blocklist is sqids' default blocklist, filtered as sqids filters it for Alphabet, and indexed
// so that checking an ID costs a few map lookups instead of sqids' walk of every word (about
// three quarters of the time of an Encode with the blocklist on). blocked applies sqids' own rule
// (sqids-go v0.4.1's isBlockedID) to the same words, so New makes exactly the IDs sqids makes
// with its blocklist on: an ID the index finds blocked is encoded again by sqids with its
// blocklist, which takes the next candidate as sqids does.
type blocklist struct {
	inside   map[string][]string // words of 4 letters or more without a digit, by their first 3 letters: block an ID containing them
	prefixes map[string][]string // words of 4 letters or more with a digit, by their first 3 letters: block an ID starting with them
	suffixes map[string][]string // the same words by their last 3 letters: block an ID ending with them
	all      []string            // every word: an ID of 3 letters or fewer is blocked when equal to one (a word of 3 letters blocks nothing longer)
}

func newBlocklist(alphabet string) *blocklist {
	b := &blocklist{inside: map[string][]string{}, prefixes: map[string][]string{}, suffixes: map[string][]string{}}
	lower := strings.ToLower(alphabet)
	for _, w := range sqids.Blocklist() {
		w = strings.ToLower(w)
		if len(w) < 3 || strings.Trim(w, lower) != "" {
			continue // sqids drops words shorter than 3 and words with a letter outside the alphabet
		}
		b.all = append(b.all, w)
		switch {
		case len(w) == 3:
		case strings.ContainsAny(w, "0123456789"):
			b.prefixes[w[:3]] = append(b.prefixes[w[:3]], w)
			b.suffixes[w[len(w)-3:]] = append(b.suffixes[w[len(w)-3:]], w)
		default:
			b.inside[w[:3]] = append(b.inside[w[:3]], w)
		}
	}
	return b
}

// blocked reports whether sqids' blocklist rule refuses id.
func (b *blocklist) blocked(id string) bool {
	id = strings.ToLower(id)
	if len(id) <= 3 {
		for _, w := range b.all {
			if w == id {
				return true
			}
		}
		return false
	}
	for _, w := range b.prefixes[id[:3]] {
		if strings.HasPrefix(id, w) {
			return true
		}
	}
	for _, w := range b.suffixes[id[len(id)-3:]] {
		if strings.HasSuffix(id, w) {
			return true
		}
	}
	for i := 0; i+3 <= len(id); i++ {
		for _, w := range b.inside[id[i:i+3]] {
			if strings.HasPrefix(id[i:], w) {
				return true
			}
		}
	}
	return false
}
