//! Giving a holding back: it is marked released before its node is deleted
//! (so the deletion is never told as a loss), the delete is awaited no longer
//! than a bound, and the answer says whether the lock was held until then.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::state::{HoldState, LockStatus};
use super::Holding;
use crate::error::{Error, Result};
use crate::locks::stats::LossCause;

impl Holding {
    /// Sets how long the release waits for its delete (every member's, for a
    /// multi-lock) before handing it to the background; see
    /// [`Holding::release_node`].
    pub(crate) fn set_release_bound(&self, bound: Duration) {
        let ms = u64::try_from(bound.as_millis()).unwrap_or(u64::MAX).max(1);
        for l in self.leaves() {
            l.release_bound_ms.store(ms, Ordering::Relaxed);
        }
    }

    /// Cuts the release's wait for its deletes so that it ends by `end` (a
    /// caller's deadline plus a request's grace: a multi-lock giving back its
    /// members at its deadline); the deletes go on in the background.
    pub(crate) fn limit_release_to(&self, end: Instant) {
        let left = end.saturating_duration_since(Instant::now());
        for l in self.leaves() {
            let ms = u64::try_from(l.release_bound().min(left).as_millis())
                .unwrap_or(u64::MAX)
                .max(1);
            l.release_bound_ms.store(ms, Ordering::Relaxed);
        }
    }

    /// Releases a single holding: marks it released, then deletes its node
    /// (and companion), waiting for the delete no longer than the release
    /// bound ([`HoldState::release_bound`]); a delete not answered by then,
    /// or that could not be sent, goes on in the background (the guaranteed
    /// delete), and the session's end removes the node anyway. A lost
    /// holding's nodes (protected names: ours alone) are deleted in the
    /// background.
    ///
    /// The result says whether the lock was held until the release began:
    /// [`Error::LockLost`] when it had been lost, or when the delete found our
    /// node gone (someone deleted it first, even if the holding had not heard
    /// of it yet: the lock may have been another's meanwhile); `Ok` when it
    /// was held then (or the delete found our node still there);
    /// [`Error::LockUncertain`] when it was uncertain and the delete could not
    /// tell.
    pub(crate) fn release_node(self) -> Result<()> {
        let Some(s) = self.one() else {
            return Err(Error::InvalidArgument("not a single holding".into()));
        };
        let s = s.clone();
        let held_at_start = s.status() == LockStatus::Held;
        let client = &s.client;
        let bound = s.release_bound();
        let lost = s.mark_released();
        let nodes: Vec<&str> = std::iter::once(s.node.as_str()).chain(s.companion.as_deref()).collect();
        let to_background = |n: &str| {
            if let Err(e) = client.recipe().delete_in_background(n) {
                log::warn!("cannot hand the delete of {n} to the background: {e}");
            }
        };
        let lost_error = || Error::LockLost { path: s.base.clone() };
        if lost {
            nodes.iter().for_each(|n| to_background(n));
            return Err(lost_error());
        }
        // The deletes go out together without waiting (one round trip for a
        // node and its companion); their replies are awaited until the bound.
        let (tx, rx) = crossbeam_channel::bounded(nodes.len());
        let mut outcomes: Vec<Option<zk_framework::Result<()>>> = Vec::with_capacity(nodes.len());
        for (i, n) in nodes.iter().enumerate() {
            let tx = tx.clone();
            let sent = if client.recipe().session_generation() == s.generation {
                client.recipe().delete_detached(n, None, move |r| {
                    let _ = tx.try_send((i, r));
                })
            } else {
                Err(zk_framework::Error::SessionExpired)
            };
            outcomes.push(sent.err().map(Err));
        }
        drop(tx);
        // (A multi-lock giving back its members at its deadline cut the
        // bound to what is left of the deadline's grace: `limit_release_to`.)
        let end = Instant::now().checked_add(bound);
        while outcomes.iter().any(Option::is_none) {
            let left = end.map_or(Duration::MAX, |e| e.saturating_duration_since(Instant::now()));
            match rx.recv_timeout(left) {
                Ok((i, r)) => outcomes[i] = Some(r),
                Err(_) => break,
            }
        }
        // What the deletes say: our node was there (deleted), was gone, or
        // nothing could be learnt (not sent, no answer in time, connection
        // lost); anything unfinished goes on in the background.
        let mut found_gone = false;
        let mut unknown = false;
        let mut failure = None;
        for (i, (n, outcome)) in nodes.iter().zip(outcomes).enumerate() {
            match outcome {
                Some(Ok(())) => {}
                // Our node (not a companion: a semaphore's internal-mutex
                // node is not the lease) was gone before our delete.
                Some(Err(zk_framework::Error::NoNode { .. })) => found_gone |= i == 0,
                Some(Err(
                    zk_framework::Error::ConnectionLoss
                    | zk_framework::Error::SessionExpired
                    | zk_framework::Error::OperationTimeout
                    | zk_framework::Error::Closed,
                ))
                | None => {
                    unknown = true;
                    to_background(n);
                }
                Some(Err(e)) => {
                    to_background(n);
                    failure = Some(e);
                }
            }
        }
        if let Some(e) = failure {
            return Err(Error::ZooKeeper(e));
        }
        // Our node was gone before our delete: someone else deleted it (an
        // operator's break the holding had not heard of yet, the own-node
        // watch not set or its notification on the way) and the lock may
        // have been another's meanwhile: lost, whatever the status said.
        if found_gone {
            // (Recorded for a multi-lock, which tells this apart from a
            // session that ended during its release.)
            s.loss_cause.lock().get_or_insert(LossCause::NodeDeleted);
            return Err(lost_error());
        }
        // Held when the release began: given up with nothing overlapping it,
        // whatever happens to the delete (the node goes with the session).
        if held_at_start {
            return Ok(());
        }
        // It was uncertain: the delete's answer tells. Our own node deleted
        // means the session never ended and nobody removed it: held all along.
        if unknown {
            Err(Error::LockUncertain { path: s.base.clone() })
        } else {
            Ok(())
        }
    }
}

impl HoldState {
    /// How long a release waits for its delete: what the caller set, else a
    /// tenth of the session timeout, between 100 ms and 2 s (well under the
    /// session timeout, far over a healthy round trip).
    pub(super) fn release_bound(&self) -> Duration {
        match self.release_bound_ms.load(Ordering::Relaxed) {
            0 => {
                let t = self
                    .client
                    .negotiated_session_timeout()
                    .unwrap_or(Duration::from_secs(30));
                (t / 10).clamp(Duration::from_millis(100), Duration::from_secs(2))
            }
            ms => Duration::from_millis(ms),
        }
    }
}
