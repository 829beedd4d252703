// Package idcore makes and reads idgen's 64-bit IDs: versioned bit layouts chosen by timestamp,
// and the generator that issues IDs under a leased machine number with strict clock discipline.
//
// # Layouts
//
// Every layout starts with the sign bit (always 0) and 41 bits of milliseconds since the custom
// epoch 2026-01-01T00:00:00Z, which last until 2095-09-07T15:47:35.551Z. The 22 bits below are
// the layout's own:
//
//	v1:  bit 63 | 62 ────────────── 22 | 21 ──── 12 | 11 ────── 0
//	     0      | timestamp (41)       | machine(10) | sequence(12)
//	     id = ts<<22 | machine<<12 | seq      1,024 machines, 4,096 IDs/ms each
//
//	v2:  bit 63 | 62 ────────────── 22 | 21 ─ 19 | 18 ──── 10 | 9 ────── 0
//	     0      | timestamp (41)       | region(3) | machine(9) | sequence(10)
//	     id = ts<<22 | region<<19 | machine<<10 | seq    8 regions × 512 machines, 1,024 IDs/ms each
//
// A Schedule lists (layout, start) periods; an ID's layout is the one in force at its timestamp, so
// any reader decodes any ID without a flag, and a new layout is a new Period, not a new code path.
// The shipped schedules are "v2" (the default) and "v1-v2" (v1 until 2028-01-01, v2 from then).
//
// # Ordering
//
// IDs from one Generator strictly increase, batches included. Across generators and regions IDs
// are k-sorted: two IDs compare in creation order when they were made further apart than the
// fleet's clock error bound (2 × 5 ms offset + 5 ms back-step wait = 15 ms by default). Region and
// machine bits are not a time tie-break.
//
// # Never twice
//
// A Generator issues an ID only when all of these hold, checked for every ID:
//   - the clock is healthy (strict mode): synchronized, estimated error ≤ 5 ms, no recent forward jump;
//   - the timestamp is not behind the last issued one (a step back of ≤ 5 ms is waited out, a larger
//     one refused with clock_backwards);
//   - it holds a machine number for the timestamp's layout period (no_lease, layout_not_configured);
//   - the timestamp is above the lease's floor and below its fence
//     (docs/leases.md#the-floor, docs/leases.md#the-fence);
//   - the timestamp fits 41 bits (timestamp_exhausted).
//
// One function makes that decision, for every ID and for Ready, so a generator reports itself
// ready exactly when Next would issue an ID (at most after a wait within the back-step wait).
//
// When the millisecond's sequence is used up it waits for the next millisecond: it never wraps and
// never borrows from the future. Waits happen outside the generator's lock and end when their
// context does. The lease layer (package lease) is what calls SetLease and DropLease.
package idcore
