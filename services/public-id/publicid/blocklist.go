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
	// The lower-case alphabet's letters numbered (from 1; 0 for every other byte), and a bit for
	// each three of them that is a key of inside, prefixes or suffixes: blocked looks up only the
	// keys the maps have, and lowers an ID into a buffer of its own, without allocating.
	letter  [256]uint8
	letters int
	keys    []uint64
}

func newBlocklist(alphabet string) *blocklist {
	b := &blocklist{inside: map[string][]string{}, prefixes: map[string][]string{}, suffixes: map[string][]string{}}
	lower := strings.ToLower(alphabet)
	for i := 0; i < len(lower); i++ {
		if b.letter[lower[i]] == 0 {
			b.letters++
			b.letter[lower[i]] = uint8(b.letters)
		}
	}
	for i := 'A'; i <= 'Z'; i++ {
		b.letter[i] = b.letter[i+'a'-'A']
	}
	b.keys = make([]uint64, (b.letters*b.letters*b.letters+63)/64)
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
	for _, m := range []map[string][]string{b.inside, b.prefixes, b.suffixes} {
		for k := range m {
			n := b.key(k[0], k[1], k[2])
			b.keys[n/64] |= 1 << (n % 64)
		}
	}
	return b
}

// key numbers three letters of the alphabet (either case).
func (b *blocklist) key(c0, c1, c2 byte) int {
	return ((int(b.letter[c0])-1)*b.letters+int(b.letter[c1])-1)*b.letters + int(b.letter[c2]) - 1
}

// indexed reports whether three letters of the alphabet are a key of inside, prefixes or suffixes.
func (b *blocklist) indexed(s []byte) bool {
	n := b.key(s[0], s[1], s[2])
	return b.keys[n/64]&(1<<(n%64)) != 0
}

// blocked reports whether sqids' blocklist rule refuses id: blockedSlow's answer, looking up only
// the keys the maps have.
func (b *blocklist) blocked(id string) bool {
	var buf [MaxBodyLen]byte
	if len(id) <= 3 || len(id) > len(buf) {
		return b.blockedSlow(id)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if b.letter[c] == 0 {
			return b.blockedSlow(id) // not an ID of the alphabet
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	low := buf[:len(id)]
	if b.indexed(low) {
		for _, w := range b.prefixes[string(low[:3])] {
			if len(w) <= len(low) && string(low[:len(w)]) == w {
				return true
			}
		}
	}
	if end := low[len(low)-3:]; b.indexed(end) {
		for _, w := range b.suffixes[string(end)] {
			if len(w) <= len(low) && string(low[len(low)-len(w):]) == w {
				return true
			}
		}
	}
	for i := 0; i+3 <= len(low); i++ {
		if b.indexed(low[i:]) {
			for _, w := range b.inside[string(low[i:i+3])] {
				if len(w) <= len(low)-i && string(low[i:i+len(w)]) == w {
					return true
				}
			}
		}
	}
	return false
}

// blockedSlow is sqids' blocklist rule on the index, for any string.
func (b *blocklist) blockedSlow(id string) bool {
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
