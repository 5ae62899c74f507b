//! The one retry loop. Nested loops on one thread share one budget (retry count
//! and start time), as Curator's `ThreadLocalRetryLoop` does.

use std::cell::RefCell;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::CuratorFramework;
use crate::client::Client;
use crate::retry::RetryDecision;
use crate::{Error, Result};

#[derive(Clone, Copy)]
struct LoopState {
    start: Instant,
    retries: u32,
}

thread_local! {
    static CURRENT: RefCell<Option<LoopState>> = const { RefCell::new(None) };
}

struct Outermost(bool);

impl Drop for Outermost {
    fn drop(&mut self) {
        if self.0 {
            CURRENT.with(|c| *c.borrow_mut() = None);
        }
    }
}

/// The longest a retry waits for the current handle to (re)connect before its
/// attempt. The Java client queues a request made while disconnected until its
/// next connection attempt (which follows a random pause of up to 1 s) and fails
/// it only if that attempt fails; our client fails such a request at once, so
/// without this wait a short policy (Curator's tests use `RetryOneTime(1)`)
/// would burn its retries before a reconnect that is only milliseconds away.
const RECONNECT_WAIT: Duration = Duration::from_secs(1);

pub(super) fn call_with_retry<T>(fw: &CuratorFramework, mut op: impl FnMut(&Client) -> Result<T>) -> Result<T> {
    let nested = CURRENT.with(|c| c.borrow().is_some());
    let _guard = Outermost(!nested);
    if !nested {
        // Wait once for a connection; after the budget, proceed anyway. The
        // loop's clock starts after this wait, as Curator's does.
        // Under a caller's deadline ([`crate::deadline`]) the wait is cut to
        // it, and an expired deadline never waits for a connection.
        if !fw.is_connected() {
            let wait = crate::deadline::bound(fw.connection_timeout());
            if wait.is_zero() && crate::deadline::expired() {
                return Err(unreachable(fw, Error::DeadlineExceeded));
            }
            match fw.block_until_connected(wait) {
                Err(Error::Closed) => return Err(Error::Closed),
                // Every server refused in a way no retry mends.
                Err(e @ Error::Tls(_)) if fw.zookeeper_client().certain_refusal().is_some() => return Err(e),
                Err(_) if crate::deadline::expired() => return Err(unreachable(fw, Error::DeadlineExceeded)),
                _ => {}
            }
        }
        CURRENT.with(|c| {
            *c.borrow_mut() = Some(LoopState {
                start: Instant::now(),
                retries: 0,
            })
        });
    }
    let policy = fw.retry_policy();
    let mut retrying = false;
    loop {
        if fw.inner().closed.load(Ordering::SeqCst) {
            return Err(Error::Closed);
        }
        let client = fw.zookeeper_client();
        if retrying && !client.state().is_connected() {
            let _ = client.wait_connected_timeout(crate::deadline::bound(fw.connection_timeout().min(RECONNECT_WAIT)));
        }
        let err = match fw.ensure_namespace(&client).and_then(|()| op(&client)) {
            Ok(v) => return Ok(v),
            // A handle the framework closed because its session ended (the
            // client itself is still open): the session expired under us.
            Err(Error::Closed) if !fw.inner().closed.load(Ordering::SeqCst) => Error::SessionExpired,
            Err(e) => e,
        };
        if !policy.allows(&err) {
            return Err(err);
        }
        if let Some(t) = client.certain_refusal() {
            return Err(Error::Tls(t));
        }
        if crate::deadline::expired() {
            return Err(unreachable(fw, Error::DeadlineExceeded));
        }
        let state = CURRENT.with(|c| *c.borrow()).unwrap_or(LoopState {
            start: Instant::now(),
            retries: 0,
        });
        match policy.next_retry(state.retries, state.start.elapsed()) {
            RetryDecision::GiveUp => return Err(unreachable(fw, err)),
            // Never sleep past the caller's deadline: wait for a connection
            // until then, and try once more if one comes.
            RetryDecision::RetryAfter(d) if crate::deadline::remaining().is_some_and(|r| r < d) => {
                let left = crate::deadline::remaining().unwrap_or_default();
                match fw.zookeeper_client().wait_connected_timeout(left) {
                    Ok(()) if !crate::deadline::expired() => {
                        retrying = true;
                        continue;
                    }
                    _ if fw.inner().closed.load(Ordering::SeqCst) => return Err(Error::Closed),
                    _ => return Err(unreachable(fw, Error::DeadlineExceeded)),
                }
            }
            RetryDecision::RetryAfter(d) => {
                CURRENT.with(|c| {
                    if let Some(s) = c.borrow_mut().as_mut() {
                        s.retries += 1;
                    }
                });
                log::debug!("retrying after {err} in {d:?} (retry {})", state.retries + 1);
                if !sleep_unless_closed(fw, d) {
                    return Err(Error::Closed);
                }
                retrying = true;
            }
        }
    }
}

/// What a call that could not be served reports: while the client is not
/// connected, why it is not (the latest connection attempt's failure, or
/// `ConnectionLoss` when no attempt has ended yet) rather than a bare
/// deadline or connection loss, so that a caller never reads an unreachable
/// server as a timeout. Connected, `err` as it is.
fn unreachable(fw: &CuratorFramework, err: Error) -> Error {
    if !matches!(
        err,
        Error::ConnectionLoss | Error::ConnectTimeout { .. } | Error::DeadlineExceeded
    ) {
        return err;
    }
    fw.connect_failure().unwrap_or(err)
}

/// Sleeps `d` in slices, returning false as soon as the client is closed. A
/// sleep too long for the clock (a policy's `Duration::MAX`) lasts until the
/// client is closed.
fn sleep_unless_closed(fw: &CuratorFramework, d: Duration) -> bool {
    let end = Instant::now().checked_add(d);
    loop {
        if fw.inner().closed.load(Ordering::SeqCst) {
            return false;
        }
        let left = match end {
            Some(end) => end.saturating_duration_since(Instant::now()),
            None => Duration::MAX,
        };
        if left.is_zero() {
            return true;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}
