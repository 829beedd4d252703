package lease

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Range is an inclusive range of machine numbers a keeper claims from.
type Range struct{ Lo, Hi int }

// Size is the number of machine numbers in the range.
func (r Range) Size() int { return r.Hi - r.Lo + 1 }

func (r Range) String() string { return fmt.Sprintf("%d-%d", r.Lo, r.Hi) }

// ServiceRangeHi is the last number of the service workers' range; embedded libraries use the
// numbers above it (v2: 64–511, v1: 64–1023).
const ServiceRangeHi = 63

// ParseRange parses "service" (0–63), "embedded" (64 to maxMachine) or "A-B", checked against
// maxMachine (the layout's largest machine number).
func ParseRange(s string, maxMachine int) (Range, error) {
	var r Range
	switch s {
	case "service":
		r = Range{0, ServiceRangeHi}
	case "embedded":
		r = Range{ServiceRangeHi + 1, maxMachine}
	default:
		lo, hi, ok := strings.Cut(s, "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if !ok || err1 != nil || err2 != nil {
			return Range{}, fmt.Errorf("lease: range %q: want service, embedded or A-B", s)
		}
		r = Range{a, b}
	}
	if r.Lo < 0 || r.Hi < r.Lo || r.Hi > maxMachine {
		return Range{}, fmt.Errorf("lease: range %q: numbers must lie within 0-%d, low to high", s, maxMachine)
	}
	return r, nil
}

// HolderName returns this process's holder name, `<instance-or-host>/pid-<pid>/<start-unix-ms>`:
// a restarted process is a new holder. The instance is $IDGEN_INSTANCE_ID when set (the EC2
// instance ID in production), else the host name.
func HolderName(processStart time.Time) string {
	inst := os.Getenv("IDGEN_INSTANCE_ID")
	if inst == "" {
		inst, _ = os.Hostname()
	}
	if inst == "" {
		inst = "unknown-host"
	}
	return fmt.Sprintf("%s/pid-%d/%d", inst, os.Getpid(), processStart.UnixMilli())
}

// CheckTable returns the lease table's ID after checking that it is not a restore
// (docs/leases.md#the-restore-fence): the metadata row must name the table as it is now. The
// first claimer of a table with no rows at all writes the metadata row; a table holding lease
// rows but no metadata row is a restore.
func CheckTable(ctx context.Context, s Store) (string, error) {
	id, err := s.TableID(ctx)
	if err != nil {
		return "", err
	}
	meta, err := s.Meta(ctx)
	if errors.Is(err, ErrNotFound) {
		rows, lerr := s.List(ctx)
		if lerr != nil {
			return "", lerr
		}
		if len(rows) > 0 {
			return "", fmt.Errorf("%w: the table holds %d lease rows but no metadata row", ErrRestored, len(rows))
		}
		if ierr := s.InitMeta(ctx, id); ierr != nil && !errors.Is(ierr, ErrTaken) {
			return "", ierr
		}
		meta, err = s.Meta(ctx)
	}
	if err != nil {
		return "", err
	}
	if meta != id {
		return "", fmt.Errorf("%w: the metadata row names table %s, this table is %s", ErrRestored, meta, id)
	}
	return id, nil
}

// LiftExpiry is the lease expiry a lifted quarantine gets: one lease and the margin from now, so
// nobody claims the number before every fence of its holders before the quarantine has passed.
func LiftExpiry(now time.Time, lease, margin time.Duration) int64 {
	return now.Add(lease + margin).UnixMilli()
}

// FenceRestore is the restore fence, the operator's command after a restore: it sets every lease
// row that is not quarantined to lease_expiry = now + lease + margin with epoch + 1, writes a row
// held by FencedHolder until that same expiry for every number of 0..machines-1 that has no row
// (a number first claimed after the backup was taken has none in the restored table, yet its
// holder may still issue up to its fence), records a "fence" event per row, and only then writes
// the table's new ID into the metadata row, which lets holders claim again. machines is the
// number of machine numbers of the table's layout (Layout.MaxMachine()+1). It returns how many
// rows it fenced or wrote.
func FenceRestore(ctx context.Context, s Store, now time.Time, lease, margin time.Duration, machines int) (int, error) {
	id, err := s.TableID(ctx)
	if err != nil {
		return 0, err
	}
	expiry := now.Add(lease + margin).UnixMilli()
	n, err := s.FenceAll(ctx, expiry)
	if err != nil {
		return n, err
	}
	rows, err := s.List(ctx)
	if err != nil {
		return n, err
	}
	have := make(map[int]bool, len(rows))
	var fenced []Row
	for _, r := range rows {
		have[r.Machine] = true
		if r.ExpiryUnixMs == expiry {
			fenced = append(fenced, r)
		}
	}
	// Claims are refused until the metadata row names this table (CheckTable), so these writes
	// race only with each other: a concurrent fence-restore that wrote the row first is fine.
	for m := 0; m < machines; m++ {
		if have[m] {
			continue
		}
		r, err := s.Claim(ctx, m, FencedHolder, now.UnixMilli(), expiry)
		if errors.Is(err, ErrTaken) {
			continue
		}
		if err != nil {
			return n, fmt.Errorf("fencing number %d, which has no row: %w", m, err)
		}
		n++
		fenced = append(fenced, r)
	}
	var herr error
	for _, r := range fenced {
		if err := s.AppendHistory(ctx, Event{Machine: r.Machine, AtUnixMs: now.UnixMilli(), Kind: KindFence, Holder: r.Holder, Epoch: r.Epoch, ExpiryUnixMs: r.ExpiryUnixMs}); err != nil && herr == nil {
			herr = fmt.Errorf("the lease history lacks the fence event of number %d (the fence itself stands): %w", r.Machine, err)
		}
	}
	if err := s.SetMeta(ctx, id); err != nil {
		return n, err
	}
	return n, herr
}

// WhoHeld answers "who held number N at time t": the last history event at or before t (a claim
// names the holder; a release, quarantine or fence says who had it last and that it was let go),
// and the events within window either side of t. Renewals are not history: they are in the logs.
func WhoHeld(ctx context.Context, s Store, machine int, at time.Time, window time.Duration) (holder *Event, around []Event, err error) {
	t := at.UnixMilli()
	evs, err := s.History(ctx, machine, t-HistoryRetentionMs, t+window.Milliseconds())
	if err != nil {
		return nil, nil, err
	}
	for i := range evs {
		if evs[i].AtUnixMs <= t {
			holder = &evs[i]
		}
		if evs[i].AtUnixMs >= t-window.Milliseconds() {
			around = append(around, evs[i])
		}
	}
	return holder, around, nil
}
