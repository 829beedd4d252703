// Package lease keeps a process's machine numbers (docs/leases.md): it claims a number from a
// lease table with a conditional write, renews it, hands the generator its floor and fence, drops
// it the moment it is lost, and releases it on shutdown.
//
// The rules that keep two holders of one number from ever issuing the same ID, and where they live:
//
//   - Claim only a number that is absent or whose lease_expiry < :now, with :now read from the
//     claimer's own clock; each claim bumps lease_epoch (Store.Claim, both drivers).
//   - Floor: the claim's :now. The generator issues nothing at or below it, checked on every ID
//     (idcore.Generator), so every ID of the new holder lies above the stored expiry, above which
//     the old holder never issued.
//   - Fence: lease_expiry − margin, where lease_expiry is exactly the value this holder wrote
//     (Keeper: the :expiry / :new_expiry it sent, never a time read when the reply came back).
//   - No lapsed renewals: once the holder's clock reaches its fence it drops the number, there and
//     then, and claims again; it never sends a renewal at or after its fence, and stops waiting for
//     the store at it (Keeper.Run, Keeper.renew).
//   - Store outages: renewals retry at most RetryCadence apart (the renew interval when shorter),
//     each attempt waiting at most AttemptTimeout, so an outage shorter than lease − margin −
//     renew − that cadence is invisible wherever it starts (docs/leases.md#store-outages).
//   - Renewal condition holder = :me AND lease_epoch = :my_epoch AND lease_expiry < :new_expiry;
//     ConditionalCheckFailed drops the number at once (Keeper.renew).
//   - Restore fence: holders record the table's ID at start-up and compare it at every renewal;
//     a table whose metadata row names another table, or that holds lease rows but no metadata row,
//     or none at all beside a history holding its events (events name their table), is a restore
//     and nobody claims from it until FenceRestore ran (CheckTable, FenceRestore).
//   - The table's rules: its metadata row holds the lease length, renew bounds and fence margin
//     (Rules), written once by InitTable or the first holder; a holder whose settings differ is
//     refused (CheckTable, Keeper.CheckRules), and Lift and FenceRestore take the lease and margin
//     from the table (TableRules), never from their caller.
//   - Release: the owner stops the generator first, then Release sets lease_expiry to the later of
//     now and the last issued timestamp, conditioned on holder and epoch.
//
// Store is the driver contract; sqlitelease and dynamolease implement it and leasetest is the
// conformance suite both pass.
package lease
