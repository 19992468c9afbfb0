/*
 * The handoff gate (SPEC §1) in Promela: a second engine for what
 * baton-model's gate section checks (issue 37). The table (gate_step) is
 * written from SPEC §1's transition table and waiter queries and from the
 * real core's pure functions in src/gate/core.rs (step, reserve_next)
 * and src/gate/core/wait.rs (ready, boundary, seal, begin), not from the
 * Rust model's code. The actors around it are the system baton-model explores (SPEC §1's adapter
 * and its cancel-safety table): K requesters with TRIES reservations
 * each, the worker, a closer, cancellation and a sender of bad input.
 *
 * The actors are in gate_actors.pml, included after the table and the
 * properties: this file is the gate and what it must keep, that one the
 * system that drives it (the README's two halves, baton-model's props.rs
 * and system.rs).
 *
 * Every action is one d_step from the head of a process's loop, and every
 * scratch variable is hidden, so a stored state is exactly the abstract
 * state: the gate, the cancel bit, the closer, the worker's program
 * counter and each requester's (with the ghosts baton-model keeps). The
 * reachable states and transitions are baton-model's, exactly (README.md).
 *
 *   spin -a [-DK=1] [-DTRIES=1] [-DNO_CLOSER] [-DCOVER] [-DBROKEN_...] gate.pml
 *   gcc -O1 -o pan pan.c
 *   ./pan -N never_0      # S1-S9, L1's safety part, terminal: assertions in
 *                         # every step, the never claim in every state
 *   ./pan -a -f -N L2     # L1, L2, L3: LTL under weak fairness
 *
 * Facts are indices, as baton-model's table of facts: intent r < K is
 * requester r's, intent K + r differs from it only in its claim (a
 * mismatched preflight prepares it), intent 2K is malformed and 2K + 1
 * names another root Run (both bad input). Pause 2i + x answers intent i
 * with payload x (0: the one prepared, 1: a forgery).
 *
 * Broken variants (each must be caught; baton-model's a-e and the blind
 * boundary of model/tests/gate_variants.rs):
 *   BROKEN_CANCEL_IGNORES_TICKET        (a) a stale Cancel releases the live ticket   -> S2
 *   BROKEN_CLOSE_OVERRIDES_SEALED       (b) Close moves Sealed to Closed               -> S6
 *   BROKEN_COMMIT_IGNORES_CANCEL        (c) Commit commits with the cancel bit set     -> S3
 *   BROKEN_FAILED_PREFLIGHT_REREQUESTS  (d) a failed preflight stays Requested         -> L2 (a livelock)
 *   BROKEN_SEAL_ACCEPTS_ANY_PAUSE       (e) Seal(other pause) seals that pause         -> S5 (and S4)
 *   BROKEN_BEGIN_BLIND_TO_COMMIT        (f) a boundary begun in Committed sees nothing -> L3 (without the closer)
 */

#ifndef K
#define K 1          /* requesters (1..3) */
#endif
#ifndef TRIES
#define TRIES 1      /* successful reservations each requester may make (1..2) */
#endif
#ifdef NO_CLOSER
#define CLOSER 0
#else
#define CLOSER 1
#endif

/* The gate's state kinds. */
#define RUNNING   0
#define REQUESTED 1
#define HELD      2
#define COMMITTED 3
#define SEALED    4
#define CLOSED    5

/* A requester's program counter (baton-model's Phase). */
#define IDLE      0  /* may reserve while tries are left */
#define WAITING   1  /* holds a reservation, in ready() */
#define HOLDING   2  /* holds a HeldHandoff; ghost: the pause ready() gave it */
#define RELEASING 3  /* its commit was refused; dropping the HeldHandoff */
#define SEALING_R 4  /* committed, in wait(); ghost: the pause it committed */
#define DONE_R    5  /* finished; ghost: whether wait() gave it the seal */

/* The worker's program counter. */
#define W_RUNNING   0  /* running steps; at each boundary it looks (begin) */
#define W_PREFLIGHT 1  /* observed ticket and intent; preflight runs */
#define W_AWAITING  2  /* its pause is held, boundary waits; ghost: its pause */
#define W_SEALING   3  /* boundary returned the committed pause */
#define W_DONE      4  /* sealed or exited */

/* Events, outcomes, refusals, waiter answers. */
#define EV_RESERVE   1
#define EV_PREFLIGHT 2
#define EV_CANCEL    3
#define EV_COMMIT    4
#define EV_SEAL      5
#define EV_CLOSE     6
#define MOVED   1
#define IGNORED 2
#define REFUSED 3
#define RF_INVALID   1
#define RF_BUSY      2
#define RF_HANDEDOFF 3
#define RF_CLOSED    4
#define RF_NOTHELD   5
#define RF_CANCELED  6
#define PENDING  0
#define RESOLVED 1
#define GONE     2
#define NONE 255     /* no pause: a failed preflight */

#define PREPARED(i) (2 * (i))   /* the pause prepared for intent i */
#define FORGED(p)   ((p) ^ 1)   /* the same intent, another payload */
#define INTENT(p)   ((p) / 2)   /* the intent a pause answers */

/* The gate: its kind, its ticket (Running: the next one) and its intent
 * (Requested) or pause (Held, Committed, Sealed); unused fields are 0. */
byte g_kind = RUNNING;
byte g_tk = 0;
byte g_x = 0;
bool canceled = false;   /* the cancellation bit (one-way) */
bool closer = CLOSER;    /* the closer has not closed yet */
/* The worker: program counter, ticket, intent (Preflight) or pause. */
byte w_kind = W_RUNNING;
byte w_tk = 0;
byte w_x = 0;
/* The requesters: program counter, ticket, pause (Holding, Sealing) or
 * the sealed ghost (Done), tries left. */
byte r_kind[K];
byte r_tk[K];
byte r_x[K];
byte tries[K] = TRIES;

/* Scratch, inside one d_step only: not part of the state. */
hidden byte ev;          /* the event fed to gate_step ... */
hidden byte ev_t;        /* ... its ticket ... */
hidden byte ev_x;        /* ... its intent (Reserve) or pause (Preflight, Seal; NONE) ... */
hidden byte ev_c;        /* ... its cancel bit */
hidden byte out;         /* what gate_step answered */
hidden byte rf;          /* the refusal, if REFUSED */
hidden byte a_kind;      /* the gate before the event */
hidden byte a_tk;
hidden byte a_x;
hidden byte tt;          /* a ticket or pause */
hidden byte cc;          /* the cancel bit Commit decides on */

/* A property: on failure, name it (printed by spin -t) and fail. */
#define PROP(ok, name) \
    if \
    :: !(ok) -> printf("PROPERTY VIOLATED: "); printf(name); printf("\n"); assert(ok) \
    :: else -> skip \
    fi

/* Coverage (-DCOVER): each situation baton-model's coverage.rs asks to be
 * reached (so that no property holds vacuously) prints its name once,
 * from pan, the first time the search takes it. C code outside the state:
 * it changes neither the states nor the transitions. (spin -t cannot
 * run c_code, so trails come from builds without -DCOVER.) */
#ifdef COVER
c_code {
    static const char *gate_situation[] = {
        "reached: Held",
        "reached: Committed",
        "reached: Sealed",
        "reached: Closed",
        "reached: a requester is told its handoff is sealed",
        "reached: a committed requester is told the gate closed",
        "reached: a second reservation after a release",
        "reached: a boundary after a lost committed boundary returns the committed pause",
        "released: preflight failed",
        "released: preflight prepared a mismatched pause",
        "released: canceled before preflight finished",
        "released: reservation dropped",
        "released: held handoff dropped",
        "released: cancellation while held",
        "released: boundary future dropped",
        "ignored: a stale ticket",
        "ignored: a forged seal",
        "refused: Busy",
        "refused: HandedOff",
        "refused: Closed",
        "refused: commit while canceled",
        "refused: commit after release",
        "refused: bad input",
    };
    static int gate_seen[sizeof gate_situation / sizeof gate_situation[0]];
    static void gate_cover(int n) {
        if (!gate_seen[n]) { gate_seen[n] = 1; printf("COVERED %s\n", gate_situation[n]); }
    }
}
#define REACHED(n, cond) if :: (cond) -> c_code { gate_cover(n); } :: else -> skip fi
#else
#define REACHED(n, cond) skip
#endif
#define MOVED_TO(k) (out == MOVED && g_kind == (k))

/* ---- The waiter queries (SPEC §1, core::ready, boundary, seal, begin). */

/* ready() for ticket t: pending while Requested{t}, the pause in Held{t}. */
#define READY_Q(t)    ((g_kind == REQUESTED && g_tk == (t)) -> PENDING : \
                       ((g_kind == HELD && g_tk == (t)) -> RESOLVED : GONE))
/* boundary for ticket t: pending while Held{t}, the pause in Committed{t}. */
#define BOUNDARY_Q(t) ((g_kind == HELD && g_tk == (t)) -> PENDING : \
                       ((g_kind == COMMITTED && g_tk == (t)) -> RESOLVED : GONE))
/* wait() for ticket t: pending while Committed{t}, the pause only in Sealed{t}. */
#define SEAL_Q(t)     ((g_kind == COMMITTED && g_tk == (t)) -> PENDING : \
                       ((g_kind == SEALED && g_tk == (t)) -> RESOLVED : GONE))
/* begin: what a worker reaching a step boundary finds to do. */
#ifdef BROKEN_BEGIN_BLIND_TO_COMMIT
#define BEGIN_ACTS (g_kind == REQUESTED)   /* (f) Committed: nothing */
#else
#define BEGIN_ACTS (g_kind == REQUESTED || g_kind == COMMITTED)
#endif

#define LIVE(k)     ((k) == REQUESTED || (k) == HELD)          /* a live ticket */
#define TICKETED(k) ((k) != RUNNING && (k) != CLOSED)          /* State::ticket() is Some */
#define TERMINAL(k) ((k) == SEALED || (k) == CLOSED)
/* Requester r holds reservation t (waiting, holding or releasing). */
#define HOLDS(r, t) ((r_kind[r] == WAITING || r_kind[r] == HOLDING || r_kind[r] == RELEASING) \
                     && r_tk[r] == (t))

#define SAME_GATE (g_kind == a_kind && g_tk == a_tk && g_x == a_x)        /* the gate did not change */
#define EV_HAS_TICKET (ev == EV_PREFLIGHT || ev == EV_CANCEL || ev == EV_COMMIT)

/* ---- The transition table: step(state, event) (SPEC §1, core::step). */

inline gate_step() {
    a_kind = g_kind; a_tk = g_tk; a_x = g_x;
    rf = 0;
    if
    :: ev == EV_RESERVE ->
        if
        :: ev_x >= 2 * K -> out = REFUSED; rf = RF_INVALID   /* validate_for: S9 */
        :: else ->
            if
            :: a_kind == RUNNING ->                  /* a new ticket: the next one */
                out = MOVED; g_kind = REQUESTED; g_tk = a_tk; g_x = ev_x
            :: a_kind == REQUESTED || a_kind == HELD -> out = REFUSED; rf = RF_BUSY
            :: a_kind == COMMITTED || a_kind == SEALED -> out = REFUSED; rf = RF_HANDEDOFF
            :: a_kind == CLOSED -> out = REFUSED; rf = RF_CLOSED
            fi
        fi
    :: ev == EV_PREFLIGHT ->
        if
        :: a_kind == REQUESTED && a_tk == ev_t ->
            if
            :: ev_x != NONE && !ev_c && INTENT(ev_x) == a_x ->
                out = MOVED; g_kind = HELD; g_x = ev_x
#ifdef BROKEN_FAILED_PREFLIGHT_REREQUESTS
            :: ev_x == NONE -> out = MOVED          /* (d) "moves" to the same Requested */
#endif
            :: else ->                              /* failed, mismatched or canceled: released */
                out = MOVED; g_kind = RUNNING; g_tk = ev_t + 1; g_x = 0
            fi
        :: else -> out = IGNORED
        fi
    :: ev == EV_CANCEL ->
        tt = ev_t;
#ifdef BROKEN_CANCEL_IGNORES_TICKET
        if :: LIVE(a_kind) -> tt = a_tk :: else -> skip fi;   /* (a) any ticket releases the live one */
#endif
        if
        :: LIVE(a_kind) && a_tk == tt -> out = MOVED; g_kind = RUNNING; g_tk = tt + 1; g_x = 0
        :: else -> out = IGNORED
        fi
    :: ev == EV_COMMIT ->
        cc = ev_c;
#ifdef BROKEN_COMMIT_IGNORES_CANCEL
        cc = false;                                 /* (c) */
#endif
        if
        :: a_kind == HELD && a_tk == ev_t && cc -> out = REFUSED; rf = RF_CANCELED
        :: a_kind == HELD && a_tk == ev_t && !cc -> out = MOVED; g_kind = COMMITTED
        :: else -> out = REFUSED; rf = RF_NOTHELD
        fi
    :: ev == EV_SEAL ->
        if
        :: a_kind == COMMITTED && a_x == ev_x -> out = MOVED; g_kind = SEALED
#ifdef BROKEN_SEAL_ACCEPTS_ANY_PAUSE
        :: a_kind == COMMITTED && a_x != ev_x -> out = MOVED; g_kind = SEALED; g_x = ev_x   /* (e) */
#endif
        :: else -> out = IGNORED
        fi
    :: ev == EV_CLOSE ->
        if
#ifdef BROKEN_CLOSE_OVERRIDES_SEALED
        :: a_kind == SEALED -> out = MOVED; g_kind = CLOSED; g_tk = 0; g_x = 0   /* (b) */
        :: a_kind == CLOSED -> out = IGNORED
#else
        :: TERMINAL(a_kind) -> out = IGNORED
#endif
        :: else -> out = MOVED; g_kind = CLOSED; g_tk = 0; g_x = 0
        fi
    fi;
    transition_props();
    REACHED(0, MOVED_TO(HELD));
    REACHED(1, MOVED_TO(COMMITTED));
    REACHED(2, MOVED_TO(SEALED));
    REACHED(3, MOVED_TO(CLOSED));
    REACHED(6, ev == EV_RESERVE && out == MOVED && TICKETED(g_kind) && g_tk > 0);
    REACHED(15, EV_HAS_TICKET && TICKETED(a_kind) && a_tk != ev_t && out != MOVED);
    REACHED(17, out == REFUSED && rf == RF_BUSY);
    REACHED(18, out == REFUSED && rf == RF_HANDEDOFF);
    REACHED(19, out == REFUSED && rf == RF_CLOSED);
    REACHED(20, out == REFUSED && rf == RF_CANCELED);
    REACHED(21, out == REFUSED && rf == RF_NOTHELD);
    REACHED(22, out == REFUSED && rf == RF_INVALID)
}

/* ---- Properties of a transition of the gate (props.rs's step checks). */

inline transition_props() {
    /* S1: a reserve succeeds only from Running, with the next ticket; a
     * release moves to Running past the released ticket. */
    PROP(!(g_kind == REQUESTED && !SAME_GATE) ||
         (a_kind == RUNNING && g_tk == a_tk && ev == EV_RESERVE && ev_x == g_x),
         "S1 one at a time: reserve only from Running, with a fresh ticket");
    PROP(!(g_kind == RUNNING) || (a_kind == RUNNING && g_tk == a_tk) ||
         (a_kind != RUNNING && TICKETED(a_kind) && g_tk > a_tk),
         "S1 one at a time: reserve only from Running, with a fresh ticket");
    /* S2: an event whose ticket is not the state's changes nothing. */
    PROP(!(EV_HAS_TICKET && !(TICKETED(a_kind) && a_tk == ev_t)) || SAME_GATE,
         "S2 stale tickets are inert");
    /* S3: Committed is entered only from Held{T} by Commit(T), cancel clear. */
    PROP(!(g_kind == COMMITTED && a_kind != COMMITTED) ||
         (a_kind == HELD && ev == EV_COMMIT && ev_t == a_tk && !ev_c && g_tk == a_tk && g_x == a_x),
         "S3 commit is earned: only Held{T} + Commit(T) with the cancel bit clear");
    /* S4: after Committed only Sealed (same ticket, pause) or Closed. */
    PROP(a_kind != COMMITTED || SAME_GATE || g_kind == CLOSED ||
         (g_kind == SEALED && g_tk == a_tk && g_x == a_x),
         "S4 no way back: after Committed only Sealed or Closed");
    /* S5: Sealed is entered only from Committed by Seal(the identical pause). */
    PROP(!(g_kind == SEALED && a_kind != SEALED) ||
         (a_kind == COMMITTED && ev == EV_SEAL && ev_x == a_x && g_tk == a_tk && g_x == a_x),
         "S5 no forged seal: Sealed only from Committed by Seal(identical pause)");
    /* S6: Sealed and Closed absorb every event. */
    PROP(!TERMINAL(a_kind) || SAME_GATE,
         "S6 terminal is terminal: Sealed and Closed absorb every event");
    /* S8: a release (Cancel(T), or Preflight(T) failed, mismatched or
     * canceled) of the live T moves to Running or nowhere. */
    PROP(!(LIVE(a_kind) && a_tk == ev_t &&
           (ev == EV_CANCEL ||
            (ev == EV_PREFLIGHT && (ev_c || !(a_kind == REQUESTED && ev_x != NONE && INTENT(ev_x) == a_x))))) ||
         SAME_GATE || g_kind == RUNNING,
         "S8 release leaves no fact: a failed preflight or a cancel moves to Running or nowhere");
    /* S9: bad input is refused as such and changes nothing (the actor
     * that sends it changes nothing else). */
    PROP(!(ev == EV_RESERVE && ev_x >= 2 * K) || (out == REFUSED && rf == RF_INVALID && SAME_GATE),
         "S9 bad input changes nothing")
}

/* ---- Properties of every state (props.rs's always checks), as
 * expressions over the requesters, checked by the never claim at the end
 * (in every reachable state, before each step). */

#if K == 1
#define ALL(P) (P(0))
#define SUM(P) (P(0))
#elif K == 2
#define ALL(P) (P(0) && P(1))
#define SUM(P) (P(0) + P(1))
#else
#define ALL(P) (P(0) && P(1) && P(2))
#define SUM(P) (P(0) + P(1) + P(2))
#endif

/* S1: a live ticket has exactly one holder; one handoff at most. */
#define HOLDS_LIVE(r) (HOLDS(r, g_tk) -> 1 : 0)
#define HANDOFF(r)    ((r_kind[r] == SEALING_R || (r_kind[r] == DONE_R && r_x[r])) -> 1 : 0)
#define S1_OK ((!LIVE(g_kind) || SUM(HOLDS_LIVE) == 1) && SUM(HANDOFF) <= 1)
/* S4: a committed party only sees its Committed, Sealed or Closed. */
#define S4_REQ(r) (r_kind[r] != SEALING_R || g_kind == CLOSED || \
                   ((g_kind == COMMITTED || g_kind == SEALED) && g_tk == r_tk[r] && g_x == r_x[r]))
#define S4_OK (ALL(S4_REQ) && (w_kind != W_SEALING || g_kind == CLOSED || \
                               ((g_kind == COMMITTED || g_kind == SEALED) && g_x == w_x)))
/* S5: a sealed pause is a prepared one; a seal is told only in Sealed. */
#define S5_TOLD(r) (!(r_kind[r] == DONE_R && r_x[r]) || g_kind == SEALED)
#define S5_OK ((g_kind != SEALED || g_x == PREPARED(INTENT(g_x))) && ALL(S5_TOLD))
/* S7: a held or committed pause answers its holder's own intent. */
#define S7_REQ(r) (!(r_kind[r] == HOLDING || r_kind[r] == SEALING_R) || INTENT(r_x[r]) == r)
#define S7_GATE(r) (!(g_kind == HELD && HOLDS(r, g_tk)) || INTENT(g_x) == r)
#define S7_OK (ALL(S7_REQ) && ALL(S7_GATE))
/* L1 (its safety part): Closed leaves no waiter pending. */
#define L1_REQ(r) (!((r_kind[r] == WAITING && READY_Q(r_tk[r]) == PENDING) || \
                     (r_kind[r] == SEALING_R && SEAL_Q(r_tk[r]) == PENDING)))
#define L1_OK (g_kind != CLOSED || (ALL(L1_REQ) && \
                                    !(w_kind == W_AWAITING && BOUNDARY_Q(w_tk) == PENDING)))
/* terminal: when nothing can change (every move left is a self-loop:
 * bad input, a Busy reserve, an ignored forged seal), nothing is left
 * pending. */
#define REQ_STILL(r) (!((r_kind[r] == IDLE && tries[r] > 0 && !LIVE(g_kind)) || \
                        r_kind[r] == WAITING || r_kind[r] == HOLDING || \
                        r_kind[r] == RELEASING || r_kind[r] == SEALING_R))
#define WORKER_STILL (!((w_kind == W_RUNNING && BEGIN_ACTS) || w_kind == W_PREFLIGHT || \
                        w_kind == W_AWAITING || w_kind == W_SEALING))
#define FROZEN (ALL(REQ_STILL) && WORKER_STILL && !closer && canceled)
#define REQ_RESTS(r) (r_kind[r] == IDLE || r_kind[r] == DONE_R)
#define TERMINAL_OK (!FROZEN || (ALL(REQ_RESTS) && (w_kind == W_RUNNING || w_kind == W_DONE) && \
                                 (g_kind == RUNNING || g_kind == SEALED || g_kind == CLOSED)))

#define INVARIANTS (S1_OK && S4_OK && S5_OK && S7_OK && L1_OK && TERMINAL_OK)

/* Scratch back to 0 after each action (hidden, so only for tidy trails). */
inline tidy() {
    ev = 0; ev_t = 0; ev_x = 0; ev_c = 0; out = 0; rf = 0;
    a_kind = 0; a_tk = 0; a_x = 0; tt = 0; cc = 0
}

#define FEED(e, t, x, c) ev = e; ev_t = t; ev_x = x; ev_c = c; gate_step()

inline say_gate() {
    if
    :: g_kind == RUNNING -> printf("Running{next #%d}", g_tk)
    :: g_kind == REQUESTED -> printf("Requested{#%d, intent %d}", g_tk, g_x)
    :: g_kind == HELD -> printf("Held{#%d, pause %d}", g_tk, g_x)
    :: g_kind == COMMITTED -> printf("Committed{#%d, pause %d}", g_tk, g_x)
    :: g_kind == SEALED -> printf("Sealed{#%d, pause %d}", g_tk, g_x)
    :: g_kind == CLOSED -> printf("Closed")
    fi
}

inline say() {
    printf(" -> "); say_gate();
    if
    :: out == IGNORED -> printf(" (ignored)")
    :: out == REFUSED ->
        if
        :: rf == RF_INVALID -> printf(" (refused: InvalidInput)")
        :: rf == RF_BUSY -> printf(" (refused: Busy)")
        :: rf == RF_HANDEDOFF -> printf(" (refused: HandedOff)")
        :: rf == RF_CLOSED -> printf(" (refused: Closed)")
        :: rf == RF_NOTHELD -> printf(" (refused: NotHeld)")
        :: rf == RF_CANCELED -> printf(" (refused: Canceled)")
        fi
    :: else -> skip
    fi;
    printf("\n")
}

/* ---- The actors: K requesters, the worker and env (gate_actors.pml). */

#include "gate_actors.pml"

/* ---- The state properties, in every reachable state: a never claim
 * that only looks (it moves once before each step of the system, so the
 * product has exactly the system's states and transitions). SPIN calls
 * it never_0: pan -N never_0 (pan's default), and spin -t replays with it.
 * The LTL claims below are pan -a -f -N L1 (L2, L3); -DLTL=n keeps only
 * Ln, so that spin -t replays its trail (SPIN 6.5's spin -t uses the
 * first claim). */
#ifndef LTL
never {
    do
    :: INVARIANTS
    :: atomic {   /* atomic: named in this very state, before the system moves on */
        !INVARIANTS ->
        PROP(S1_OK, "S1 one at a time: a live ticket has one holder; one handoff at most");
        PROP(S4_OK, "S4 no way back: a committed party only sees Committed, Sealed or Closed");
        PROP(S5_OK, "S5 no forged seal: a sealed pause is a prepared one; a seal is only told when Sealed");
        PROP(S7_OK, "S7 own pause only: a held or committed pause answers its holder's intent");
        PROP(L1_OK, "L1 the worker's exit ends every wait: Closed leaves no waiter pending");
        PROP(TERMINAL_OK, "terminal: nothing left pending when nothing can change")
       }
    od
}
#endif

/* ---- L1-L3 (liveness): no weakly fair run keeps an obligation forever
 * (pan -a -f -N L1, L2, L3: acceptance cycles under weak fairness). */

/* L1: every waiter resolves. */
#define WAITS(r)   (r_kind[r] == WAITING || r_kind[r] == SEALING_R)
/* L2: a reservation is eventually held, released or closed. */
#define PENDS(r)   (r_kind[r] == WAITING && g_kind == REQUESTED && g_tk == r_tk[r])   /* ready() pending */
#if K == 1
#define L1_REQS ([]<> !WAITS(0))
#define L2_REQS ([]<> !PENDS(0))
#elif K == 2
#define L1_REQS ([]<> !WAITS(0) && []<> !WAITS(1))
#define L2_REQS ([]<> !PENDS(0) && []<> !PENDS(1))
#else
#define L1_REQS ([]<> !WAITS(0) && []<> !WAITS(1) && []<> !WAITS(2))
#define L2_REQS ([]<> !PENDS(0) && []<> !PENDS(1) && []<> !PENDS(2))
#endif
#if !defined(LTL) || LTL == 1
ltl L1 { L1_REQS && []<> !(w_kind == W_AWAITING) }
#endif
#if !defined(LTL) || LTL == 2
ltl L2 { L2_REQS }
#endif
#if !defined(LTL) || LTL == 3
ltl L3 { []<> !(g_kind == COMMITTED) }
#endif
