// Package uuidv7 makes RFC 9562 version 7 UUIDs that are monotonic within a process, parses and
// formats them strictly, reads their time, and carries idgen's 64-bit IDs losslessly in a
// version 8 UUID. It is built on github.com/gofrs/uuid/v5: values are uuid.UUID, so database/sql
// (Scan/Value) and JSON (text marshalling) work through the gofrs type.
//
// # When to pick which
//
// UUIDv7 for new tables that can take a 128-bit key, IDs made in browsers or offline clients,
// and any region beyond the eight that the 64-bit v2 layout can number (a ninth region). It needs
// no lease, no machine number and no coordination at all. A Snowflake ID (libs/idcore) where a
// BIGINT key is required: it is half the size, and ordered by the same time.
//
// # Monotonicity (RFC 9562 §6.2, Method 3 with a counter fallback)
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                           unix_ts_ms                          |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|          unix_ts_ms           |  ver  |  rand_a: sub-ms / ctr |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|var|                        rand_b (62 random bits)            |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                            rand_b                             |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// rand_a holds the clock's sub-millisecond fraction in 1/4096 ms steps (Method 3, "increased clock
// precision"). The generator keeps the 60-bit value unix_ts_ms‖rand_a of the last UUID it made;
// when the clock gives a value not above it (a burst within one 244 ns step, or a clock that
// stepped back), it uses the last value plus one instead (Method 1's counter, in the same bits).
// When rand_a runs out, the carry moves unix_ts_ms one millisecond ahead of the clock, as §6.2
// allows; nothing ever wraps, so UUIDs from one generator strictly increase even if the wall
// clock steps back, and the timestamp runs ahead only for as long as the clock is behind.
//
// # Carrying a 64-bit ID (UUIDv8)
//
// FromID puts an idgen ID into a version 8 UUID, most significant bits first, so v8 values sort
// exactly as the IDs do, and ToID takes it back out:
//
//	bits   0–47   ID bits 63–16   (custom_a; bit 0 is the ID's sign bit, always 0)
//	bits  48–51   version 8
//	bits  52–63   ID bits 15–4    (custom_b)
//	bits  64–65   variant 0b10
//	bits  66–69   ID bits 3–0     (custom_c, first 4 bits)
//	bits 70–127   zero            (custom_c, the rest; ToID refuses anything else)
//
// # Postgres
//
//	CREATE TABLE orders (id uuid PRIMARY KEY DEFAULT NULL, total_cents bigint NOT NULL);
//	-- insert with a UUIDv7 made by the application: db.Exec("INSERT INTO orders VALUES ($1, $2)", u, 100)
//
// Postgres stores uuid as 16 bytes and compares it bytewise, which for version 7 is time order: new
// rows land on the right-hand edge of the B-tree, as with a BIGINT sequence, instead of on random
// pages as UUIDv4 keys do.
package uuidv7
