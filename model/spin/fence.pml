/*
 * The fenced handoff (SPEC §6) in Promela: a second engine for what
 * baton-model's fence section checks (issue 37). Written from the rule's
 * table in src/durable/fence.rs (claim_step, append_step) and the
 * worker's seal_step (src/durable/worker.rs), not from the Rust model.
 *
 * It stays one file, past 600 lines, because it is one model read top to
 * bottom: the log and the properties over it, the append and finish
 * columns, then each actor with the column it applies (the owner the
 * claim's, the operator retire_step's, the successor its own claim and
 * finish, the standby the failover). Every -D switch below (FATES,
 * FAILOVER, each BROKEN_ variant) threads through all of those parts:
 * split by part, one variant would be read across files, and the claim
 * and retire columns cut from the actors that apply them. (gate.pml,
 * whose table and actors part at one seam, is split: gate_actors.pml.)
 *
 * One Run. The log holds its current epoch and at most one pause (whose
 * it is, and the epoch it was appended under). The owner claims the Run:
 * on an open Run the claim issues epoch c+1 and starts the next worker
 * with it; on a handed-off Run it answers HandedOff and writes nothing.
 * The owner may claim while the current worker lives (a wrong
 * suspicion). Workers commit a pause, append it under the epoch they hold,
 * and seal only on an acknowledged append. A worker that takes no step
 * for a while is a zombie: SPIN explores every interleaving. Faults (a
 * lost reply: the append commits, the worker sees an error and closes
 * without a seal; a lost request; a crash) happen while another claim
 * may still follow (fewer than N workers started), as in baton-model.
 *
 * Every step is one d_step from the head of a process's loop, so a stored
 * state is the abstract state (log, owner, phases, held epochs) plus the
 * loop-head program counters, which never change.
 *
 *   spin -a [-DN=2] [-DBROKEN_...] fence.pml && gcc -O2 -DSAFETY -o pan pan.c && ./pan
 *
 * Broken variants (each must be caught):
 *   BROKEN_NO_FENCE            append ignores the epoch (written as if current)
 *   BROKEN_SEAL_BEFORE_APPEND  a worker may seal a committed pause before appending it
 *   BROKEN_CLAIM_RESUMES       a claim issues a new epoch although a pause is durable
 *   BROKEN_NO_ADVANCE          a takeover reissues the current epoch instead of a new one
 *   BROKEN_BY_READING          the design before fencing: the owner reads the log,
 *                              writes no epoch, and appends ignore the epoch
 *   BROKEN_FENCE_OFF_BY_ONE    append fences the current epoch too (e <= c): no
 *                              write, no seal, so only R5 (liveness) catches it
 *   BROKEN_CLAIM_WRITES_FINAL  a claim that answers HandedOff or Finished still
 *                              advances the epoch (a write no answer asked for: G3)
 *
 *
 * -DFATES adds the third fate and retention (src/durable/fence.rs:
 * finish_step, retire_step): a worker may end the Run and record its
 * outcome under its epoch (fenced like an append, with the same lost reply
 * and lost request), and an operator's retention job retires the root at
 * any time, following retire_step as of issue 43: NothingToRetire while the
 * log holds no Run of the root; RunOpen while a Run of it is open or the
 * successor a durable pause names is not claimed or not final; otherwise
 * every Run's rows go and the tombstone stays (epoch 0, no pause, no
 * finish, the successor's rows gone too). With it, the successor a durable
 * pause names is a second Run of the root: once a pause is durable its own
 * owner claims it (claim_step on its own facts) and its worker finishes it
 * (finish_step, under the epoch its claim answered); it may only finish.
 * Its broken variants:
 *   BROKEN_NO_TOMBSTONE        retention deletes the rows and keeps no tombstone:
 *                              the next claim issues epoch 1 again
 *   BROKEN_FINISH_NO_FENCE     a finish ignores the epoch (written as if current)
 *   BROKEN_RETIRE_OPEN         retention removes a Run still open (RunOpen ignored)
 *   BROKEN_RETIRE_SUCCESSOR    retention counts a handed-off Run as ended while its
 *                              successor is not claimed (the rule before issue 43)
 * (-DNO_R10 leaves out R10's "the tombstone is kept" assertion, to see
 * BROKEN_NO_TOMBSTONE's reissued epoch, R9, which comes one step later;
 * -DNO_G5 leaves out G5's assertion at the removal, to see
 * BROKEN_RETIRE_SUCCESSOR's refused successor claim, G1, one step later.)
 *
 * -DCHECK_R5 adds R5 as LTL (compile pan without -DSAFETY, run pan -a;
 * with -DFATES, pan -a -f: retention's refusals are self-loops).
 *
 * -DFAILOVER=1 (a synchronous standby) or -DFAILOVER=2 (an asynchronous
 * one), with -DFATES, adds the failover of issue 49 (docs/SPEC.md §6,
 * "Replication and failover"): a standby that holds a copy of the log,
 * received in order — an asynchronous one at any moment, a synchronous
 * one also before every answered operation (each takes the Run's row lock,
 * so its commit waits for the standby), never for a write whose reply was
 * lost — and one failover, while another claim may follow: the log
 * becomes the standby's copy on the next term, whose claims answer above
 * the term's floor (timeline_floor: 2^40, kept here as 8; epochs stay
 * below 16). With a standby, the successor is due once a party is told
 * of its pause (the append's reply, or a claim answering HandedOff). G2
 * (what was acknowledged survives) is asserted; on an asynchronous standby
 * the promises a failover may break (R1 R2 R4 R7's seal R8 G1 G5 G2, and
 * R5) are left out unless -DALL_PROMISES, which must then fail. Its
 * broken variant:
 *   BROKEN_NO_FLOOR            claims after the failover answer the surviving
 *                              epoch + 1 (no floor): an epoch answered twice
 */

#ifndef N
#define N 2          /* the most workers the owner starts (1..4) */
#endif
#define MAXW 4       /* array size: unused workers stay Idle, epoch 0 */

#ifdef BROKEN_BY_READING
#define BROKEN_NO_FENCE
#endif

/* A worker's phase. */
#define IDLE      0  /* not started: no claim gave it an epoch */
#define WORKING   1  /* running the Run with its epoch */
#define COMMITTED 2  /* its gate committed a pause, ready to append */
#define ACKED     3  /* its append was acknowledged: it may seal */
#define SEALED    4  /* sealed: wait() answered Some */
#define FENCED    5  /* its append answered Fenced: closed, stopped */
#define CLOSED    6  /* append failed or its reply was lost: closed, no seal */
#define CRASHED   7
#define FINISHING 8  /* its Run ended: its outcome is ready to record (FATES) */
#define FINISHED  9  /* its finish was acknowledged: the Run is over */

/* What the log answers an append. */
mtype = { Written, AlreadyDurable, Fenced, AlreadyHandedOff, AlreadyFinished, Retired, EpochNotIssued };

/* The log. */
byte epoch = 0;        /* the Run's current epoch; 0: never claimed */
byte pause = 0;        /* 0: no pause; i+1: worker i's pause is durable */
byte pause_epoch = 0;  /* the epoch that pause was appended under */
byte finish = 0;       /* 0: no outcome; i+1: worker i's outcome is durable */
bool retired = false;  /* the root Run's tombstone */

#ifdef FAILOVER
/* The standby's copy of the log, and whether it was promoted. */
bool failed_over = false;
byte s_epoch = 0;
byte s_pause = 0;
byte s_pause_epoch = 0;
byte s_finish = 0;
bool s_retired = false;
byte s_succ_epoch = 0;
bool s_succ_finish = false;
#endif
#if defined(FAILOVER) && !defined(BROKEN_NO_FLOOR)
#define FLOOR (failed_over -> 8 : 0)   /* timeline_floor(2) = 2^40, kept as 8 */
#else
#define FLOOR 0
#endif
/* The epoch a claim issues on an open Run: max(c, floor) + 1. */
#define NEXT(c) ((c > FLOOR -> c : FLOOR) + 1)
#if FAILOVER == 2 && !defined(ALL_PROMISES)
#define ASYNC_SKIP   /* the promises an asynchronous failover may break */
#endif

/* The successor a durable pause names (FATES): a second Run of the root. */
#define S_UNNAMED  0  /* no durable pause names it yet */
#define S_DUE      1  /* a durable pause names it: its owner may claim it */
#define S_WORKING  2  /* its claim answered Owner: its worker runs it */
#define S_FINISHED 3  /* its outcome was acknowledged: final */
#define S_REFUSED  4  /* its claim or finish was refused: G1 broken */
byte succ = S_UNNAMED;
byte succ_epoch = 0;      /* the log: the successor's epoch; 0: not claimed */
bool succ_finish = false; /* the log: the successor's outcome is durable */
byte succ_held = 0;       /* the epoch the successor's worker holds */

/* The owner. */
byte decided = 0;         /* what a claim answered: 0 nothing final yet,
                             1 HandedOff, 2 Finished, 3 Retired */
byte started = 0;         /* workers started */

/* The workers. */
byte phase[MAXW];
byte held[MAXW];          /* the epoch its claim gave it */

hidden mtype ans;         /* scratch inside one d_step, not state */
hidden byte owns;         /* scratch: the claim answers Owner */
hidden byte susp;         /* scratch: a worker holding the current epoch lives */
hidden byte e;            /* scratch: the epoch the append carries */
hidden byte c;            /* scratch: the current epoch the rule sees */
hidden int logsnap;          /* scratch: the log before the step (G3) */

#define LIVE(i)  (phase[i] == WORKING || phase[i] == COMMITTED || phase[i] == ACKED || phase[i] == FINISHING)
#define FAULTS   (started < N)   /* another claim may still follow */
#define ME       (_pid - 1)      /* the owner is pid 0, workers 1..N */

/* A property: on failure, name it (printed by spin -t) and fail. */
#define PROP(ok, name) \
    if \
    :: !(ok) -> printf("PROPERTY VIOLATED: "); printf(name); printf("\n"); assert(ok) \
    :: else -> skip \
    fi

/* What the log holds, as one number (every field is below its factor). */
#define LOG_SNAP (epoch + 16 * pause + 128 * pause_epoch + 2048 * finish + 16384 * retired \
                  + 32768 * succ_epoch + 524288 * succ_finish)
/* G3: a step that did not write (a refusal, an answer that writes
 * nothing) leaves the log as it was before it (logsnap). */
#define G3(wrote) PROP((wrote) || LOG_SNAP == logsnap, "G3 a refusal writes nothing"); logsnap = 0

/* R1: once worker w's pause is durable, no worker started after it
 * exists (no epoch issued after the pause, no older pause after a newer
 * epoch). Worker j is started after w iff j >= pause (= w + 1). */
#define LATER_IDLE(j) (j < pause || phase[j] == IDLE)
#define R1_OK (pause == 0 || (LATER_IDLE(1) && LATER_IDLE(2) && LATER_IDLE(3)))
/* The log holds the tombstone only: retention removed the Run's rows. */
#define TOMB (retired && epoch == 0 && pause == 0 && finish == 0 && succ_epoch == 0 && !succ_finish)
/* R4: a sealed worker's pause is durable, under its epoch (or was, until
 * retention removed it with the Run's rows: the tombstone only). */
#define SEALED_OK(i) (phase[i] != SEALED || (pause == i + 1 && pause_epoch == held[i]) || TOMB)
#define R4_OK (SEALED_OK(0) && SEALED_OK(1) && SEALED_OK(2) && SEALED_OK(3))
/* R8: one final fate at most, and no worker started after the finisher. */
#define AFTER_FINISH_IDLE(j) (j < finish || phase[j] == IDLE)
#define R8_OK (!(pause > 0 && finish > 0) && \
               (finish == 0 || (AFTER_FINISH_IDLE(1) && AFTER_FINISH_IDLE(2) && AFTER_FINISH_IDLE(3))))
/* R10: under the tombstone the log holds nothing else. */
#define R10_OK (!retired || TOMB)
/* reconcile's TwoFates: a pause and an outcome, or rows under the tombstone. */
#define TWO_FATES ((pause > 0 && finish > 0) || (retired && (epoch > 0 || pause > 0 || finish > 0)))
/* R9: epoch e was never issued: no started worker holds it. */
#define NOT_HELD(j, e) (j >= started || held[j] != e)
#define NEW_EPOCH(e) (NOT_HELD(0, e) && NOT_HELD(1, e) && NOT_HELD(2, e) && NOT_HELD(3, e))

#ifdef FAILOVER
/* G2: every fate a party was told of is in the log (or the root retired):
 * a worker's acknowledged pause or outcome, the fate a claim answered the
 * owner, the successor's acknowledged outcome. */
#define KEPT(i) ((phase[i] != ACKED && phase[i] != SEALED || pause == i + 1) \
                 && (phase[i] != FINISHED || finish == i + 1))
#define G2_OK (retired || (KEPT(0) && KEPT(1) && KEPT(2) && KEPT(3) \
               && (decided != 1 || pause > 0) && (decided != 2 || finish > 0) \
               && (succ != S_FINISHED || succ_finish)))
#define STANDBY_SNAP (s_epoch + 16 * s_pause + 128 * s_pause_epoch + 2048 * s_finish \
                      + 16384 * s_retired + 32768 * s_succ_epoch + 524288 * s_succ_finish)
/* The standby receives everything the primary holds. */
#define REPLICATE s_epoch = epoch; s_pause = pause; s_pause_epoch = pause_epoch; \
    s_finish = finish; s_retired = retired; s_succ_epoch = succ_epoch; s_succ_finish = succ_finish
#endif
/* An answered operation on a synchronous standby: its commit waited for
 * the standby, which then holds everything before it. */
#if FAILOVER == 1
#define SYNC_WAIT if :: !failed_over -> REPLICATE :: else -> skip fi
#else
#define SYNC_WAIT skip
#endif

inline invariants() {
#ifndef ASYNC_SKIP
    PROP(R1_OK, "R1 a Run handed off is never continued by a resumed worker");
    PROP(R4_OK, "R4 a sealed worker's pause is durable");
    PROP(R8_OK, "R8 a Run has at most one final fate, and no epoch is issued after it");
#endif
    PROP(R10_OK, "R10 retention leaves the tombstone only");
#if defined(FAILOVER) && !defined(ASYNC_SKIP)
    PROP(G2_OK, "G2 what was acknowledged survives a failover");
#endif
}

/* The table's append column, for worker w holding epoch held[w]. */
inline log_append(w) {
    logsnap = LOG_SNAP;
#ifdef BROKEN_NO_FENCE
    c = (epoch > 0 -> epoch : 1);   /* asked as if it held the current epoch */
    e = c;
#else
    c = epoch;
    e = held[w];
#endif
    if
    :: retired -> ans = Retired     /* the root is retired: refused first */
    :: !retired && (e == 0 || e > c) -> ans = EpochNotIssued
#ifdef BROKEN_FENCE_OFF_BY_ONE
    :: !retired && e != 0 && e <= c -> ans = Fenced       /* fences the current epoch too */
#else
    :: !retired && e != 0 && e < c -> ans = Fenced
#endif
    :: else ->
        if
        :: pause == 0 && finish == 0 ->
            /* R6: only the current epoch appends, once; R7: never a fenced
             * worker; R9: nothing is written under the tombstone. */
            PROP(held[w] == epoch, "R6 only the current epoch appends");
            PROP(held[w] == epoch, "R7 a fenced worker never appends");
            PROP(!retired, "R9 no write under the tombstone");
            pause = w + 1; pause_epoch = e; ans = Written;
#if defined(FATES) && !defined(FAILOVER)
            /* the durable pause names the successor: it must stay claimable (G1) */
            if :: succ == S_UNNAMED -> succ = S_DUE :: else -> skip fi
#endif
            skip
        :: pause == w + 1 && pause_epoch == e -> ans = AlreadyDurable  /* identical row */
        :: pause == 0 && finish > 0 -> ans = AlreadyFinished  /* the Run finished: refused */
        :: else -> ans = AlreadyHandedOff   /* another pause is durable: refused */
        fi
    fi;
    G3(ans == Written)
}

/* The table's finish column (finish_step), for worker w holding epoch
 * held[w]: fenced exactly as an append; its outcome is its index. */
inline log_finish(w) {
    logsnap = LOG_SNAP;
#ifdef BROKEN_FINISH_NO_FENCE
    c = (epoch > 0 -> epoch : 1);   /* asked as if it held the current epoch */
    e = c;
#else
    c = epoch;
    e = held[w];
#endif
    if
    :: retired -> ans = Retired
    :: !retired && (e == 0 || e > c) -> ans = EpochNotIssued
    :: !retired && e != 0 && e < c -> ans = Fenced
    :: else ->
        if
        :: pause == 0 && finish == 0 ->
            PROP(held[w] == epoch, "R6 only the current epoch writes (a finish)");
            PROP(held[w] == epoch, "R7 a fenced worker never finishes");
            PROP(!retired, "R9 no write under the tombstone");
            finish = w + 1; ans = Written
        :: pause == 0 && finish == w + 1 -> ans = AlreadyDurable  /* the identical outcome */
        :: pause > 0 -> ans = AlreadyHandedOff
        :: else -> ans = AlreadyFinished             /* another outcome */
        fi
    fi;
    G3(ans == Written)
}

/* seal_step: seal on an acknowledged append; Fenced: close and stop;
 * any other error: close without a seal. */
inline after_append(w) {
    if
    :: ans == Written || ans == AlreadyDurable -> phase[w] = ACKED
    :: ans == Fenced -> phase[w] = FENCED
    :: else -> phase[w] = CLOSED
    fi
}

/* A finish acknowledged ends the worker; Fenced stops it; any other
 * answer closes it (the owner's claim reads the fate from the log). */
inline after_finish(w) {
    if
    :: ans == Written || ans == AlreadyDurable -> phase[w] = FINISHED
    :: ans == Fenced -> phase[w] = FENCED
    :: else -> phase[w] = CLOSED
    fi
}

/* A seal under the tombstone: the append was acknowledged before
 * retention removed the pause with the Run's rows. */
inline seal(w) {
#ifndef ASYNC_SKIP
    PROP((pause == w + 1 && pause_epoch == held[w]) || TOMB,
         "R2 a seal implies the pause is durable under the worker's epoch");
    PROP(held[w] == epoch || TOMB, "R7 a fenced worker never seals");
#endif
    phase[w] = SEALED
}

active proctype owner() {
end:
    do
    :: d_step {
        decided == 0 && started < N ->
        logsnap = LOG_SNAP;
        susp = (started > 0 && LIVE(started - 1) && held[started - 1] == epoch);
        /* The table's claim column (a wrong suspicion is a claim while
         * LIVE(worker holding epoch): nothing here forbids it). */
#ifdef BROKEN_CLAIM_RESUMES
        owns = (finish == 0 && !retired);   /* answers Owner on a pause too */
#else
        owns = (pause == 0 && finish == 0 && !retired);  /* Owner iff no fate is durable */
#endif
        if
        :: TWO_FATES ->
            /* contradictory facts: refused (Contradictory), nothing written */
            PROP(false, "R3 a claim never refuses the facts the protocol writes")
        :: else ->
        if
        :: owns ->
            PROP(pause == 0, "R3 a claim answers HandedOff exactly when a pause is durable");
            PROP(finish == 0, "R3 a claim answers Finished exactly when an outcome is durable");
            PROP(!retired, "R9 a retired Run is never resumed");
#if defined(BROKEN_BY_READING)
            held[started] = epoch + 1;  /* reads, writes no epoch */
#elif defined(BROKEN_NO_ADVANCE)
            if :: epoch == 0 -> epoch = 1 :: else -> skip fi;
            held[started] = epoch;      /* reissues the current epoch */
#else
            epoch = NEXT(epoch);        /* every older epoch is fenced */
            held[started] = epoch;
#endif
            PROP(NEW_EPOCH(held[started]), "R9 an epoch is never issued twice");
            PROP(NEW_EPOCH(held[started]), "G4 an epoch a claim answered is never answered to another claim of that Run");
            printf("owner claims (wrong suspicion: %d): Owner(epoch %d), starts worker %d\n",
                   susp, held[started], started);
            phase[started] = WORKING;
            started = started + 1
        :: !owns && retired ->
            printf("owner claims: Retired, writes nothing\n");
            decided = 3
        :: !owns && !retired && pause > 0 ->
            printf("owner claims: HandedOff (worker %d's pause is durable), writes nothing\n", pause - 1);
            decided = 1;               /* writes nothing */
#if defined(FATES) && defined(FAILOVER)
            /* the owner is told: the successor is due (G1) */
            if :: succ == S_UNNAMED -> succ = S_DUE :: else -> skip fi;
#endif
#ifdef BROKEN_CLAIM_WRITES_FINAL
            printf("  and advances the epoch\n");
            epoch = epoch + 1;
#endif
            skip
        :: !owns && !retired && pause == 0 && finish > 0 ->
            printf("owner claims: Finished (worker %d's outcome is durable), writes nothing\n", finish - 1);
            decided = 2;
#ifdef BROKEN_CLAIM_WRITES_FINAL
            printf("  and advances the epoch\n");
            epoch = epoch + 1;
#endif
            skip
        :: !owns && !retired && pause == 0 && finish == 0 ->
            PROP(false, "R3 a claim answers HandedOff exactly when a pause is durable")
        fi
        fi;
        G3(owns);
        owns = 0; susp = 0;
        SYNC_WAIT;
        invariants()
       }
    od
}

active [N] proctype worker() {
end:
    do
    :: d_step {
        phase[ME] == WORKING -> printf("worker %d (epoch %d) commits its pause\n", ME, held[ME]);
        phase[ME] = COMMITTED; invariants()
       }
    :: d_step { /* append, reply received */
        phase[ME] == COMMITTED -> log_append(ME);
        printf("worker %d appends under epoch %d (log epoch %d): %e\n", ME, held[ME], epoch, ans);
#if defined(FATES) && defined(FAILOVER)
        /* its worker is told: the successor is due (G1) */
        if :: ans == Written && succ == S_UNNAMED -> succ = S_DUE :: else -> skip fi;
#endif
        if :: ans == Written || ans == AlreadyDurable -> SYNC_WAIT :: else -> skip fi;
        after_append(ME); ans = 0; e = 0; c = 0; invariants()
       }
    :: d_step { /* append commits, its reply is lost: a storage error, close */
        phase[ME] == COMMITTED && FAULTS -> log_append(ME);
        printf("worker %d appends under epoch %d: %e, reply lost: closes without a seal\n", ME, held[ME], ans);
        phase[ME] = CLOSED; ans = 0; e = 0; c = 0; invariants()
       }
    :: d_step { /* the request is lost before the log: close */
        phase[ME] == COMMITTED && FAULTS -> printf("worker %d's append request is lost: closes\n", ME);
        phase[ME] = CLOSED; invariants()
       }
    :: d_step {
        phase[ME] == ACKED -> printf("worker %d seals (wait() answers Some)\n", ME);
        seal(ME); invariants()
       }
#ifdef FATES
    :: d_step {
        phase[ME] == WORKING -> printf("worker %d (epoch %d) ends its Run\n", ME, held[ME]);
        phase[ME] = FINISHING; invariants()
       }
    :: d_step { /* finish, reply received */
        phase[ME] == FINISHING -> log_finish(ME);
        printf("worker %d finishes under epoch %d (log epoch %d): %e\n", ME, held[ME], epoch, ans);
        if :: ans == Written || ans == AlreadyDurable -> SYNC_WAIT :: else -> skip fi;
        after_finish(ME); ans = 0; e = 0; c = 0; invariants()
       }
    :: d_step { /* finish commits, its reply is lost: close */
        phase[ME] == FINISHING && FAULTS -> log_finish(ME);
        printf("worker %d finishes under epoch %d: %e, reply lost: closes\n", ME, held[ME], ans);
        phase[ME] = CLOSED; ans = 0; e = 0; c = 0; invariants()
       }
    :: d_step { /* the request is lost before the log: close */
        phase[ME] == FINISHING && FAULTS -> printf("worker %d's finish request is lost: closes\n", ME);
        phase[ME] = CLOSED; invariants()
       }
#endif
#ifdef BROKEN_SEAL_BEFORE_APPEND
    :: d_step {
        phase[ME] == COMMITTED -> printf("worker %d seals BEFORE appending\n", ME);
        seal(ME); invariants()
       }
#endif
    :: d_step {
        FAULTS && LIVE(ME) -> printf("worker %d crashes\n", ME);
        phase[ME] = CRASHED; invariants()
       }
    od
}

#ifdef FATES
/* The retention job: retire_step on what the log holds for the root, at
 * any time, until the tombstone is there. The log holds a Run of the root
 * once a claim issued it an epoch (the root's, the successor's). Refused,
 * nothing is written (a self-loop): NothingToRetire while it holds none;
 * RunOpen while a Run of it is open, or the successor a durable pause
 * names is not claimed or not final. Otherwise every Run's rows go and the
 * tombstone stays. */
#define HOLDS_A_RUN (epoch > 0 || succ_epoch > 0)
#define OPEN_RUN ((epoch > 0 && pause == 0 && finish == 0) || (succ_epoch > 0 && !succ_finish))
#define WAITING (pause > 0 && !(succ_epoch > 0 && succ_finish))
#if defined(BROKEN_RETIRE_OPEN)
#define REFUSED_OPEN false
#elif defined(BROKEN_RETIRE_SUCCESSOR)
#define REFUSED_OPEN OPEN_RUN
#else
#define REFUSED_OPEN (OPEN_RUN || WAITING)
#endif
active proctype operator() {
end:
    do
    :: d_step {
        !retired ->
        logsnap = LOG_SNAP;
        if
        :: !HOLDS_A_RUN ->
            printf("retention: NothingToRetire (no Run of the root), nothing written\n");
            G3(false)
        :: HOLDS_A_RUN && REFUSED_OPEN ->
            printf("retention: RunOpen (a Run open, or the successor not final), nothing written\n");
            G3(false)
        :: else ->
            PROP(epoch == 0 || pause > 0 || finish > 0, "R10 retention removes only final Runs");
#if !defined(NO_G5) && !defined(ASYNC_SKIP)
            PROP(epoch > 0 && (pause > 0 || finish > 0) && (succ_epoch == 0 || succ_finish)
                 && succ != S_DUE && succ != S_WORKING,
                 "G5 retention removes only ended work: every Run final, the successor claimed and final");
#endif
            printf("retention retires the root: every Run's rows are removed\n");
            epoch = 0; pause = 0; pause_epoch = 0; finish = 0;
            succ_epoch = 0; succ_finish = false;
#ifdef BROKEN_NO_TOMBSTONE
            printf("  and no tombstone is kept\n");
#ifndef NO_R10
            PROP(false, "R10 retention leaves the tombstone only")
#endif
#else
            retired = true;
#endif
            SYNC_WAIT
        fi;
        logsnap = 0;
        invariants()
       }
    od
}

#ifdef ASYNC_SKIP
#define G1_REFUSED(name) skip
#else
#define G1_REFUSED(name) PROP(false, name)
#endif
/* The successor's owner and worker: once a durable pause names it, its
 * claim (the claim column on its own facts: Retired under the tombstone,
 * else epoch c+1 and Owner), then its finish (the finish column, under the
 * epoch its claim answered). G1: neither is ever refused. */
active proctype successor() {
end:
    do
    :: d_step {
        succ == S_DUE ->
        logsnap = LOG_SNAP;
        if
        :: retired ->
            printf("the successor's claim: Retired (its handoff's rows are gone)\n");
            succ = S_REFUSED;
            G1_REFUSED("G1 a durable handoff reaches its successor: its claim is never refused")
        :: !retired && succ_finish ->
            printf("the successor's claim: Finished\n");
            succ = S_REFUSED;
            G1_REFUSED("G1 a durable handoff reaches its successor: its claim is never refused")
        :: else ->
            succ_epoch = NEXT(succ_epoch); succ_held = succ_epoch; succ = S_WORKING;
            printf("the successor's claim: Owner(epoch %d)\n", succ_held)
        fi;
        G3(succ == S_WORKING);
        SYNC_WAIT;
        invariants()
       }
    :: d_step {
        succ == S_WORKING ->
        logsnap = LOG_SNAP;
        if
        :: retired -> ans = Retired
        :: !retired && (succ_held == 0 || succ_held > succ_epoch) -> ans = EpochNotIssued
        :: !retired && succ_held != 0 && succ_held < succ_epoch -> ans = Fenced
        :: else ->
            if
            :: !succ_finish ->
                PROP(!retired, "R9 no write under the tombstone");
                succ_finish = true; ans = Written
            :: else -> ans = AlreadyDurable
            fi
        fi;
        G3(ans == Written);
        printf("the successor finishes under epoch %d: %e\n", succ_held, ans);
        if
        :: ans == Written || ans == AlreadyDurable -> succ = S_FINISHED; SYNC_WAIT
        :: else ->
            succ = S_REFUSED;
            G1_REFUSED("G1 a durable handoff reaches its successor: its finish is never refused")
        fi;
        ans = 0;
        invariants()
       }
    od
}
#endif

#ifdef FAILOVER
/* The standby and its promotion: until the failover, the standby may
 * receive everything the primary holds (in order, so it always holds what
 * the primary held at some earlier moment); the failover, once, while
 * another claim may follow: the log is the standby's copy, on the next
 * term (FLOOR). */
active proctype standby() {
end:
    do
    :: d_step {
        !failed_over && LOG_SNAP != STANDBY_SNAP ->
        printf("the standby receives everything the primary holds\n");
        REPLICATE
       }
    :: d_step {
        !failed_over && FAULTS ->
        printf("FAILOVER: the primary is lost, the standby promoted (lost: %d)\n",
               LOG_SNAP != STANDBY_SNAP);
        epoch = s_epoch; pause = s_pause; pause_epoch = s_pause_epoch; finish = s_finish;
        retired = s_retired; succ_epoch = s_succ_epoch; succ_finish = s_succ_finish;
        failed_over = true;
        s_epoch = 0; s_pause = 0; s_pause_epoch = 0; s_finish = 0;
        s_retired = false; s_succ_epoch = 0; s_succ_finish = false;
        invariants()
       }
    od
}
#endif

#ifdef CHECK_R5
/* R5 (liveness): once faults stop, the Run reaches a decision: a durable
 * pause, or a live worker holding the current epoch. Every step changes
 * the state monotonically (phases, started, handed_off only advance), so
 * the only infinite runs stutter in a terminal state: <>[] asks that every
 * run ends decided. No fairness is needed (see README.md). */
#define CUR_LIVE(i) (LIVE(i) && held[i] == epoch)
#define DECIDED (pause > 0 || finish > 0 || retired || CUR_LIVE(0) || CUR_LIVE(1) || CUR_LIVE(2) || CUR_LIVE(3))
ltl r5 { <> [] DECIDED }
#endif
