// Package publicid makes and checks the opaque public IDs customers see: a resource prefix and
// 128 bits from crypto/rand rendered with sqids (the project's own alphabet, blocklist on), such
// as "ord_5v1Pq…". Nothing can be read from one: it is never derived from the internal ID, and
// carries no time, region, machine or count.
//
// Encoding happens once, when a public ID is made: about 48,500 instructions (BenchmarkNew under
// callgrind, bench/README.md), of which sqids' Encode is about 46,000 and its blocklist check,
// done through an index of its words (blocklist.go), 1,700. Resolving never decodes: Parse
// only checks the shape (prefix, alphabet, length) so that malformed input never reaches a
// store, and lookups are by the exact string, so no second spelling of an ID ever resolves.
package publicid

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/sqids/sqids-go"
)

// Alphabet is the project's own sqids alphabet (a fixed shuffle of [a-zA-Z0-9]). Changing it
// changes no existing ID (IDs are stored, never decoded), only the look of new ones.
const Alphabet = "3WPYveoi14JxhMlLgDSruTAqn6NVZwFIKCQ7a80GHypdjEf9Om5XUtzc2ksRBb"

// Lengths of the part after the prefix: two 64-bit numbers in a 62-letter alphabet.
const (
	MinBodyLen = 4
	MaxBodyLen = 32
)

// ErrMalformed: not a public ID of a known resource.
var ErrMalformed = errors.New("publicid: malformed public id")

var prefixRE = regexp.MustCompile(`^[a-z]{2,8}$`)

// Maker makes and checks public IDs for a set of resource prefixes.
type Maker struct {
	sq       *sqids.Sqids // blocklist on: encodes again an ID the blocklist refuses
	fast     *sqids.Sqids // blocklist off: the first candidate, checked with bl
	bl       *blocklist
	prefixes map[string]bool
	inAlpha  [256]bool
}

// NewMaker returns a maker for the given resource prefixes ("ord", "usr", …).
func NewMaker(prefixes ...string) (*Maker, error) {
	sq, err := sqids.New(sqids.Options{Alphabet: Alphabet, Blocklist: nil}) // nil: sqids' default blocklist
	if err != nil {
		return nil, err
	}
	fast, err := sqids.New(sqids.Options{Alphabet: Alphabet, Blocklist: []string{}})
	if err != nil {
		return nil, err
	}
	m := &Maker{sq: sq, fast: fast, bl: newBlocklist(Alphabet), prefixes: map[string]bool{}}
	for _, p := range prefixes {
		if !prefixRE.MatchString(p) {
			return nil, fmt.Errorf("publicid: resource prefix %q: want 2-8 lower-case letters", p)
		}
		m.prefixes[p] = true
	}
	for i := 0; i < len(Alphabet); i++ {
		m.inAlpha[Alphabet[i]] = true
	}
	return m, nil
}

// Known reports whether prefix is one of the maker's resource prefixes.
func (m *Maker) Known(prefix string) bool { return m.prefixes[prefix] }

// New makes a fresh public ID for a resource: 128 random bits, never derived from anything.
func (m *Maker) New(prefix string) (string, error) {
	if !m.prefixes[prefix] {
		return "", fmt.Errorf("publicid: unknown resource prefix %q", prefix)
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return m.FromBits(prefix, b)
}

// FromBits renders 128 bits the way New renders its random ones. It is for values that are no
// public ID of a mapping and must be derived (the gateway's token handles, from a keyed MAC);
// a public ID is only ever made by New.
func (m *Maker) FromBits(prefix string, b [16]byte) (string, error) {
	if !m.prefixes[prefix] {
		return "", fmt.Errorf("publicid: unknown resource prefix %q", prefix)
	}
	nums := []uint64{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
	body, err := m.encode(nums)
	if err != nil {
		return "", err
	}
	return prefix + "_" + body, nil
}

// encode is sqids' Encode with its blocklist on: the first candidate without the blocklist,
// checked against the same words by the same rule; one it refuses goes to sqids with its
// blocklist, which takes the next candidates as ever.
func (m *Maker) encode(nums []uint64) (string, error) {
	body, err := m.fast.Encode(nums)
	if err != nil || !m.bl.blocked(body) {
		return body, err
	}
	return m.sq.Encode(nums)
}

// Parse checks a public ID's shape and returns its resource prefix. It touches no store.
func (m *Maker) Parse(s string) (string, error) {
	prefix, body, ok := strings.Cut(s, "_")
	if !ok || !m.prefixes[prefix] {
		return "", ErrMalformed
	}
	if len(body) < MinBodyLen || len(body) > MaxBodyLen {
		return "", ErrMalformed
	}
	for i := 0; i < len(body); i++ {
		if !m.inAlpha[body[i]] {
			return "", ErrMalformed
		}
	}
	return prefix, nil
}
