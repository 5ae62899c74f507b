//! The one retry loop. Each call has its own budget (retry count and start
//! time); a handle's deadline ([`CuratorFramework::with_deadline`]) bounds
//! every wait of it.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::handle::CuratorFramework;
use crate::client::Client;
use crate::deadline::{bound, expired, remaining};
use crate::error::{Error, Result};
use crate::retry::RetryDecision;

/// The longest a retry waits for the current handle to (re)connect before its
/// attempt. The Java client queues a request made while disconnected until its
/// next connection attempt (which follows a random pause of up to 1 s) and fails
/// it only if that attempt fails; our client fails such a request at once, so
/// without this wait a short policy (Curator's tests use `RetryOneTime(1)`)
/// would burn its retries before a reconnect that is only milliseconds away.
const RECONNECT_WAIT: Duration = Duration::from_secs(1);

/// The retry loop as a method (see `Recipe::call_with_retry`, whose
/// promise it keeps): every operation of the managed client runs in it.
impl CuratorFramework {
    pub(crate) fn retry<T>(&self, op: impl FnMut(&Client) -> Result<T>) -> Result<T> {
        call_with_retry(self, op)
    }
}

fn call_with_retry<T>(fw: &CuratorFramework, mut op: impl FnMut(&Client) -> Result<T>) -> Result<T> {
    let deadline = fw.deadline;
    // Wait once for a connection; after the budget, proceed anyway. The
    // loop's clock starts after this wait, as Curator's does. Under a
    // deadline the wait is cut to it, and an expired deadline never waits
    // for a connection. The client's own state is asked too: the
    // framework's is told on the dispatch thread and can lag a connection
    // just lost, and an attempt on it would only meet a ConnectionLoss
    // (with no retry left, the call would fail without being sent).
    if !fw.is_connected() || !fw.zookeeper_client().state().is_connected() {
        let wait = bound(deadline, fw.connection_timeout());
        if wait.is_zero() && expired(deadline) {
            return Err(unreachable(fw, Error::DeadlineExceeded));
        }
        let until = Instant::now() + wait;
        match fw
            .block_until_connected(wait)
            .and_then(|()| fw.zookeeper_client().wait_connected(until))
        {
            Err(Error::Closed) => return Err(Error::Closed),
            // Every server refused in a way no retry mends.
            Err(e @ Error::Tls(_)) if fw.zookeeper_client().certain_refusal().is_some() => return Err(e),
            Err(_) if expired(deadline) => return Err(unreachable(fw, Error::DeadlineExceeded)),
            _ => {}
        }
    }
    let start = Instant::now();
    let mut retries = 0;
    let policy = fw.retry_policy();
    let mut retrying = false;
    loop {
        if fw.inner().closed.load(Ordering::SeqCst) {
            return Err(Error::Closed);
        }
        let current = fw.zookeeper_client();
        if retrying && !current.state().is_connected() {
            let _ = current.wait_connected_timeout(bound(deadline, fw.connection_timeout().min(RECONNECT_WAIT)));
        }
        // The attempt's requests end by the deadline too.
        let bounded;
        let client: &Client = match deadline {
            None => &current,
            Some(_) => {
                bounded = current.with_deadline(deadline);
                &bounded
            }
        };
        let err = match ensure_namespace(fw, client).and_then(|()| op(client)) {
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
        if expired(deadline) {
            return Err(unreachable(fw, Error::DeadlineExceeded));
        }
        match policy.next_retry(retries, start.elapsed()) {
            RetryDecision::GiveUp => return Err(unreachable(fw, err)),
            // Never sleep past the deadline: wait for a connection until
            // then, and try once more if one comes.
            RetryDecision::RetryAfter(d) if remaining(deadline).is_some_and(|r| r < d) => {
                let left = remaining(deadline).unwrap_or_default();
                match fw.zookeeper_client().wait_connected_timeout(left) {
                    Ok(()) if !expired(deadline) => {
                        retrying = true;
                        continue;
                    }
                    _ if fw.inner().closed.load(Ordering::SeqCst) => return Err(Error::Closed),
                    _ => return Err(unreachable(fw, Error::DeadlineExceeded)),
                }
            }
            RetryDecision::RetryAfter(d) => {
                retries += 1;
                log::debug!("retrying after {err} in {d:?} (retry {retries})");
                fw.inner().pause(d)?;
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

/// Creates the namespace node as a container, once.
fn ensure_namespace(fw: &CuratorFramework, client: &Client) -> Result<()> {
    let Some(ns) = &fw.inner.namespace else { return Ok(()) };
    if fw.inner.namespace_ready.load(Ordering::Acquire) {
        return Ok(());
    }
    let mode = if fw.inner.container_parents {
        zk_proto::CreateMode::Container
    } else {
        zk_proto::CreateMode::Persistent
    };
    let path = format!("/{ns}");
    let acl = super::acl::acl_of(&*fw.inner.acl_provider, &path);
    match client.create(&path, &[], &acl, mode) {
        Ok(_) | Err(Error::NodeExists { .. }) => {
            fw.inner.namespace_ready.store(true, Ordering::Release);
            Ok(())
        }
        // The namespace lives at the client's root: a NoNode there is a
        // missing chroot.
        Err(Error::NoNode { path }) => Err(missing_chroot(client).unwrap_or(Error::NoNode { path })),
        Err(e) => Err(e),
    }
}

/// After a create with parents failed with NoNode at the top: whether the
/// connect string's chroot is the missing node ([`Error::ChrootMissing`]).
/// One `exists` (which no ACL guards), only after such a failure.
pub(super) fn missing_chroot(c: &Client) -> Option<Error> {
    let chroot = c.chroot()?;
    match c.exists("/") {
        Ok(None) => Some(Error::ChrootMissing {
            chroot: chroot.to_string(),
        }),
        _ => None,
    }
}
