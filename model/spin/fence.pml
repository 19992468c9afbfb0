/*
 * The fenced handoff (SPEC §6) in Promela: a second engine for what
 * baton-model's fence section checks (issue 37). Written from the rule's
 * table in src/durable/fence.rs (claim_step, append_step) and the
 * worker's seal_step (src/durable/worker.rs), not from the Rust model.
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
 *
 * -DCHECK_R5 adds R5 as LTL (compile pan without -DSAFETY, run pan -a).
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

/* What the log answers an append. */
mtype = { Written, AlreadyDurable, Fenced, AlreadyHandedOff, EpochNotIssued };

/* The log. */
byte epoch = 0;        /* the Run's current epoch; 0: never claimed */
byte pause = 0;        /* 0: no pause; i+1: worker i's pause is durable */
byte pause_epoch = 0;  /* the epoch that pause was appended under */

/* The owner. */
bool handed_off = false;  /* a claim answered HandedOff */
byte started = 0;         /* workers started */

/* The workers. */
byte phase[MAXW];
byte held[MAXW];          /* the epoch its claim gave it */

hidden mtype ans;         /* scratch inside one d_step, not state */
hidden byte owns;         /* scratch: the claim answers Owner */
hidden byte susp;         /* scratch: a worker holding the current epoch lives */
hidden byte e;            /* scratch: the epoch the append carries */
hidden byte c;            /* scratch: the current epoch the rule sees */

#define LIVE(i)  (phase[i] == WORKING || phase[i] == COMMITTED || phase[i] == ACKED)
#define FAULTS   (started < N)   /* another claim may still follow */
#define ME       (_pid - 1)      /* the owner is pid 0, workers 1..N */

/* A property: on failure, name it (printed by spin -t) and fail. */
#define PROP(ok, name) \
    if \
    :: !(ok) -> printf("PROPERTY VIOLATED: "); printf(name); printf("\n"); assert(ok) \
    :: else -> skip \
    fi

/* R1: once worker w's pause is durable, no worker started after it
 * exists (no epoch issued after the pause, no older pause after a newer
 * epoch). Worker j is started after w iff j >= pause (= w + 1). */
#define LATER_IDLE(j) (j < pause || phase[j] == IDLE)
#define R1_OK (pause == 0 || (LATER_IDLE(1) && LATER_IDLE(2) && LATER_IDLE(3)))
/* R4: a sealed worker's pause is durable, under its epoch. */
#define SEALED_OK(i) (phase[i] != SEALED || (pause == i + 1 && pause_epoch == held[i]))
#define R4_OK (SEALED_OK(0) && SEALED_OK(1) && SEALED_OK(2) && SEALED_OK(3))

inline invariants() {
    PROP(R1_OK, "R1 a Run handed off is never continued by a resumed worker");
    PROP(R4_OK, "R4 a sealed worker's pause is durable");
}

/* The table's append column, for worker w holding epoch held[w]. */
inline log_append(w) {
#ifdef BROKEN_NO_FENCE
    c = (epoch > 0 -> epoch : 1);   /* asked as if it held the current epoch */
    e = c;
#else
    c = epoch;
    e = held[w];
#endif
    if
    :: e == 0 || e > c -> ans = EpochNotIssued
#ifdef BROKEN_FENCE_OFF_BY_ONE
    :: e <= c -> ans = Fenced       /* fences the current epoch too */
#else
    :: e < c -> ans = Fenced
#endif
    :: else ->
        if
        :: pause == 0 ->
            /* R6: only the current epoch appends, once; R7: never a fenced worker. */
            PROP(held[w] == epoch, "R6 only the current epoch appends");
            PROP(held[w] == epoch, "R7 a fenced worker never appends");
            pause = w + 1; pause_epoch = e; ans = Written
        :: pause == w + 1 && pause_epoch == e -> ans = AlreadyDurable  /* identical row */
        :: else -> ans = AlreadyHandedOff   /* another pause is durable: refused */
        fi
    fi
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

inline seal(w) {
    PROP(pause == w + 1 && pause_epoch == held[w],
         "R2 a seal implies the pause is durable under the worker's epoch");
    PROP(held[w] == epoch, "R7 a fenced worker never seals");
    phase[w] = SEALED
}

active proctype owner() {
end:
    do
    :: d_step {
        !handed_off && started < N ->
        susp = (started > 0 && LIVE(started - 1) && held[started - 1] == epoch);
        /* The table's claim column (a wrong suspicion is a claim while
         * LIVE(worker holding epoch): nothing here forbids it). */
#ifdef BROKEN_CLAIM_RESUMES
        owns = true;                   /* always answers Owner */
#else
        owns = (pause == 0);           /* Owner iff no pause is durable */
#endif
        if
        :: owns ->
            PROP(pause == 0, "R3 a claim answers HandedOff exactly when a pause is durable");
#if defined(BROKEN_BY_READING)
            held[started] = epoch + 1;  /* reads, writes no epoch */
#elif defined(BROKEN_NO_ADVANCE)
            if :: epoch == 0 -> epoch = 1 :: else -> skip fi;
            held[started] = epoch;      /* reissues the current epoch */
#else
            epoch = epoch + 1;          /* every older epoch is fenced */
            held[started] = epoch;
#endif
            printf("owner claims (wrong suspicion: %d): Owner(epoch %d), starts worker %d\n",
                   susp, held[started], started);
            phase[started] = WORKING;
            started = started + 1
        :: else ->
            PROP(pause > 0, "R3 a claim answers HandedOff exactly when a pause is durable");
            printf("owner claims: HandedOff (worker %d's pause is durable), writes nothing\n", pause - 1);
            handed_off = true          /* writes nothing */
        fi;
        owns = 0; susp = 0;
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

#ifdef CHECK_R5
/* R5 (liveness): once faults stop, the Run reaches a decision: a durable
 * pause, or a live worker holding the current epoch. Every step changes
 * the state monotonically (phases, started, handed_off only advance), so
 * the only infinite runs stutter in a terminal state: <>[] asks that every
 * run ends decided. No fairness is needed (see README.md). */
#define CUR_LIVE(i) (LIVE(i) && held[i] == epoch)
#define DECIDED (pause > 0 || CUR_LIVE(0) || CUR_LIVE(1) || CUR_LIVE(2) || CUR_LIVE(3))
ltl r5 { <> [] DECIDED }
#endif
