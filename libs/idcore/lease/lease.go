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
// (docs/leases.md#the-restore-fence) and that a holder with settings h keeps the table's rules
// (docs/leases.md#the-tables-rules). The metadata row must name the table as it is now. The
// first claimer of a new table (no lease row, no metadata row, and no event of this table in the
// history) writes the metadata row with rules from its own settings (DefaultRules); a table
// holding lease rows but no metadata row, or none at all beside a history with its events, is a
// restore. A table whose metadata row has no rules yet (written before rules were kept) gets
// this holder's. A holder whose settings differ from the table's rules gets ErrRules naming
// both.
func CheckTable(ctx context.Context, s Store, h Settings) (string, error) {
	id, err := s.TableID(ctx)
	if err != nil {
		return "", err
	}
	meta, err := s.Meta(ctx)
	if errors.Is(err, ErrNotFound) {
		if _, nerr := newTable(ctx, s); nerr != nil {
			return "", nerr
		}
		rules := DefaultRules(h.Lease, h.Renew, h.Margin)
		if ierr := s.InitMeta(ctx, Meta{TableID: id, Rules: rules}); ierr == nil {
			// Best effort: the rules event lets the restore fence find the rules again should the
			// table come back from a backup taken before this moment.
			_ = s.AppendHistory(ctx, rulesEvent(time.Now(), "first holder", id, rules))
		} else if !errors.Is(ierr, ErrTaken) {
			return "", ierr
		}
		meta, err = s.Meta(ctx)
	}
	if err != nil {
		return "", err
	}
	if meta.TableID != id {
		if meta.TableID == "" {
			return "", fmt.Errorf("%w: the metadata row names no table (rules written for a restored table); run the restore fence", ErrRestored)
		}
		return "", fmt.Errorf("%w: the metadata row names table %s, this table is %s", ErrRestored, meta.TableID, id)
	}
	if meta.Rules.IsZero() {
		rules := DefaultRules(h.Lease, h.Renew, h.Margin)
		if ierr := s.InitRules(ctx, rules); ierr == nil {
			_ = s.AppendHistory(ctx, rulesEvent(time.Now(), "first holder", id, rules))
		} else if !errors.Is(ierr, ErrTaken) {
			return "", ierr
		}
		if meta, err = s.Meta(ctx); err != nil {
			return "", err
		}
	}
	if err := meta.Rules.Admits(h); err != nil {
		return "", err
	}
	return id, nil
}

// newTable reports whether a table without a metadata row is new: it holds no lease row and the
// history holds no event of it. Otherwise it returns ErrRestored saying why.
func newTable(ctx context.Context, s Store) (bool, error) {
	rows, err := s.List(ctx)
	if err != nil {
		return false, err
	}
	if len(rows) > 0 {
		return false, fmt.Errorf("%w: the table holds %d lease rows but no metadata row", ErrRestored, len(rows))
	}
	// No rows and no metadata row: a new table, unless the history (a table of its own, never
	// restored with the lease table) holds events of this table: then it is a restore of a
	// backup taken before the first claim, or a table deleted and created again.
	hist, err := s.HasHistory(ctx)
	if err != nil {
		return false, err
	}
	if hist {
		return false, fmt.Errorf("%w: the table holds no lease row and no metadata row, but the lease history holds events of it: "+
			"a restore of a backup taken before its first claim, or a table created again", ErrRestored)
	}
	return true, nil
}

func rulesEvent(now time.Time, who, tableID string, r Rules) Event {
	return Event{Machine: MetaMachine, AtUnixMs: now.UnixMilli(), Kind: KindRules, Holder: who, TableID: tableID, Rules: r}
}

// InitTable writes a table's rules (idgenctl leases init): on a new table the metadata row with
// the table's ID and the rules, as its first holder would; on a table whose metadata row has no
// rules yet, the rules. Rules equal to those already there change nothing (restored false, nil);
// different ones are refused with ErrRules (set-rules changes them). On a table that is a
// restore (lease rows without a metadata row, or none beside a history with its events) it
// writes a metadata row holding the rules and no table ID, so that nothing is claimed until the
// restore fence has run, and reports restored.
func InitTable(ctx context.Context, s Store, r Rules, now time.Time, who string) (restored bool, err error) {
	if err := r.Validate(); err != nil {
		return false, err
	}
	id, err := s.TableID(ctx)
	if err != nil {
		return false, err
	}
	meta, err := s.Meta(ctx)
	switch {
	case errors.Is(err, ErrNotFound):
		isNew, nerr := newTable(ctx, s)
		if nerr != nil && !errors.Is(nerr, ErrRestored) {
			return false, nerr
		}
		m := Meta{TableID: id, Rules: r}
		if !isNew {
			m.TableID, restored = "", true
		}
		if err := s.InitMeta(ctx, m); errors.Is(err, ErrTaken) {
			return InitTable(ctx, s, r, now, who) // written meanwhile: judge it again
		} else if err != nil {
			return false, err
		}
		return restored, s.AppendHistory(ctx, rulesEvent(now, who, m.TableID, r))
	case err != nil:
		return false, err
	case meta.Rules == r:
		return meta.TableID != id, nil
	case !meta.Rules.IsZero():
		return false, fmt.Errorf("%w: the table's rules are %v, not %v; change them with set-rules", ErrRules, meta.Rules, r)
	}
	if err := s.InitRules(ctx, r); errors.Is(err, ErrTaken) {
		return InitTable(ctx, s, r, now, who)
	} else if err != nil {
		return false, err
	}
	return meta.TableID != id, s.AppendHistory(ctx, rulesEvent(now, who, meta.TableID, r))
}

// TableRules returns the table's rules: those of its metadata row, or, where it has none (a
// table restored from a backup taken before its first claim), those of the last rules event of
// this table in the history; ErrNoRules when neither has any. from says which ("table" or
// "history").
func TableRules(ctx context.Context, s Store, now time.Time) (r Rules, from string, err error) {
	meta, err := s.Meta(ctx)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Rules{}, "", err
	}
	if !meta.Rules.IsZero() {
		return meta.Rules, "table", nil
	}
	evs, err := s.History(ctx, MetaMachine, 0, now.UnixMilli()+HistoryRetentionMs)
	if err != nil {
		return Rules{}, "", err
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == KindRules && !evs[i].Rules.IsZero() {
			return evs[i].Rules, "history", nil
		}
	}
	return Rules{}, "", fmt.Errorf("%w: its metadata row has none and its history holds no rules event: "+
		"write the fleet's with idgenctl leases init --lease … --margin …", ErrNoRules)
}

// SetRules replaces a table's rules (idgenctl leases set-rules): refused while any number is
// held (a lease row not quarantined whose expiry is after now: its holder runs on the old rules),
// and conditioned on the rules being those read, so two changes never interleave. After the
// write the rows are read again: a number claimed meanwhile, under the old rules, is reported
// (its holder's next claim round checks the new rules; it keeps the number until it loses it).
func SetRules(ctx context.Context, s Store, r Rules, now time.Time, who string) (old Rules, err error) {
	if err := r.Validate(); err != nil {
		return Rules{}, err
	}
	meta, err := s.Meta(ctx)
	if errors.Is(err, ErrNotFound) {
		return Rules{}, fmt.Errorf("%w: the table has no metadata row yet: write its rules with leases init", ErrNoRules)
	}
	if err != nil {
		return Rules{}, err
	}
	if held, err := heldNumbers(ctx, s, now); err != nil {
		return meta.Rules, err
	} else if len(held) > 0 {
		return meta.Rules, fmt.Errorf("%w: numbers are held under the current rules (%v): %s; the rules change only while none is",
			ErrRules, meta.Rules, strings.Join(held, ", "))
	}
	if err := s.SetRules(ctx, meta.Rules, r); errors.Is(err, ErrTaken) {
		return meta.Rules, fmt.Errorf("%w: the rules changed while this command ran; read them again", ErrRules)
	} else if err != nil {
		return meta.Rules, err
	}
	herr := s.AppendHistory(ctx, rulesEvent(now, who, meta.TableID, r))
	if held, err := heldNumbers(ctx, s, now); err == nil && len(held) > 0 {
		return meta.Rules, fmt.Errorf("the rules are now %v, but numbers were claimed meanwhile under the old ones: %s", r, strings.Join(held, ", "))
	}
	return meta.Rules, herr
}

// heldNumbers lists the numbers whose rows are live leases (not quarantined, expiry after now).
func heldNumbers(ctx context.Context, s Store, now time.Time) ([]string, error) {
	rows, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	var held []string
	for _, r := range rows {
		if !r.Quarantined() && r.ExpiryUnixMs > now.UnixMilli() {
			held = append(held, fmt.Sprintf("%d (%s, until %s)", r.Machine, r.Holder, time.UnixMilli(r.ExpiryUnixMs).UTC().Format(time.RFC3339)))
		}
	}
	return held, nil
}

// LiftExpiry is the lease expiry a lifted quarantine gets: one lease and the margin of the
// table's rules from now, so nobody claims the number before every fence of its holders before
// the quarantine has passed.
func LiftExpiry(now time.Time, r Rules) int64 {
	return now.Add(r.Lease + r.Margin).UnixMilli()
}

// Lift lifts the quarantine of number m with the expiry LiftExpiry of the table's own rules
// (TableRules) and returns the row and those rules. ErrLost: the number is not quarantined.
func Lift(ctx context.Context, s Store, m int, now time.Time) (Row, Rules, error) {
	r, _, err := TableRules(ctx, s, now)
	if err != nil {
		return Row{}, r, err
	}
	row, err := s.Lift(ctx, m, LiftExpiry(now, r))
	return row, r, err
}

// FenceRestore is the restore fence, the operator's command after a restore: with the table's
// rules (TableRules: its metadata row's, else the history's), it sets every lease row that is
// not quarantined to lease_expiry = now + lease + margin with epoch + 1, writes a row held by
// FencedHolder until that same expiry for every number of 0..machines-1 that has no row (a number
// first claimed after the backup was taken has none in the restored table, yet its holder may
// still issue up to its fence), records a "fence" event per row, and only then writes the
// table's new ID (and the rules) into the metadata row, which lets holders claim again.
// machines is the number of machine numbers of the table's layout (Layout.MaxMachine()+1). It
// returns how many rows it fenced or wrote, and the rules it used.
func FenceRestore(ctx context.Context, s Store, now time.Time, machines int) (int, Rules, error) {
	rules, _, err := TableRules(ctx, s, now)
	if err != nil {
		return 0, rules, err
	}
	id, err := s.TableID(ctx)
	if err != nil {
		return 0, rules, err
	}
	expiry := now.Add(rules.Lease + rules.Margin).UnixMilli()
	n, err := s.FenceAll(ctx, expiry)
	if err != nil {
		return n, rules, err
	}
	rows, err := s.List(ctx)
	if err != nil {
		return n, rules, err
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
			return n, rules, fmt.Errorf("fencing number %d, which has no row: %w", m, err)
		}
		n++
		fenced = append(fenced, r)
	}
	var herr error
	for _, r := range fenced {
		if err := s.AppendHistory(ctx, Event{Machine: r.Machine, AtUnixMs: now.UnixMilli(), Kind: KindFence, Holder: r.Holder, Epoch: r.Epoch, ExpiryUnixMs: r.ExpiryUnixMs, TableID: id}); err != nil && herr == nil {
			herr = fmt.Errorf("the lease history lacks the fence event of number %d (the fence itself stands): %w", r.Machine, err)
		}
	}
	if err := s.SetMeta(ctx, Meta{TableID: id, Rules: rules}); err != nil {
		return n, rules, err
	}
	return n, rules, herr
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
