//! [`Leadership`]: what a selector's work closure is given while it leads.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use zk_framework::CuratorFramework;

use crate::error::{Error, Result};
use crate::leader::election::{Election, LeaderEvent, LeaderStatus};
use crate::locks::transaction::GuardedTransaction;

/// What a selector's work closure is given while it leads.
///
/// It is cancelled when the leadership may be lost (see
/// [`LeaderSelector`](super::LeaderSelector)), interrupted, or closed: from then on
/// [`check`](Leadership::check) fails, [`cancelled`](Leadership::cancelled)
/// is ready, and [`sleep`](Leadership::sleep) returns `true` at once.
pub struct Leadership {
    pub(super) election: Arc<Election>,
    pub(super) cancel: Receiver<()>,
}

impl std::fmt::Debug for Leadership {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Leadership")
            .field("path", &self.election.path)
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl Leadership {
    /// `Ok` only while certainly the leader and not cancelled: call it before
    /// each side effect.
    ///
    /// # Errors
    ///
    /// [`Error::NotLeader`] once cancelled or lost;
    /// [`Error::LeadershipUncertain`] while uncertain
    /// ([`SuspendPolicy::Session`](crate::leader::election::SuspendPolicy::Session)).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let s = zk_recipes::LeaderSelector::builder(&client, "/election", |l| {
    ///     if l.check().is_ok() { /* write */ }
    /// })
    /// .build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check(&self) -> Result<()> {
        if self.is_cancelled() {
            return Err(Error::NotLeader {
                path: self.election.path.clone(),
            });
        }
        self.election.check()
    }

    /// Leader, uncertain or not leader (`NotLeader` once cancelled).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let s = zk_recipes::LeaderSelector::builder(&client, "/election", |l| {
    ///     println!("{:?}", l.status());
    /// })
    /// .build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn status(&self) -> LeaderStatus {
        if self.is_cancelled() {
            return LeaderStatus::NotLeader;
        }
        self.election.status()
    }

    /// Whether the leadership was cancelled.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let s = zk_recipes::LeaderSelector::builder(&client, "/election", |l| {
    ///     while !l.is_cancelled() { /* a step of work */ }
    /// })
    /// .build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_cancelled(&self) -> bool {
        matches!(
            self.cancel.try_recv(),
            Err(crossbeam_channel::TryRecvError::Disconnected)
        )
    }

    /// A channel that becomes ready (disconnected) when the leadership is
    /// cancelled: select on it beside the work's own channels.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let (_jobs_tx, jobs) = crossbeam_channel::unbounded::<u32>();
    /// let s = zk_recipes::LeaderSelector::builder(&client, "/election", move |l| loop {
    ///     crossbeam_channel::select! {
    ///         recv(jobs) -> job => { let _ = job; /* l.check() then run it */ }
    ///         recv(l.cancelled()) -> _ => return,
    ///     }
    /// })
    /// .build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cancelled(&self) -> &Receiver<()> {
        &self.cancel
    }

    /// Sleeps `d` unless cancelled first: `true` when cancelled.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let s = zk_recipes::LeaderSelector::builder(&client, "/election", |l| {
    ///     while !l.sleep(std::time::Duration::from_secs(1)) { /* a step of work */ }
    /// })
    /// .build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sleep(&self, d: Duration) -> bool {
        !matches!(
            self.cancel.recv_timeout(d),
            Err(crossbeam_channel::RecvTimeoutError::Timeout)
        )
    }

    /// The leadership's fencing term (its node's czxid).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let s = zk_recipes::LeaderSelector::builder(&client, "/election", |l| {
    ///     println!("term {:?}", l.term());
    /// })
    /// .build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn term(&self) -> Option<i64> {
        self.election.term()
    }

    /// The instant until which the leadership certainly holds.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let s = zk_recipes::LeaderSelector::builder(&client, "/election", |l| {
    ///     println!("safe until {:?}", l.safe_until());
    /// })
    /// .build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn safe_until(&self) -> Option<Instant> {
        self.election.safe_until()
    }

    /// A transaction guarded by this leadership's node.
    ///
    /// # Errors
    ///
    /// As [`Leadership::check`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let s = zk_recipes::LeaderSelector::builder(&client, "/election", |l| {
    ///     if let Ok(t) = l.transaction() {
    ///         let _ = t.set_data("/app/state", b"x".to_vec(), None).commit();
    ///     }
    /// })
    /// .build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn transaction(&self) -> Result<GuardedTransaction<'static>> {
        self.check()?;
        self.election.transaction()
    }

    /// Every change of this participant's leadership from now on.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let s = zk_recipes::LeaderSelector::builder(&client, "/election", |l| {
    ///     let events = l.events();
    /// })
    /// .build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn events(&self) -> Receiver<LeaderEvent> {
        self.election.subscribe()
    }

    /// The client the selector runs on.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let s = zk_recipes::LeaderSelector::builder(&client, "/election", |l| {
    ///     let _ = l.client().get_data("/app/state");
    /// })
    /// .build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn client(&self) -> &CuratorFramework {
        &self.election.client
    }
}
