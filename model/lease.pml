/*
 * lease.pml: one machine number of one lease table, shared by NH holders (docs/leases.md).
 *
 * Time is abstracted to small integers: T is true time; a holder reads its clock as T + an offset
 * chosen anew at every read within [OFFLO, OFFHI] (a clock that steps anywhere within its bound
 * at any moment).
 * Every rule below names, in a "rule" comment, the Go function that implements it and the Go test
 * that checks that function's rule:   rule NAME: go PACKAGE.FUNC test PACKAGE.TEST
 * (model/links_test.go checks that every named function and test exists, and that each test's
 * comment names its rule).
 *
 * Property: no timestamp is issued twice under the number (the assertion in issue; one ID per
 * timestamp: the sequence within a millisecond belongs to one process and plays no part in the
 * protocol). Run: see model/README.md.
 *
 * Features (leave out with -D…): NO_RESTORE (backup, restore, restore fence), NO_QUARANTINE
 * (quarantine, lift), NO_STEP (clock offsets fixed at 0), NO_LOSS (replies never lost),
 * NO_GIVE_UP (with loss: a holder never gives up waiting for a renewal that the store then
 * applies later; NO_LOSS leaves it out too), INCS=1 (no crash or release); HORIZON, L (lease)
 * and M (fence margin) can be set.
 *
 * Variants (each must produce a counterexample):
 *   -DFLOOR_AT_CLAIM     the floor is checked once at claim, not for every ID
 *   -DFENCE_FROM_ARRIVAL the fence is computed from the clock when the reply arrives
 *   -DRENEW_LOWER        a renewal may lower the expiry, and clocks may step beyond the bound
 *   -DRESTORE_NOFENCE    a restored table is used without the restore fence (no TableId check,
 *                        no metadata check), and lapsed renewals are allowed
 *   -DLIFT_NOW           a lifted quarantine gets expiry = now instead of now + lease + margin
 *   -DFENCE_ROWS_ONLY    the restore fence fences only the rows the restored table holds: a
 *                        number first claimed after the backup escapes it
 *   -DNEW_IF_EMPTY       a table with no row and no metadata row is taken as new even when the
 *                        history holds its events (the rule before history events named their
 *                        table): a backup from before the first claim restores as a table that
 *                        looks new
 *   -DOP_FLAGS           lift and the restore fence use the operator's own lease flag (OPL,
 *                        shorter than the fleet's) instead of the table's rules
 *   -DRULES_UNCHECKED    (with MIXED) a holder whose lease differs from the table's rules is
 *                        not refused
 * Feature -DMIXED: holder 1 runs with a lease of L + 3 while the table's rules say L (written by
 * the bootstrap's leases init, or by the first holder): the shipped rules refuse it.
 */

#ifndef NH
#define NH 2            /* holders (processes sharing the number) */
#endif
#ifndef HORIZON
#define HORIZON 6       /* true time runs T0 .. T0 + HORIZON */
#endif
#define TMAX (T0 + HORIZON)
#ifndef INCS
#define INCS 2          /* incarnations per holder: crash or release, then a new holder name */
#endif
#ifndef L
#define L 4             /* lease length */
#endif
#ifndef M
#define M 1             /* fence margin */
#endif
#define CB 1            /* clock bound: every offset within [-CB, CB] */
#ifndef OPL
#define OPL 1           /* OP_FLAGS: the operator's own lease flag, shorter than the fleet's L */
#endif
/* a holder's own lease length: holder 1's differs from the table's rules with MIXED */
#ifdef MIXED
#define LH(h) (L + 3 * (h))
#else
#define LH(h) L
#endif
#ifdef RENEW_LOWER
#define T0 7            /* first instant (so that every timestamp is positive) */
#else
#define T0 2
#endif

#define QUAR 100        /* holder QUARANTINED */
#define LIFTED 101      /* holder LIFTED */
#define FENCED 102      /* holder FENCED: the restore fence's row for a number that had none */
#define QEXP 120        /* 2100-01-01: beyond the horizon */

/* request kinds */
#define RQ_CLAIM 1
#define RQ_RENEW 2
#define RQ_RELEASE 3
/* replies */
#define RP_NONE 0
#define RP_OK 1
#define RP_FAIL 2

byte T = T0;

/* the lease row and the table's identity */
byte s_holder;          /* 0: no row */
short s_exp;
byte s_epoch;
byte s_tid = 1;         /* TableId: a restore makes a new one */
#ifdef MIXED
byte s_meta = 1;        /* the TableId named by the metadata row (leases init wrote it) */
#else
byte s_meta;            /* the TableId named by the metadata row; 0: none */
#endif
/* the table's rules (its lease length) in the metadata row; 0: none yet. With MIXED the
 * bootstrap's leases init wrote L before any holder started. */
#ifdef MIXED
byte s_rules = L;
#else
byte s_rules;
#endif

/* a backup of the table (row and metadata row), and the operator's progress */
bool b_taken, restored, fenced, quarantined, lifted;
byte b_holder, b_epoch, b_meta, b_rules;
short b_exp;
/* the lease history, a table of its own that a restore leaves alone: whether it holds an event
 * of this table (a claim), and the rules its last rules event wrote (0: none) */
bool h_any;
#ifdef MIXED
byte h_rules = L;
#else
byte h_rules;
#endif
/* the rules an operator command uses: the table's (else the history's), or its own flag */
#ifdef OP_FLAGS
#define oprules(v) v = OPL
#else
#define oprules(v) if :: s_rules != 0 -> v = s_rules :: else -> v = h_rules fi
#endif

/* the reply to a holder's last request: RP_NONE when it was lost */
byte rp[NH];
byte rp_epoch[NH];

#if !defined(NO_LOSS) && !defined(NO_GIVE_UP)
#define GIVE_UP
#endif
#ifdef GIVE_UP
/* A renewal its holder gave up waiting for (no answer by the attempt's deadline) is still in
 * flight: the store may apply it at any later moment, or never, while the holder goes on. One per
 * holder, with the holder name, epoch and expiry it was sent with. */
bool gu[NH];
byte gu_me[NH], gu_ep[NH];
short gu_e[NH];
#endif

/* The property watches one timestamp, chosen when it is first issued (every issued timestamp is
 * watched in some run); issuing it again fails the assertion. */
short w_ts;
bool w_armed;

/* v = a clock reading: true time plus any offset within the bound */
#if defined(NO_STEP)
#define readclk(v) v = T
#elif defined(RENEW_LOWER)
/* a clock steps back far beyond the bound, or reads true time */
#define readclk(v) if :: v = T - 5 :: v = T fi
#else
#define readclk(v) if :: v = T - CB :: v = T :: v = T + CB fi
#endif
/* the operator's clock is within the bound whatever the variant */
#ifdef NO_STEP
#define opclk(v) v = T
#else
#define opclk(v) if :: v = T - CB :: v = T :: v = T + CB fi
#endif

/*
 * The store applies a request atomically (a conditional write) when it is sent; its reply reaches
 * the holder whenever the holder next looks (delayed by any pause), or never (lost).
 * rule store_claim: go sqlitelease.Store.Claim test sqlitelease.TestClaimOnlyWhenAbsentOrExpired
 * rule store_renew: go sqlitelease.Store.Renew test sqlitelease.TestRenewOnlyOwnEpochAndLater
 * rule store_release: go sqlitelease.Store.Release test sqlitelease.TestReleaseOnlyOwnEpoch
 */
inline send(kind, ex, ep)
{
    if
    :: kind == RQ_CLAIM ->
       /* attribute_not_exists(machine_id) OR lease_expiry < :now */
       if
       :: (s_holder == 0 || s_exp < now) && s_holder != QUAR ->
          s_holder = me; s_exp = ex; s_epoch++; rp_epoch[i] = s_epoch; rp[i] = RP_OK
       :: else -> rp[i] = RP_FAIL
       fi
    :: kind == RQ_RENEW ->
       /* holder = :me AND lease_epoch = :my_epoch AND lease_expiry < :new_expiry */
       if
#ifdef RENEW_LOWER
       :: s_holder == me && s_epoch == ep -> s_exp = ex; rp[i] = RP_OK
#else
       :: s_holder == me && s_epoch == ep && s_exp < ex -> s_exp = ex; rp[i] = RP_OK
#endif
       :: else -> rp[i] = RP_FAIL
       fi
    :: kind == RQ_RELEASE ->
       if
       :: s_holder == me && s_epoch == ep -> s_exp = ex
       :: else -> skip
       fi;
       rp[i] = RP_NONE
    fi;
#ifndef NO_LOSS
    if
    :: skip
    :: rp[i] = RP_NONE      /* the reply is lost */
    fi
#endif
}

/* True time advances. */
proctype Time()
{
end:
  do
  :: atomic { T < TMAX -> T++ }
  od
}

/*
 * The operator: a backup at any moment, a restore from it, the restore fence, a quarantine and
 * its lift. The operator's clock is within the bound too.
 */
proctype Operator()
{
  short now;
  byte rl;
end:
  do
#ifndef NO_RESTORE
  /* a backup at any moment: before the table's first claim (no metadata row), before the
   * number's row, or after */
  :: atomic { !b_taken -> b_taken = true; b_holder = s_holder; b_exp = s_exp; b_epoch = s_epoch; b_meta = s_meta; b_rules = s_rules }
  :: atomic { b_taken && !restored ->
       /* a restore makes a new table: the backup's rows and metadata row, a new TableId */
       restored = true; s_holder = b_holder; s_exp = b_exp; s_epoch = b_epoch; s_meta = b_meta; s_rules = b_rules; s_tid++;
       b_holder = 0; b_exp = 0; b_epoch = 0; b_meta = 0; b_rules = 0 }
#ifndef RESTORE_NOFENCE
  /* rule restore_fence: go lease.FenceRestore test lease.TestCheckTableAndRestoreFence
   * rule fence_rules: go lease.TableRules test lease.TestRestoreFenceTakesTheRulesFromTheHistory
   * with the table's rules, else the history's; with neither it refuses (nothing to fence with) */
  :: atomic { restored && !fenced && (s_rules != 0 || h_rules != 0) ->
       fenced = true;
       opclk(now); oprules(rl);
       if
       :: s_holder != 0 && s_holder != QUAR -> s_exp = now + rl + M; s_epoch++
#ifndef FENCE_ROWS_ONLY
       /* a number without a row gets one, held by FENCED until the same expiry */
       :: s_holder == 0 -> s_holder = FENCED; s_exp = now + rl + M; s_epoch++
#endif
       :: else -> skip
       fi;
       s_meta = s_tid; s_rules = rl; now = 0; rl = 0 }
#endif
#endif
#ifndef NO_QUARANTINE
  /* rule quarantine: go sqlitelease.Store.Quarantine test sqlitelease.TestQuarantineBlocksClaimAndRenew */
  :: atomic { !quarantined ->
       quarantined = true; s_holder = QUAR; s_exp = QEXP; s_epoch++ }
  /* rule lift: go lease.LiftExpiry test lease.TestLiftedNumberWaitsALeaseAndTheMargin
   * rule lift_rules: go lease.Lift test lease.TestLiftUsesTheTablesRules
   * no lease flag: one lease and the margin of the table's rules (refused while it has none) */
  :: atomic { quarantined && !lifted && s_holder == QUAR && (s_rules != 0 || h_rules != 0) ->
       lifted = true; opclk(now); oprules(rl); s_holder = LIFTED;
#ifdef LIFT_NOW
       s_exp = now;
#else
       s_exp = now + rl + M;
#endif
       s_epoch++; now = 0; rl = 0 }
#endif
  :: false
  od
}

/*
 * rule issue: go idcore.Generator.issueLocked test idcore.TestFenceAndFloor
 * One ID at the holder's clock: checked against last_ms, the fence and the floor, every time.
 */
inline issue()
{
  atomic {
    held ->
    readclk(ts);
    if
    :: ts <= last -> skip                   /* behind last_ms (or its sequence used up): wait */
    :: ts > last && ts >= fence -> skip     /* at or past the fence: refuse */
#ifndef FLOOR_AT_CLAIM
    :: ts > last && ts < fence && ts <= floor -> skip   /* at or below the floor: wait */
    :: ts > last && ts < fence && ts > floor ->
#else
    :: ts > last && ts < fence ->
#endif
       if
       :: w_armed && ts == w_ts -> assert(false)       /* issued twice */
       :: else -> skip
       fi;
       if
       :: !w_armed -> w_ts = ts; w_armed = true
       :: true -> skip
       fi;
       last = ts
    fi;
    ts = 0
  }
}

/* stop issuing under the number and forget it */
inline drop()
{
  held = false; floor = 0; fence = 0; myepoch = 0
}

/* rule set_lease: go idcore.Generator.SetLease test idcore.TestNewNumberStaysAboveIssued */
inline setlease(fl, fe)
{
  if
  :: !held -> floor = fl; if :: last > floor -> floor = last :: else -> skip fi
  :: held && fl > floor -> floor = fl
  :: else -> skip
  fi;
#ifdef FLOOR_AT_CLAIM
  /* the floor is checked once, when the number is set, and never again */
  floor = 0;
#endif
  fence = fe; held = true
}

#define P_IDLE 0
#define P_CHECKED 1     /* the table was checked; the claim is next */
#define P_CLAIMED 2     /* a claim was sent; its reply is next */
#define P_TIDOK 3       /* the TableId was checked; the renewal is next */
#define P_RENEWED 4     /* a renewal was sent; its reply is next */

/*
 * A holder: a keeper and its generator. Each step is one atomic action; between any two steps the
 * holder may pause for any length of time (other processes run, time passes), so every reply can
 * arrive late, and the generator issues between any two of the keeper's steps.
 */
proctype Holder(byte i)
{
  byte me, inc, myepoch, mytid, phase;
  bool held;
  short now, floor, fence, last, ts, e;

start:
  /* a new process: a new holder name, no last_ms */
  atomic { me = 1 + i + NH * inc; drop(); mytid = 0; phase = P_IDLE; last = 0; rp[i] = RP_NONE; rp_epoch[i] = 0; now = 0; e = 0 }
end:
  do
  :: issue()
  :: atomic { phase == P_IDLE && !held ->
       /* rule check_table: go lease.CheckTable test lease.TestCheckTableAndRestoreFence */
#ifndef RESTORE_NOFENCE
       if
#ifdef NEW_IF_EMPTY
       /* the first claimer writes it, whatever the history holds */
       :: s_meta == 0 && s_holder == 0 ->
          s_meta = s_tid; s_rules = LH(i); if :: h_rules = LH(i) :: skip fi
#else
       /* rule check_table_history: go lease.CheckTable test lease.TestCheckTableRefusesAnEmptyTableWithItsHistory
        * the first claimer of a new table writes it, with its rules: no row, no metadata row, and
        * no event of this table in the history; its rules event may fail to be written */
       :: s_meta == 0 && s_holder == 0 && !h_any ->
          s_meta = s_tid; s_rules = LH(i); if :: h_rules = LH(i) :: skip fi
#endif
       :: else -> skip
       fi;
       if
#ifndef RULES_UNCHECKED
       /* rule check_rules: go lease.Rules.Admits test lease.TestKeeperWithOtherSettingsIsRefused
        * a holder whose lease differs from the table's rules is refused */
       :: s_meta == s_tid && s_rules == LH(i) -> mytid = s_tid; phase = P_CHECKED
#else
       :: s_meta == s_tid -> mytid = s_tid; phase = P_CHECKED
#endif
       :: else -> skip                                        /* a restore, or other rules: refuse */
       fi
#else
       mytid = s_tid; phase = P_CHECKED
#endif
#ifdef NO_RESTORE
       /* without restores nothing can happen between the check and the claim that matters */
       ; if :: phase == P_CHECKED -> goto claim :: else -> skip fi
#endif
     }
  :: atomic { phase == P_CHECKED ->
claim: /* rule claim: go lease.Keeper.claim test lease.TestClaimFloorAndFenceFromClaimTime */
       readclk(now); send(RQ_CLAIM, now + LH(i), 0); phase = P_CLAIMED }
  :: atomic { phase == P_CLAIMED ->
       if
#ifndef RESTORE_NOFENCE
       /* rule claim_table_recheck: go lease.Keeper.claim test lease.TestClaimOnATableRestoredMeanwhile
        * rule claim_event_first: go lease.Keeper.claim test lease.TestClaimNotUsedWithoutItsHistoryEvent
        * the claim goes into the history first (a claim whose event fails is given back and not
        * used: not modelled beyond not using it), then the table is checked again */
       :: rp[i] == RP_OK && s_tid != mytid -> h_any = true    /* claimed from a table restored since the check */
       :: rp[i] == RP_OK && s_tid == mytid -> h_any = true;
#else
       :: rp[i] == RP_OK ->
#endif
          myepoch = rp_epoch[i];
#ifdef FENCE_FROM_ARRIVAL
          readclk(e); setlease(now, e + LH(i) - M)
#else
          setlease(now, now + LH(i) - M)
#endif
       :: else -> skip
       fi;
       rp[i] = RP_NONE; rp_epoch[i] = 0; now = 0; e = 0; phase = P_IDLE }
  :: atomic { phase == P_IDLE && held ->
       /* rule renew: go lease.Keeper.renew test lease.TestRenewalFenceFromExpiryWritten */
       readclk(now);
       if
#ifndef RESTORE_NOFENCE
       /* rule no_lapsed_renewal: go lease.Keeper.renew test lease.TestKeeperNeverRenewsALapsedLease */
       :: now >= fence -> drop()
       /* rule table_changed: go lease.Keeper.renew test lease.TestKeeperDropsWhenTheTableChanges */
       :: now < fence && s_tid != mytid -> drop()
       :: now < fence && s_tid == mytid -> e = now + LH(i); phase = P_TIDOK
#else
       :: else -> e = now + LH(i); phase = P_TIDOK
#endif
       fi;
       now = 0
#ifdef NO_RESTORE
       /* without restores the TableId check and the renewal can be one step */
       ; if
         :: phase == P_TIDOK -> goto renewsend
#ifdef GIVE_UP
         :: phase == P_TIDOK && !gu[i] -> goto giveup
#endif
         :: else -> skip
         fi
#endif
     }
  :: atomic { phase == P_TIDOK ->
renewsend:
       send(RQ_RENEW, e, myepoch); phase = P_RENEWED }
#ifdef GIVE_UP
  /* rule renew_gives_up: go lease.Keeper.renew test lease.TestRenewalAttemptsEndAtTheFence
   * the keeper stops waiting for the store (lease.AttemptTimeout, or its fence): the renewal
   * stays in flight and the holder goes on as after a lost reply, keeping its fence */
  :: atomic { phase == P_TIDOK && !gu[i] ->
giveup:
       gu[i] = true; gu_me[i] = me; gu_ep[i] = myepoch; gu_e[i] = e; e = 0; phase = P_IDLE }
  /* the store applies it later, with the renewal's condition (rule store_renew), or never */
  :: atomic { gu[i] ->
       if
       :: s_holder == gu_me[i] && s_epoch == gu_ep[i] && s_exp < gu_e[i] -> s_exp = gu_e[i]
       :: true -> skip
       fi;
       gu[i] = false; gu_me[i] = 0; gu_ep[i] = 0; gu_e[i] = 0 }
#endif
  :: atomic { phase == P_RENEWED ->
       if
#ifndef RESTORE_NOFENCE
       /* rule renew_table_recheck: go lease.Keeper.renew test lease.TestRenewalOnATableRestoredMeanwhile */
       :: rp[i] == RP_OK && held && s_tid != mytid -> drop()   /* renewed a table restored since the check */
       :: rp[i] == RP_OK && held && s_tid == mytid ->
#else
       :: rp[i] == RP_OK && held ->
#endif
#ifdef FENCE_FROM_ARRIVAL
          readclk(now); setlease(floor, now + LH(i) - M); now = 0
#else
          setlease(floor, e - M)                /* the fence from the expiry written */
#endif
       :: rp[i] == RP_FAIL -> drop()            /* lost: drop at once */
       :: else -> skip                          /* no answer: keep issuing up to the fence */
       fi;
       rp[i] = RP_NONE; e = 0; phase = P_IDLE }
  :: atomic { phase == P_IDLE && held && inc + 1 < INCS ->
       /* rule release: go lease.Keeper.Release test lease.TestReleaseExpiryIsTheLastIssuedTimestamp */
       held = false;                            /* stop issuing first */
       readclk(now);
       e = now; if :: last > e -> e = last :: else -> skip fi;
       if :: e >= fence + M -> e = fence + M :: else -> skip fi;   /* never later than the lease */
       send(RQ_RELEASE, e, myepoch);
       inc++ };
     goto start                                 /* the next node is a new holder */
  :: atomic { inc + 1 < INCS -> inc++ };        /* crash and restart (kill -9) */
     goto start
  od
}

init
{
  atomic {
    byte i;
    for (i : 0 .. NH - 1) { run Holder(i) }
    run Time();
    run Operator()
  }
}
