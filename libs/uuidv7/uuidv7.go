package uuidv7

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gofrs/uuid/v5"
)

// Errors.
var (
	ErrFormat  = errors.New("uuidv7: not a canonical UUID")
	ErrVersion = errors.New("uuidv7: wrong UUID version")
	ErrVariant = errors.New("uuidv7: not an RFC 9562 variant UUID")
	ErrNotID   = errors.New("uuidv7: UUIDv8 does not carry an idgen ID")
)

// maxTick is the largest unix_ts_ms‖rand_a value (48 + 12 bits).
const maxTick = 1<<60 - 1

// Generator makes UUIDv7 values that strictly increase. The zero value is not usable; use New.
// It is safe for concurrent use.
type Generator struct {
	now func() time.Time

	mu   sync.Mutex
	last uint64 // unix_ts_ms<<12 | rand_a of the last UUID
	pool [4096]byte
	pos  int
}

// Settings configure a Generator. The zero value is valid.
type Settings struct {
	// Now is the wall clock. Default: time.Now.
	Now func() time.Time
}

// NewGenerator returns a generator.
func NewGenerator(s Settings) *Generator {
	if s.Now == nil {
		s.Now = time.Now
	}
	g := &Generator{now: s.Now}
	g.pos = len(g.pool)
	return g
}

var defaultGen = NewGenerator(Settings{})

// New returns a new UUIDv7 from the process-wide generator.
func New() (uuid.UUID, error) { return defaultGen.New() }

// Must returns a new UUIDv7 from the process-wide generator, and panics if the system's random
// source fails (which the Go runtime treats as fatal anyway).
func Must() uuid.UUID {
	u, err := New()
	if err != nil {
		panic(err)
	}
	return u
}

// New returns a UUIDv7 greater than every UUID this generator made before.
func (g *Generator) New() (uuid.UUID, error) {
	t := g.now()
	ns := t.UnixNano()
	if ns < 0 {
		ns = 0
	}
	ms := uint64(ns / 1e6)
	frac := uint64(ns%1e6) * 4096 / 1e6
	tick := ms<<12 | frac

	var u uuid.UUID
	g.mu.Lock()
	if tick <= g.last {
		tick = g.last + 1
	}
	if tick > maxTick {
		g.mu.Unlock()
		return uuid.Nil, errors.New("uuidv7: 48-bit timestamp exhausted")
	}
	g.last = tick
	if g.pos+8 > len(g.pool) {
		if _, err := rand.Read(g.pool[:]); err != nil {
			g.mu.Unlock()
			return uuid.Nil, fmt.Errorf("uuidv7: random source: %w", err)
		}
		g.pos = 0
	}
	copy(u[8:], g.pool[g.pos:g.pos+8])
	g.pos += 8
	g.mu.Unlock()

	binary.BigEndian.PutUint64(u[0:8], tick<<4) // unix_ts_ms (48) then rand_a (12) at bits 52–63
	u[6] = 0x70 | byte(tick>>8)&0x0f            // version 7 and rand_a's top 4 bits
	u[7] = byte(tick)                           // rand_a's low 8 bits
	u[8] = 0x80 | u[8]&0x3f                     // variant 0b10
	return u, nil
}

// Parse parses the canonical form only: 36 characters, lower or upper case hex, hyphens at
// 8-4-4-4-12. Any version is accepted.
func Parse(s string) (uuid.UUID, error) {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return uuid.Nil, fmt.Errorf("%w: %q", ErrFormat, clip(s))
	}
	u, err := uuid.FromString(s)
	if err != nil {
		return uuid.Nil, fmt.Errorf("%w: %q", ErrFormat, clip(s))
	}
	return u, nil
}

// ParseV7 parses the canonical form and accepts only RFC 9562 version 7 UUIDs.
func ParseV7(s string) (uuid.UUID, error) {
	u, err := Parse(s)
	if err != nil {
		return uuid.Nil, err
	}
	return u, checkVersion(u, uuid.V7)
}

func checkVersion(u uuid.UUID, v byte) error {
	if u.Variant() != uuid.VariantRFC9562 {
		return fmt.Errorf("%w: %s", ErrVariant, u)
	}
	if u.Version() != v {
		return fmt.Errorf("%w: %s is version %d, want %d", ErrVersion, u, u.Version(), v)
	}
	return nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// Time returns the millisecond timestamp of a UUIDv7, in UTC.
func Time(u uuid.UUID) (time.Time, error) {
	if err := checkVersion(u, uuid.V7); err != nil {
		return time.Time{}, err
	}
	ts, err := uuid.TimestampFromV7(u)
	if err != nil {
		return time.Time{}, err
	}
	t, err := ts.Time()
	return t.UTC(), err
}

// Compare orders two UUIDs bytewise, which for version 7 is creation order (and for UUIDs from
// FromID, ID order): -1, 0 or +1.
func Compare(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) }
