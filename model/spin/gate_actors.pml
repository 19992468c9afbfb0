/*
 * The actors around the handoff gate (gate.pml, SPEC §1): the system
 * baton-model explores (model/src/gate/system.rs), one process per
 * fairness class: K requesters, the worker, and env (every optional
 * move). Included by gate.pml after the table and the properties, whose
 * names, macros and inlines (FEED, say, tidy, PROP, the waiter queries)
 * it uses; not a model of its own.
 */

/* ---- The requesters: what each must keep doing (weakly fair, one
 * fairness class each, as baton-model's Fair(r)). Its optional moves
 * (reserve, drop a reservation or a PendingSeal) are in env. */

#define R _pid   /* requesters are pids 0..K-1 */

active [K] proctype requester() {
end:
    do
    :: d_step { /* ready() resolves: its Held pause, or gone */
        r_kind[R] == WAITING && READY_Q(r_tk[R]) != PENDING ->
        if
        :: READY_Q(r_tk[R]) == RESOLVED ->
            /* S7: ready yields only its own Held pause. */
            PROP(g_kind == HELD && g_tk == r_tk[R] && INTENT(g_x) == R,
                 "S7 own ticket only: ready yields its Held pause, boundary its committed pause");
            r_kind[R] = HOLDING; r_x[R] = g_x;
            printf("requester %d: ready() gives Held #%d, pause %d\n", R, r_tk[R], g_x)
        :: else ->
            printf("requester %d: ready() gives None (#%d released)\n", R, r_tk[R]);
            r_kind[R] = IDLE; r_tk[R] = 0
        fi
       }
    :: d_step { /* commit (a refused commit drops the HeldHandoff next) */
        r_kind[R] == HOLDING ->
        FEED(EV_COMMIT, r_tk[R], 0, canceled);
        if
        :: out == MOVED -> r_kind[R] = SEALING_R
        :: else -> r_kind[R] = RELEASING; r_x[R] = 0
        fi;
        printf("requester %d: commit #%d (canceled %d)", R, ev_t, canceled); say();
        tidy()
       }
    :: d_step { /* drop the HeldHandoff: Cancel(T) */
        r_kind[R] == HOLDING || r_kind[R] == RELEASING ->
        FEED(EV_CANCEL, r_tk[R], 0, 0);
        printf("requester %d: drops its HeldHandoff, Cancel(#%d)", R, r_tk[R]); say();
        REACHED(12, MOVED_TO(RUNNING));
        r_kind[R] = IDLE; r_tk[R] = 0; r_x[R] = 0;
        tidy()
       }
    :: d_step { /* wait() resolves: Some only in Sealed */
        r_kind[R] == SEALING_R && SEAL_Q(r_tk[R]) != PENDING ->
        if
        :: SEAL_Q(r_tk[R]) == RESOLVED ->
            /* S5: a seal is told only in Sealed{T, its pause}. */
            PROP(g_kind == SEALED && g_tk == r_tk[R] && g_x == r_x[R],
                 "S5 no forged seal: Sealed only from Committed by Seal(identical pause)");
            printf("requester %d: wait() gives Some(pause %d): sealed\n", R, g_x);
            REACHED(4, true);
            r_x[R] = 1
        :: else ->
            printf("requester %d: wait() gives None\n", R);
            REACHED(5, true);
            r_x[R] = 0
        fi;
        r_kind[R] = DONE_R; r_tk[R] = 0;
       
       }
    od
}

/* ---- The worker: weakly fair (baton-model's Fair(WORKER)). Its
 * optional moves (dropping its boundary future, a forged seal) are in
 * env. */

active proctype worker() {
end:
    do
    :: d_step { /* a step boundary: begin */
        w_kind == W_RUNNING && BEGIN_ACTS ->
        if
        :: g_kind == REQUESTED ->
            w_kind = W_PREFLIGHT; w_tk = g_tk; w_x = g_x;
            printf("worker: boundary observes #%d, intent %d: preflight\n", w_tk, w_x)
        :: else ->  /* Committed: a boundary begun after a lost one returns the pause */
            w_kind = W_SEALING; w_tk = 0; w_x = g_x;
            /* S7: a later boundary returns only the pause actually committed. */
            PROP(g_kind == COMMITTED && w_x == g_x,
                 "S7 own ticket only: ready yields its Held pause, boundary its committed pause");
            printf("worker: boundary finds Committed, pause %d\n", w_x);
            REACHED(7, true)
        fi
       }
    :: d_step { /* preflight prepares the requested pause */
        w_kind == W_PREFLIGHT ->
        tt = PREPARED(w_x);
        FEED(EV_PREFLIGHT, w_tk, tt, canceled);
        printf("worker: preflight Ok(pause %d) for #%d (canceled %d)", tt, w_tk, canceled); say();
        REACHED(10, MOVED_TO(RUNNING));
        if
        :: g_kind == HELD && g_tk == w_tk -> w_kind = W_AWAITING; w_x = tt
        :: else -> w_kind = W_RUNNING; w_tk = 0; w_x = 0
        fi;
        tidy()
       }
    :: d_step { /* preflight fails */
        w_kind == W_PREFLIGHT ->
        FEED(EV_PREFLIGHT, w_tk, NONE, canceled);
        printf("worker: preflight fails for #%d", w_tk); say();
        REACHED(8, MOVED_TO(RUNNING));
        w_kind = W_RUNNING; w_tk = 0; w_x = 0;
        tidy()
       }
    :: d_step { /* preflight prepares a pause for another intent */
        w_kind == W_PREFLIGHT ->
        if
        :: w_x < K -> tt = PREPARED(w_x + K)
        :: w_x >= K && w_x < 2 * K -> tt = PREPARED(w_x - K)
        :: else -> tt = PREPARED(w_x)
        fi;
        FEED(EV_PREFLIGHT, w_tk, tt, canceled);
        printf("worker: preflight prepares mismatched pause %d for #%d", tt, w_tk); say();
        REACHED(9, MOVED_TO(RUNNING));
        if
        :: g_kind == HELD && g_tk == w_tk -> w_kind = W_AWAITING; w_x = tt
        :: else -> w_kind = W_RUNNING; w_tk = 0; w_x = 0
        fi;
        tidy()
       }
    :: d_step { /* boundary resolves: the committed pause, or gone */
        w_kind == W_AWAITING && BOUNDARY_Q(w_tk) != PENDING ->
        if
        :: BOUNDARY_Q(w_tk) == RESOLVED ->
            /* S7: boundary yields only its own committed pause. */
            PROP(g_kind == COMMITTED && g_tk == w_tk && g_x == w_x,
                 "S7 own ticket only: ready yields its Held pause, boundary its committed pause");
            printf("worker: boundary gives Committed pause %d\n", g_x);
            w_kind = W_SEALING; w_tk = 0; w_x = g_x
        :: else ->
            printf("worker: boundary gives None\n");
            w_kind = W_RUNNING; w_tk = 0; w_x = 0
        fi
       }
    :: d_step { /* boundary sees the cancellation while held: Cancel(T) */
        w_kind == W_AWAITING && BOUNDARY_Q(w_tk) == PENDING && canceled ->
        FEED(EV_CANCEL, w_tk, 0, 0);
        printf("worker: boundary sees cancellation, Cancel(#%d)", w_tk); say();
        REACHED(13, MOVED_TO(RUNNING));
        if
        :: BOUNDARY_Q(w_tk) == RESOLVED -> w_kind = W_SEALING; w_tk = 0; w_x = g_x
        :: else -> w_kind = W_RUNNING; w_tk = 0; w_x = 0
        fi;
        tidy()
       }
    :: d_step { /* seals the committed pause */
        w_kind == W_SEALING ->
        FEED(EV_SEAL, 0, w_x, 0);
        printf("worker: seals pause %d", w_x); say();
        w_kind = W_DONE; w_x = 0;
        tidy()
       }
    :: d_step { /* exits without sealing: its gate drops, Close */
        w_kind == W_SEALING ->
        FEED(EV_CLOSE, 0, 0, 0);
        printf("worker: exits without sealing, Close"); say();
        w_kind = W_DONE; w_x = 0;
        tidy()
       }
    od
}

/* ---- Everything that may happen at any time, or never (baton-model's
 * Optional moves): reservations and drops, a dropped boundary future, a
 * forged seal, the closer, cancellation, bad input. One process, whose
 * bad-input moves are always enabled self-loops: SPIN's weak fairness
 * on it (pan -f) therefore forces nothing. */

/* Requester r's optional moves. */
#define ENV_REQUESTER(r) \
    :: d_step { /* reserve with its intent */ \
        r_kind[r] == IDLE && tries[r] > 0 -> \
        FEED(EV_RESERVE, 0, r, 0); \
        printf("requester %d: reserve(intent %d)", r, r); say(); \
        if \
        :: out == MOVED && TICKETED(g_kind) -> r_kind[r] = WAITING; r_tk[r] = g_tk; tries[r]-- \
        :: out == IGNORED || (out == MOVED && !TICKETED(g_kind)) || (out == REFUSED && rf == RF_BUSY) -> skip \
        :: else -> r_kind[r] = DONE_R; r_x[r] = 0   /* HandedOff, Closed: final */ \
        fi; \
        tidy() \
       } \
    :: d_step { /* drop the reservation or its ready() future: Cancel(T) */ \
        r_kind[r] == WAITING -> \
        FEED(EV_CANCEL, r_tk[r], 0, 0); \
        printf("requester %d: drops its reservation, Cancel(#%d)", r, r_tk[r]); say(); \
        REACHED(11, MOVED_TO(RUNNING)); \
        r_kind[r] = IDLE; r_tk[r] = 0; \
        tidy() \
       } \
    :: d_step { /* drop the PendingSeal: nothing */ \
        r_kind[r] == SEALING_R -> \
        printf("requester %d: drops its PendingSeal\n", r); \
        r_kind[r] = DONE_R; r_tk[r] = 0; r_x[r] = 0 \
       }

active proctype env() {
end:
    do
    ENV_REQUESTER(0)
#if K > 1
    ENV_REQUESTER(1)
#endif
#if K > 2
    ENV_REQUESTER(2)
#endif
    :: d_step { /* the worker's boundary future is dropped (or preflight panics): Cancel(T) */
        w_kind == W_PREFLIGHT || w_kind == W_AWAITING ->
        FEED(EV_CANCEL, w_tk, 0, 0);
        printf("worker: boundary future dropped, Cancel(#%d)", w_tk); say();
        REACHED(14, MOVED_TO(RUNNING));
        w_kind = W_RUNNING; w_tk = 0; w_x = 0;
        tidy()
       }
    :: d_step { /* the worker reports another pause as sealed */
        w_kind == W_SEALING ->
        FEED(EV_SEAL, 0, FORGED(w_x), 0);
        printf("worker: seals a forged pause %d", FORGED(w_x)); say();
        REACHED(16, out == IGNORED);
        tidy()
       }
    :: d_step { /* the closer closes the gate */
        closer ->
        FEED(EV_CLOSE, 0, 0, 0);
        printf("closer: Close"); say();
        closer = false;
        tidy()
       }
    :: d_step { /* cancellation fires */
        !canceled -> printf("cancellation fires\n");
        canceled = true
       }
    :: d_step { /* a malformed intent is reserved */
        FEED(EV_RESERVE, 0, 2 * K, 0);
        printf("bad input: reserve(malformed intent)"); say();
        tidy()
       }
    :: d_step { /* an intent for another root Run is reserved */
        FEED(EV_RESERVE, 0, 2 * K + 1, 0);
        printf("bad input: reserve(intent for another root Run)"); say();
        tidy()
       }
    od
}
