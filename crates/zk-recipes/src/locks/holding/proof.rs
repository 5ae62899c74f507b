//! Trust after a reconnect comes back only with proof: a holding is held only
//! in a connection epoch ([`zk_framework::recipe::Recipe::connection_epoch`])
//! in which the server showed its node present, with its czxid and its
//! session as owner. When the epoch moves on, the holding asks (once per
//! epoch) for an `exists` of its node, sent from its client's executor
//! thread (the asker may be one of the client's own threads, which must not
//! send requests); the answer makes it held again, lost, or leaves it
//! uncertain for the next epoch.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use zk_framework::proto::Stat;

use super::own_watch::{watch_own_node, OwnNodeWatcher};
use super::state::{HoldState, ProofAsk, LOST};
use crate::locks::stats::LossCause;

/// How long after a proof that failed (not for a lost connection) it is
/// asked again.
const PROOF_RETRY: Duration = Duration::from_millis(100);

impl HoldState {
    /// Asks for the proof of epoch `epoch` (see [`HoldState::proven`]),
    /// unless it was asked for already: sent from the client's executor
    /// thread (the caller may be one of the client's own threads, which must
    /// not send requests).
    pub(super) fn ask_proof(&self, epoch: u64) {
        {
            let mut p = self.proof.lock();
            if p.asked.is_some_and(|a| a >= epoch) {
                return;
            }
            *p = ProofAsk {
                asked: Some(epoch),
                sent: false,
            };
        }
        self.schedule(Instant::now());
    }

    /// Runs [`HoldState::due`] at `at` on the client's executor (at once,
    /// on this thread, when it has no thread: the client is closed, or the
    /// system refused one). Only a weak reference waits: a holding gone by
    /// then is skipped.
    pub(super) fn schedule(&self, at: Instant) {
        let weak = self.me.clone();
        let queued = self.client.recipe().schedule(at, move || {
            if let Some(me) = weak.upgrade() {
                me.due();
            }
        });
        if !queued {
            if let Some(me) = self.me.upgrade() {
                me.due();
            }
        }
    }

    /// Sends the proof: an `exists` of the node in the current epoch (with
    /// the own-node watch when there is none). Its answer decides.
    fn send_proof(&self) {
        let epoch = self.client.recipe().connection_epoch();
        *self.proof.lock() = ProofAsk {
            asked: Some(epoch),
            sent: true,
        };
        if self.client.recipe().session_generation() != self.generation {
            self.lose(LossCause::SessionExpired);
            return;
        }
        let watch = !self.watching.swap(true, Ordering::SeqCst);
        let weak = self.me.clone();
        let on_reply = move |r: zk_framework::Result<Option<Stat>>| {
            if let Some(st) = weak.upgrade() {
                st.proof_answered(epoch, watch, r);
            }
        };
        let sent = if watch {
            self.client
                .recipe()
                .exists_w_detached(&self.node, OwnNodeWatcher(self.me.clone()), on_reply)
        } else {
            self.client.recipe().exists_detached(&self.node, on_reply)
        };
        if let Err(e) = sent {
            // Not sent (the connection went again): the next epoch asks again.
            log::debug!("could not prove lock node {}: {e}", self.node);
            if watch {
                self.watching.store(false, Ordering::SeqCst);
            }
            self.proof_done(epoch);
        }
    }

    /// The proof of `epoch` is over (answered or not sent).
    fn proof_done(&self, epoch: u64) {
        let mut p = self.proof.lock();
        if p.asked == Some(epoch) {
            *p = ProofAsk::default();
        }
    }

    /// The answer to the proof of `epoch` (on the client's I/O thread: it
    /// only signals).
    fn proof_answered(&self, epoch: u64, watched: bool, r: zk_framework::Result<Option<Stat>>) {
        self.proof_done(epoch);
        match r {
            Ok(Some(stat)) if self.is_ours(&stat) => {
                self.proven.fetch_max(epoch, Ordering::SeqCst);
                // Held again if nothing else stands in the way (told here).
                let _ = self.status();
            }
            // Gone, or a node of that name that is not ours: ours was deleted.
            Ok(_) => self.lose(self.deletion_cause()),
            Err(e) => {
                if watched {
                    self.watching.store(false, Ordering::SeqCst);
                }
                match e {
                    // The connection or the session went: the next epoch (or
                    // the session's end) decides.
                    zk_framework::Error::ConnectionLoss
                    | zk_framework::Error::SessionExpired
                    | zk_framework::Error::OperationTimeout
                    | zk_framework::Error::Closed => {}
                    e => {
                        // Anything else: ask again a little later; uncertain
                        // meanwhile.
                        log::warn!("proving lock node {} failed: {e}; asking again", self.node);
                        {
                            let mut p = self.proof.lock();
                            if p.asked.is_none() {
                                *p = ProofAsk {
                                    asked: Some(epoch),
                                    sent: false,
                                };
                            }
                        }
                        self.schedule(Instant::now() + PROOF_RETRY);
                    }
                }
            }
        }
    }

    /// Whether `stat` is our node's: its czxid and our session as its owner.
    pub(super) fn is_ours(&self, stat: &Stat) -> bool {
        stat.czxid == self.token && stat.ephemeral_owner == self.session_id
    }
}

impl HoldState {
    /// On the client's executor thread: sends the proof asked for, or else
    /// the own-node watch if none is set.
    fn due(self: Arc<Self>) {
        if self.status.load(Ordering::SeqCst) >= LOST {
            return;
        }
        let prove = {
            let mut p = self.proof.lock();
            let due = p.asked.is_some() && !p.sent;
            p.sent |= due;
            due
        };
        if prove {
            self.send_proof();
        } else if !self.watching.load(Ordering::SeqCst) {
            watch_own_node(&self);
        }
    }
}
