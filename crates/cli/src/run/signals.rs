//! Ctrl-C and SIGTERM during a run: the first stops every stream (requests in flight
//! finish), the second puts back any qdisc the run changed and leaves at once.

use std::sync::atomic::{AtomicU8, Ordering};

use tsload_core::engine::{StopHandle, StopReason};

use crate::exit::{EXIT_INTERRUPTED, EXIT_TERMINATED};

/// The exit code of the signal that stopped a run (0: none did): 130 after SIGINT, 143
/// after SIGTERM. Set by [`watch`].
static INTERRUPTED_BY: AtomicU8 = AtomicU8::new(0);

/// The exit code for a run (or sweep) stopped by a signal: 128 + the signal's number, as
/// shells expect ([`EXIT_INTERRUPTED`] when no signal was seen).
pub fn interrupted_exit_code() -> u8 {
    match INTERRUPTED_BY.load(Ordering::Relaxed) {
        0 => EXIT_INTERRUPTED,
        code => code,
    }
}

/// Watches for the signals until aborted; the first stops every one of `handles`.
pub(super) fn watch(handles: Vec<StopHandle>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        // The exit code each signal earns.
        let first = tokio::select! {
            r = tokio::signal::ctrl_c() => r.is_ok().then_some(EXIT_INTERRUPTED),
            _ = terminated(&mut term) => Some(EXIT_TERMINATED),
        };
        let Some(code) = first else {
            return;
        };
        INTERRUPTED_BY.store(code, Ordering::Relaxed);
        errln!(
            "\ninterrupted: no new requests; finishing the ones in flight (Ctrl-C again to abort)"
        );
        for h in &handles {
            h.stop(StopReason::Interrupted);
        }
        let again = tokio::select! {
            r = tokio::signal::ctrl_c() => r.is_ok().then_some(EXIT_INTERRUPTED),
            _ = terminated(&mut term) => Some(EXIT_TERMINATED),
        };
        if let Some(code) = again {
            // Put back any qdisc this run changed before leaving.
            for (target, result) in tsload_netem::guard::restore_all().await {
                if let Err(e) = result {
                    errln!("error: restoring {target}: {e}");
                }
            }
            std::process::exit(i32::from(code));
        }
    })
}

/// The next SIGTERM (never, when its handler could not be installed).
async fn terminated(term: &mut Option<tokio::signal::unix::Signal>) {
    match term.as_mut() {
        Some(t) => {
            t.recv().await;
        }
        None => std::future::pending().await,
    }
}
