/*
 * lease.pml: one machine number of one lease table, shared by NH holders (SPEC §3).
 *
 * Time is abstracted to small integers: T is true time, each holder's clock is T + off[i].
 * Every rule below names, in a "rule" comment, the Go function that implements it and the Go test
 * that checks that function's rule:   rule NAME: go PACKAGE.FUNC test PACKAGE.TEST
 * (model/links_test.go checks that every named function and test exists, and that each test's
 * comment names its rule).
 *
 * Property: no (timestamp, sequence) pair is issued twice under the number (the assertion in
 * issue). Run: see model/README.md.
 *
 * Variants (each must produce a counterexample):
 *   -DFLOOR_AT_CLAIM     the floor is checked once at claim, not for every ID
 *   -DFENCE_FROM_ARRIVAL the fence is computed from the clock when the reply arrives
 *   -DRENEW_LOWER        a renewal may lower the expiry, and clocks may step beyond the bound
 *   -DRESTORE_NOFENCE    a restored table is used without the restore fence (no TableId check,
 *                        no metadata check), and lapsed renewals are allowed
 *   -DLIFT_NOW           the operator lifts a quarantine at once instead of a lease later
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
#define L 4             /* lease length */
#define M 1             /* fence margin */
#define CB 1            /* clock bound: every offset within [-CB, CB] */
#ifndef SEQMAX
#define SEQMAX 0        /* the largest sequence: 0 gives one ID per timestamp */
#endif
#ifdef RENEW_LOWER
#define T0 7            /* first instant (so that every timestamp is positive) */
#else
#define T0 2
#endif

#ifdef RENEW_LOWER
#define OFFLO (-6)      /* clocks step back far beyond the bound */
#else
#define OFFLO (-CB)
#endif
#define OFFHI CB

#ifdef LIFT_NOW
#define LIFT_WAIT 0
#else
#define LIFT_WAIT L     /* the operator lifts a quarantine no earlier than a lease after it */
#endif

#define QUAR 100        /* holder QUARANTINED */
#define LIFTED 101      /* holder LIFTED */
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
short off[NH];

/* the lease row and the table's identity */
byte s_holder;          /* 0: no row */
short s_exp;
byte s_epoch;
byte s_tid = 1;         /* TableId: a restore makes a new one */
byte s_meta;            /* the TableId named by the metadata row; 0: none */

/* a backup of the table (row and metadata row), and the operator's progress */
bool b_taken, restored, fenced, quarantined, lifted;
byte b_holder, b_epoch, b_meta;
short b_exp;
byte q_time;

/* the reply to a holder's last request: RP_NONE when it was lost */
byte rp[NH];
byte rp_epoch[NH];

/* The property watches one (timestamp, sequence) pair, chosen at the start among all of them:
 * issuing it a second time fails the assertion. Every pair is watched in some run. */
short w_ts;
byte w_seq;
bool w_seen;

#define clk(i) (T + off[i])

/*
 * The store applies a request atomically (a conditional write) when it is sent; its reply reaches
 * the holder whenever the holder next looks (delayed by any pause), or never (lost).
 * rule store_claim: go sqlitelease.Store.Claim test model.TestRuleStoreClaim
 * rule store_renew: go sqlitelease.Store.Renew test model.TestRuleStoreRenew
 * rule store_release: go sqlitelease.Store.Release test model.TestRuleStoreRelease
 */
inline send(kind, ex, ep)
{
  atomic {
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
}

/* True time advances; each clock steps anywhere within its bound at any moment. */
proctype Time()
{
  byte i;
end:
  do
  :: atomic { T < TMAX -> T++ }
#ifndef NO_STEP
  :: atomic { select(i : 0 .. NH - 1); off[i] > OFFLO -> off[i]--; i = 0 }
  :: atomic { select(i : 0 .. NH - 1); off[i] < OFFHI -> off[i]++; i = 0 }
#endif
  od
}

/*
 * The operator: a backup at any moment, a restore from it, the restore fence, a quarantine and
 * its lift. The operator's clock is within the bound too.
 */
proctype Operator()
{
  short now;
end:
  do
#ifndef NO_RESTORE
  :: atomic { !b_taken -> b_taken = true; b_holder = s_holder; b_exp = s_exp; b_epoch = s_epoch; b_meta = s_meta }
  :: atomic { b_taken && !restored ->
       /* a restore makes a new table: the backup's rows and metadata row, a new TableId */
       restored = true; s_holder = b_holder; s_exp = b_exp; s_epoch = b_epoch; s_meta = b_meta; s_tid++;
       b_holder = 0; b_exp = 0; b_epoch = 0; b_meta = 0 }
#ifndef RESTORE_NOFENCE
  /* rule restore_fence: go lease.FenceRestore test model.TestRuleRestoreFence */
  :: atomic { restored && !fenced ->
       fenced = true;
       select(now : T - CB .. T + CB);
       if
       :: s_holder != 0 && s_holder != QUAR -> s_exp = now + L + M; s_epoch++
       :: else -> skip
       fi;
       s_meta = s_tid; now = 0 }
#endif
#endif
#ifndef NO_QUARANTINE
  /* rule quarantine: go sqlitelease.Store.Quarantine test model.TestRuleQuarantine */
  :: atomic { !quarantined ->
       quarantined = true; q_time = T; s_holder = QUAR; s_exp = QEXP; s_epoch++ }
  /* rule lift: go lease.LiftExpiry test cli.TestLocalStack */
  :: atomic { quarantined && !lifted && s_holder == QUAR && T >= q_time + LIFT_WAIT ->
       lifted = true; select(now : T - CB .. T + CB); s_holder = LIFTED; s_exp = now; s_epoch++; now = 0; q_time = 0 }
#endif
  :: false
  od
}

/*
 * rule issue: go idcore.Generator.issueLocked test model.TestRuleIssue
 * One ID at the holder's clock: checked against last_ms, the fence and the floor, every time.
 */
inline issue()
{
  atomic {
    held ->
    ts = clk(i);
    if
    :: ts < last -> skip                    /* behind last_ms: wait (≤ bound) or refuse */
    :: ts >= last && ts >= fence -> skip    /* at or past the fence: refuse */
#ifndef FLOOR_AT_CLAIM
    :: ts >= last && ts < fence && ts <= floor -> skip   /* at or below the floor: wait */
    :: ts >= last && ts < fence && ts > floor ->
#else
    :: ts >= last && ts < fence ->
#endif
       if
       :: ts == last && seq < SEQMAX -> seq++
       :: ts == last && seq >= SEQMAX -> goto skipped   /* sequence used up: wait */
       :: ts > last -> seq = 0
       fi;
       if
       :: ts == w_ts && seq == w_seq -> assert(!w_seen); w_seen = true
       :: else -> skip
       fi;
       last = ts;
skipped: skip
    fi;
    ts = 0
  }
}

/* stop issuing under the number and forget it */
inline drop()
{
  held = false; floor = 0; fence = 0; myepoch = 0
}

/* rule set_lease: go idcore.Generator.SetLease test model.TestRuleSetLease */
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
  byte seq;

start:
  /* a new process: a new holder name, no last_ms */
  atomic { me = 1 + i + NH * inc; drop(); mytid = 0; phase = P_IDLE; last = 0; seq = 0; rp[i] = RP_NONE; rp_epoch[i] = 0; now = 0; e = 0 }
end:
  do
  :: issue()
  :: atomic { phase == P_IDLE && !held ->
       /* rule check_table: go lease.CheckTable test model.TestRuleCheckTable */
#ifndef RESTORE_NOFENCE
       if
       :: s_meta == 0 && s_holder == 0 -> s_meta = s_tid     /* the first claimer writes it */
       :: else -> skip
       fi;
       if
       :: s_meta == s_tid -> mytid = s_tid; phase = P_CHECKED
       :: else -> skip                                        /* a restore: refuse */
       fi
#else
       mytid = s_tid; phase = P_CHECKED
#endif
     }
  :: atomic { phase == P_CHECKED ->
       /* rule claim: go lease.Keeper.claim test model.TestRuleClaim */
       now = clk(i); send(RQ_CLAIM, now + L, 0); phase = P_CLAIMED }
  :: atomic { phase == P_CLAIMED ->
       if
#ifndef RESTORE_NOFENCE
       /* rule claim_table_recheck: go lease.Keeper.claim test lease.TestClaimOnATableRestoredMeanwhile */
       :: rp[i] == RP_OK && s_tid != mytid -> skip           /* claimed from a table restored since the check */
       :: rp[i] == RP_OK && s_tid == mytid ->
#else
       :: rp[i] == RP_OK ->
#endif
          myepoch = rp_epoch[i];
#ifdef FENCE_FROM_ARRIVAL
          setlease(now, clk(i) + L - M)
#else
          setlease(now, now + L - M)
#endif
       :: else -> skip
       fi;
       rp[i] = RP_NONE; rp_epoch[i] = 0; now = 0; phase = P_IDLE }
  :: atomic { phase == P_IDLE && held ->
       /* rule renew: go lease.Keeper.renew test model.TestRuleRenew */
       now = clk(i);
       if
#ifndef RESTORE_NOFENCE
       /* rule no_lapsed_renewal: go lease.Keeper.renew test model.TestRuleNoLapsedRenewal */
       :: now >= fence -> drop()
       /* rule table_changed: go lease.Keeper.renew test model.TestRuleTableChanged */
       :: now < fence && s_tid != mytid -> drop()
       :: now < fence && s_tid == mytid -> phase = P_TIDOK
#else
       :: else -> phase = P_TIDOK
#endif
       fi;
       now = 0 }
  :: atomic { phase == P_TIDOK ->
       now = clk(i); e = now + L; send(RQ_RENEW, e, myepoch); now = 0; phase = P_RENEWED }
  :: atomic { phase == P_RENEWED ->
       if
       :: rp[i] == RP_OK && held ->
#ifdef FENCE_FROM_ARRIVAL
          setlease(floor, clk(i) + L - M)
#else
          setlease(floor, e - M)                /* the fence from the expiry written */
#endif
       :: rp[i] == RP_FAIL -> drop()            /* lost: drop at once */
       :: else -> skip                          /* no answer: keep issuing up to the fence */
       fi;
       rp[i] = RP_NONE; e = 0; phase = P_IDLE }
  :: atomic { phase == P_IDLE && held && inc + 1 < INCS ->
       /* rule release: go lease.Keeper.Release test model.TestRuleRelease */
       held = false;                            /* stop issuing first */
       now = clk(i);
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
    select(w_ts : T0 + OFFLO .. TMAX + OFFHI);
    select(w_seq : 0 .. SEQMAX);
    for (i : 0 .. NH - 1) { run Holder(i) }
    run Time();
    run Operator()
  }
}
