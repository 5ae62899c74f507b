//! The one candidate loop of every election participant, and the watch of a
//! latch's leadership.
//!
//! A participant's thread runs [`run`]: wait until a turn starts, wait for a
//! connection, queue a node and wait in line (ended by the turn's cancel),
//! lead while the node holds, and after a failure try again with a pause
//! that doubles up to two seconds. What differs between a latch and a
//! selector is behind [`Leading`]: when a turn starts (a latch: always while
//! started; a selector: when queued), what leading is (a latch waits, a
//! selector runs its work), and whether a turn that ended queues again.
//!
//! A close never orphans a node: no create is begun once the participant is
//! closed, and a create in flight at the close is the thread's to clean up
//! (its wait in line is cancelled and deletes the node; a win that the
//! closed election refuses is released).
//!
//! While a latch leads, its thread runs [`watch`], which turns the holding's
//! events into the election's (each one draws the status again and tells
//! its change) and says how the leadership ended: the client closed, the
//! holding lost, the holding released (a resign, a close), or the watch
//! stopped. A selector's thread runs its work instead; a signal on its
//! holding does the same following, with no thread of its own.

use crossbeam_channel::Receiver;
use std::sync::Arc;

use super::election::{Election, Lifecycle};
use crate::core::Backoff;
use crate::locks::holding::{Holding, LockEvent};
use crate::locks::internals::Attempt;

/// How a turn that did not lead ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TurnEnd {
    /// It led, and the leadership is over.
    Led,
    /// Its node vanished or its try ran out: queue again.
    Vanished,
    /// Its turn was cancelled (an interrupt or a close) while it waited.
    Cancelled,
    /// A try failed (the error is the election's, for `await` and
    /// `last_error`).
    Failed,
}

/// What a participant does around the common loop.
pub(crate) trait Leading {
    /// Waits until the next turn should start and gives its cancel channel
    /// (the turn's wait in line ends when it disconnects); `None` to stop.
    fn next_turn(&mut self, cancel: &Receiver<()>) -> Option<Receiver<()>>;

    /// Leads: `holding` has begun the election's leadership (the election
    /// keeps a share of it). Returns when the leadership is over.
    fn lead(&mut self, holding: Holding, turn: &Receiver<()>);

    /// The turn is over.
    fn turn_over(&mut self, end: TurnEnd);
}

/// The candidate loop (see the module doc), until the participant closes,
/// `cancel` disconnects, or the client closes.
pub(crate) fn run(election: &Arc<Election>, cancel: &Receiver<()>, leading: &mut impl Leading) {
    let mut backoff = Backoff::new();
    while election.lifecycle() == Lifecycle::Started {
        let Some(turn) = leading.next_turn(cancel) else { break };
        if election.lifecycle() != Lifecycle::Started {
            break;
        }
        if !election.wait_connected(&turn) {
            if election.lifecycle() != Lifecycle::Started || election.client.is_closed() {
                break;
            }
            // The turn was cancelled while it waited for a connection.
            leading.turn_over(TurnEnd::Cancelled);
            continue;
        }
        // Decided as late as it can be: a close begun while this turn waited
        // for a connection ends it before its create. (A create decided just
        // before a close is in flight at it: the wait in line below, ended
        // by the close, deletes its node; a win the closed election refuses
        // releases it.)
        if election.lifecycle() != Lifecycle::Started {
            break;
        }
        let internals = election.internals.clone().with_cancel(turn.clone());
        let end = match internals.attempt_counted(&election.client, election.id.as_bytes().to_vec()) {
            Ok(Attempt::Won(node)) => {
                backoff.reset();
                let holding = internals.hold_watched_at_once(node);
                if let Err(h) = election.begin(holding.share()) {
                    // Closed meanwhile.
                    drop(holding);
                    let _ = h.release_node();
                    break;
                }
                leading.lead(holding, &turn);
                TurnEnd::Led
            }
            Ok(Attempt::Missing | Attempt::TimedOut) => TurnEnd::Vanished,
            // Interrupted or closed while waiting: the node is deleted.
            Ok(Attempt::Cancelled) => TurnEnd::Cancelled,
            Err(e) => {
                let closed = election.client.is_closed();
                let pause = backoff.next();
                log::debug!("election at {}: {e}; trying again in {pause:?}", election.path);
                election.set_error(Some(e));
                if closed
                    || crossbeam_channel::select! {
                        recv(cancel) -> _ => true,
                        recv(crossbeam_channel::after(pause)) -> _ => false,
                    }
                {
                    break;
                }
                TurnEnd::Failed
            }
        };
        leading.turn_over(end);
    }
}

/// How a watched leadership ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// The client was closed (the holding finds itself lost when asked).
    ClientClosed,
    /// The holding is lost for certain.
    Lost,
    /// The holding was released (its events ended).
    Released,
    /// `stop` was ready.
    Stopped,
}

/// Watches a latch's leadership (a selector's is followed by a signal on
/// its holding instead: its thread runs the work): each of the holding's
/// `events` draws the election's status again (telling its change); returns
/// how it ended. The client's close is seen at once (its holding would only
/// find itself lost when asked).
pub(crate) fn watch(election: &Election, events: &Receiver<LockEvent>, stop: &Receiver<()>) -> Ended {
    let closed = election.client.recipe().close_signal();
    loop {
        crossbeam_channel::select! {
            recv(closed) -> _ => {
                election.refresh();
                return Ended::ClientClosed;
            }
            recv(events) -> ev => match ev {
                Ok(_) => {
                    election.refresh();
                    if election.holding_lost() {
                        return Ended::Lost;
                    }
                }
                Err(_) => return Ended::Released,
            },
            recv(stop) -> _ => return Ended::Stopped,
        }
    }
}
