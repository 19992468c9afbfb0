//! A worker host: it reads the supervisor's orders on stdin and works each
//! Run in a task of its own, printing what it does on stdout. Its loop for
//! one Run: claim (or take the epoch the supervisor claimed), resume from
//! the Run's canonical state, work step by step with a boundary after each
//! step, and end with the log: append then seal a handoff, or finish.

use std::sync::Arc;

use baton::durable::{
    AsyncHandoffLog, Claim, Decision, Epoch, append_then_seal_async, finish_then_close_async,
    reconcile,
};
use baton::{CancelSignal, HandoffGate, HandoffIntent, HandoffPause, Invocation};
use tokio::task::JoinHandle;

use super::protocol::{Line, Order, Progress, RunId, STEP, STEPS_PER_RUN, after_step};
use super::{Failure, Log};

/// What the requester's side of a handoff ends with: the sealed pause.
type Sealed = JoinHandle<Result<Arc<HandoffPause<Progress>>, Failure>>;

/// Serves the orders on stdin, each Run in a task of its own, until stdin
/// closes: the supervisor is done with this host, or gone. Runs still in
/// progress then stop where they are, as if the host had died.
pub async fn serve(log: Arc<Log>, host: &str) -> Result<(), Failure> {
    let (sender, mut orders) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                return;
            }
        }
    });
    Line::new(host, "ready")
        .with("pid", std::process::id())
        .print();
    while let Some(text) = orders.recv().await {
        let order = Order::parse(&text).ok_or_else(|| format!("not an order: {text:?}"))?;
        tokio::spawn(work(Arc::clone(&log), host.to_owned(), order));
    }
    Ok(())
}

/// Works the Run of `order`; if the log refuses or fails, says `stopped`
/// (and why, on stderr): the supervisor decides what then.
async fn work(log: Arc<Log>, host: String, order: Order) {
    let run = order.run().clone();
    if let Err(error) = work_on(&log, &host, order).await {
        eprintln!("{host}: {run} stopped: {error}");
        Line::new(&host, "stopped").with("run", &run).print();
    }
}

/// One Run, from its claim to its handoff or its finish.
async fn work_on(log: &Log, host: &str, order: Order) -> Result<(), Failure> {
    let run = order.run().clone();
    let epoch = match order {
        // The supervisor claimed it, fencing the dead host's epoch.
        Order::Resume(_, epoch) => epoch,
        Order::Run(_) => match log.claim_async(&run.root, &run.to_string()).await? {
            Claim::Owner(epoch) => epoch,
            answer => {
                let fate = match answer {
                    Claim::HandedOff(_) => "handed-off",
                    Claim::Finished(_) => "finished",
                    Claim::Retired | Claim::Owner(_) => "retired",
                };
                Line::new(host, "final")
                    .with("run", &run)
                    .with("answer", fate)
                    .print();
                return Ok(()); // final: never resume it
            }
        },
    };
    let (from, mut total) = resume_point(log, &run).await?;
    Line::new(host, "working")
        .with("run", &run)
        .with("epoch", epoch)
        .with("from", from)
        .print();
    let gate = HandoffGate::new(invocation(&run), run.root.clone());
    let cancel = CancelSignal::new();
    let share_end = from + STEPS_PER_RUN;
    let mut sealed: Option<Sealed> = None;
    for step in from..share_end {
        Line::new(host, "step")
            .with("run", &run)
            .with("step", step)
            .print();
        tokio::time::sleep(STEP).await;
        total = after_step(total, step);
        let next = step + 1;
        if next == share_end && run.is_last() {
            let outcome = Progress::Done { steps: next, total };
            let receipt = finish_then_close_async(&gate, log, epoch, &outcome).await?;
            Line::new(host, "finished")
                .with("run", &run)
                .with("epoch", epoch)
                .with("total", total)
                .with("receipt", format!("{receipt:?}"))
                .print();
            return Ok(());
        }
        if next == share_end {
            // The host's share of the Run is done: it moves the Run on.
            sealed = Some(request_handoff(&gate, &run, host, epoch)?);
        }
        // A step boundary: a handoff asked for is paused here, with the
        // progress; with none asked for it answers at once.
        let paused = move |intent| async move {
            Some(HandoffPause::new(
                intent,
                Progress::Paused { step: next, total },
            ))
        };
        if let Some(pause) = gate.boundary(&cancel, paused).await? {
            let receipt = append_then_seal_async(&gate, log, epoch, &pause).await?;
            let sealed = sealed.take().ok_or("a handoff nobody asked for")?.await??;
            Line::new(host, "handed-off")
                .with("run", &run)
                .with("epoch", epoch)
                .with("to", &sealed.intent.successor_run_id)
                .with("step", next)
                .with("receipt", format!("{receipt:?}"))
                .print();
            return Ok(());
        }
    }
    Err(format!("{run}: its steps ended without a handoff").into())
}

/// Where `run` starts, from its canonical state: the chain's start, or the
/// progress its predecessor's durable pause carries (read, not claimed:
/// a read never fences anybody).
async fn resume_point(log: &Log, run: &RunId) -> Result<(u32, u64), Failure> {
    let Some(predecessor) = run.predecessor() else {
        return Ok((0, 0));
    };
    let facts = log.facts_async(&run.root, &predecessor.to_string()).await?;
    match reconcile(&facts)? {
        Decision::HandedOff(pause) if pause.intent.successor_run_id == run.to_string() => {
            match pause.execution {
                Progress::Paused { step, total } => Ok((step, total)),
                Progress::Done { .. } => {
                    Err(format!("{predecessor} paused with an outcome").into())
                }
            }
        }
        other => Err(format!("{predecessor} did not hand off to {run}: {other:?}").into()),
    }
}

/// The requester's side of a handoff, in a task of its own (the host's
/// scheduler): reserves the handoff of `run` to its successor, commits it
/// once the worker's boundary holds the pause, and waits for the seal.
fn request_handoff(
    gate: &HandoffGate<Progress>,
    run: &RunId,
    host: &str,
    epoch: Epoch,
) -> Result<Sealed, Failure> {
    let successor = run.successor();
    let intent = HandoffIntent {
        handoff_id: format!("{run}-handoff"),
        host_epoch: format!("{host}-{epoch}"),
        root_run_id: run.root.clone(),
        successor_run_id: successor.to_string(),
        successor_invocation_id: invocation(&successor).invocation_id,
        claim_id: format!("{run}-claim-{epoch}"),
    };
    let reservation = gate.requester().reserve(intent)?;
    Ok(tokio::spawn(async move {
        let pending = reservation.ready().await?.commit()?;
        Ok(pending.wait().await?)
    }))
}

/// The invocation that works `run`, as its predecessor's pause names it.
fn invocation(run: &RunId) -> Invocation {
    Invocation {
        session_id: "session".into(),
        turn_id: "turn".into(),
        run_id: run.to_string(),
        invocation_id: format!("{run}-invocation"),
    }
}
