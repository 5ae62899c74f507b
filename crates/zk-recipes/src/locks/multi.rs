//! `MultiLock`: several locks taken together, all or none, without deadlocks.

use std::sync::Arc;
use std::thread::ThreadId;
use std::time::Instant;

use parking_lot::Mutex;
use zk_framework::CuratorFramework;

use crate::error::{Error, Result};
use crate::locks::holding::{Holding, LockStatus};
use crate::locks::lock::sealed::{Member, Sealed};
use crate::locks::lock::{InterProcessLock, Lock, LockGuard, LockKind, NotSend, RawLock};
use crate::locks::mutex::InterProcessMutex;

/// The rank of a read half in a multi-lock's order (see `Member::order_key`).
const READ_RANK: u8 = 2;

impl<L: InterProcessLock + ?Sized> InterProcessLock for Arc<L> {
    fn acquire_holding(&self, deadline: Option<Instant>) -> Result<Option<Holding>> {
        (**self).acquire_holding(deadline)
    }
    fn release_holding(&self, holding: Holding) -> Result<()> {
        (**self).release_holding(holding)
    }
    fn release(&self) -> Result<()> {
        (**self).release()
    }
    fn is_acquired_in_this_process(&self) -> bool {
        (**self).is_acquired_in_this_process()
    }
}

/// Several locks taken together: all or none.
///
/// * **Deadlock-free**: the locks are always taken in one canonical order, by
///   full server path (namespace included; for one read/write lock, the write
///   half before the read half), whatever order the caller gave. Two
///   `MultiLock`s over the same locks listed in different orders cannot
///   deadlock. (Curator takes them in list order.)
/// * **One deadline** for the whole set, not a timeout per lock.
/// * **All or none**: if one lock cannot be taken (timeout or error), those
///   already taken are released in reverse order, and the first error is
///   returned.
/// * **Never with a lost member**: if a member was lost by the time the last
///   one is taken, the set is released and taken again within the deadline.
/// * **One guard** with the same status, check and loss signal as a single
///   lock's: lost if any member is lost; each member's fencing token.
/// * **Release** goes on past a failure and reports every error
///   ([`Error::Multiple`]).
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// let both = zk_recipes::MultiLock::from_paths(&client, &["/locks/b", "/locks/a"])?;
/// let guard = both.acquire()?; // takes /locks/a, then /locks/b
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type MultiLock = Lock<MultiKind>;

/// The kind of an [`MultiLock`] (its state; see [`Lock`]).
pub struct MultiKind {
    locks: Vec<Arc<dyn InterProcessLock>>,
    /// Per thread, each set it holds (the inner locks may be reentrant), for
    /// Curator's guard-less `release()`.
    holders: Mutex<Vec<(ThreadId, Holding)>>,
}

impl std::fmt::Debug for MultiKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultiLock")
            .field("paths", &self.locks.iter().map(|l| l.order_key().0).collect::<Vec<_>>())
            .finish()
    }
}

/// Holds every lock of a [`MultiLock`]; releases them (in reverse order) when
/// dropped. `!Send`, since it may hold reentrant locks.
pub type MultiLockGuard<'a> = LockGuard<'a, MultiLock>;

impl MultiLock {
    /// A multi-lock over any locks, in canonical order.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an empty list, or for two distinct locks on
    /// one path unless both are read halves: the second would queue behind the
    /// first and wait for ever (until the deadline). The same lock object given
    /// twice is fine (it is reentrant, or refuses itself).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use zk_recipes::{InterProcessLock, InterProcessMutex, InterProcessSemaphoreMutex, MultiLock};
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let locks: Vec<Arc<dyn InterProcessLock>> = vec![
    ///     Arc::new(InterProcessMutex::new(&client, "/locks/a")?),
    ///     Arc::new(InterProcessSemaphoreMutex::new(&client, "/locks/b")?),
    /// ];
    /// let multi = MultiLock::new(locks)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(mut locks: Vec<Arc<dyn InterProcessLock>>) -> Result<Self> {
        if locks.is_empty() {
            return Err(Error::InvalidArgument("a multi-lock needs at least one lock".into()));
        }
        locks.sort_by_key(|l| l.order_key());
        // Sorted by path, so the locks of one path are adjacent.
        for (i, a) in locks.iter().enumerate() {
            let (ka, ida) = (a.order_key(), a.instance_id());
            for b in locks[i + 1..].iter().take_while(|b| b.order_key().0 == ka.0) {
                let kb = b.order_key();
                if b.instance_id() != ida && !(ka.1 == READ_RANK && kb.1 == READ_RANK) {
                    return Err(Error::InvalidArgument(format!(
                        "a multi-lock holds two distinct locks on {}; they would wait on each other",
                        ka.0
                    )));
                }
            }
        }
        Ok(Lock {
            kind: MultiKind {
                locks,
                holders: Mutex::new(Vec::new()),
            },
        })
    }

    /// A multi-lock of [`InterProcessMutex`]es at `paths`.
    ///
    /// # Errors
    ///
    /// An invalid path, or an empty list.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::MultiLock::from_paths(&client, &["/a", "/b"])?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_paths(client: &CuratorFramework, paths: &[&str]) -> Result<Self> {
        let locks = paths
            .iter()
            .map(|p| InterProcessMutex::new(client, p).map(|m| Arc::new(m) as Arc<dyn InterProcessLock>))
            .collect::<Result<Vec<_>>>()?;
        MultiLock::new(locks)
    }

    /// The locks' full paths in the order they are taken.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let m = zk_recipes::MultiLock::from_paths(&client, &["/b", "/a"])?;
    /// assert_eq!(m.order(), vec!["/a".to_string(), "/b".to_string()]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn order(&self) -> Vec<String> {
        self.kind.locks.iter().map(|l| l.order_key().0).collect()
    }

    /// Takes every lock in order; on a timeout or an error, releases those
    /// taken (reverse order). A set with a member lost by the end is released
    /// and taken again, within the deadline.
    fn acquire_set(&self, deadline: Option<Instant>) -> Result<Option<Holding>> {
        loop {
            let mut taken: Vec<(&Arc<dyn InterProcessLock>, Holding)> = Vec::new();
            let mut outcome = Ok(true);
            for lock in &self.kind.locks {
                match lock.acquire_holding(deadline) {
                    Ok(Some(h)) => taken.push((lock, h)),
                    Ok(None) => {
                        outcome = Ok(false);
                        break;
                    }
                    Err(e) => {
                        outcome = Err(e);
                        break;
                    }
                }
            }
            let lost = taken.iter().any(|(_, h)| h.status() == LockStatus::Lost);
            if matches!(outcome, Ok(true)) && !lost {
                let holding = Holding::many(taken.into_iter().map(|(_, h)| h).collect());
                self.kind
                    .holders
                    .lock()
                    .push((std::thread::current().id(), holding.share()));
                return Ok(Some(holding));
            }
            for (lock, h) in taken.into_iter().rev() {
                // Under a deadline, the give-back waits for its deletes no
                // longer than the deadline's grace.
                if let Some(end) = deadline.and_then(|d| d.checked_add(zk_framework::deadline::GRACE)) {
                    h.limit_release_to(end);
                }
                match lock.release_holding(h) {
                    // At the deadline the deletes go on in the background.
                    Ok(())
                    | Err(Error::LockLost { .. })
                    | Err(Error::ZooKeeper(zk_framework::Error::DeadlineExceeded)) => {}
                    Err(e) => log::warn!("rolling back a multi-lock: releasing {}: {e}", lock.order_key().0),
                }
            }
            match outcome {
                Ok(true) => {
                    // A member was lost while the others were taken: try again.
                    log::info!("a multi-lock member was lost while acquiring; taking the set again");
                    if deadline.is_some_and(|d| d <= Instant::now()) {
                        return Ok(None);
                    }
                }
                Ok(false) => return Ok(None),
                Err(e) => return Err(e),
            }
        }
    }

    /// Releases a set: every member in reverse order, going on past failures.
    fn release_set(&self, holding: Holding) -> Result<()> {
        {
            let me = std::thread::current().id();
            let mut holders = self.kind.holders.lock();
            match holders.iter().position(|(t, h)| *t == me && h.same(&holding)) {
                Some(i) => {
                    holders.remove(i);
                }
                None => {
                    return Err(Error::NotOwner {
                        path: self.order().join(","),
                    })
                }
            }
        }
        let members = holding.members();
        // Every member's state before the first delete: a member held then
        // was held until the release began, whatever its delete meets after
        // the others' (a connection or a session that ends during the
        // release), unless its delete found its node gone: someone deleted
        // it first, and the lock may have been another's meanwhile.
        let held: Vec<bool> = members.iter().map(|h| h.status() == LockStatus::Held).collect();
        let errors: Vec<Error> = self
            .kind
            .locks
            .iter()
            .zip(members)
            .zip(held)
            .rev()
            .filter_map(|((l, h), held)| {
                let after = h.share();
                match l.release_holding(h) {
                    Err(Error::LockLost { .. })
                        if held && after.loss_cause() != Some(crate::locks::stats::LossCause::NodeDeleted) =>
                    {
                        None
                    }
                    Err(Error::LockUncertain { .. }) if held => None,
                    r => r.err(),
                }
            })
            .collect();
        if errors.is_empty() {
            Ok(())
        } else if errors.iter().all(|e| matches!(e, Error::LockLost { .. })) {
            // A lost member makes the set lost: say so plainly.
            Err(Error::LockLost {
                path: self.order().join(","),
            })
        } else {
            Err(Error::Multiple(errors))
        }
    }

    /// Releases every lock in reverse order, going on past failures.
    ///
    /// # Errors
    ///
    /// [`Error::NotOwner`] when the calling thread does not hold the set;
    /// [`Error::Multiple`] with every release error otherwise.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::MultiLock::from_paths(&client, &["/a", "/b"])?;
    /// assert!(m.release().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn release(&self) -> Result<()> {
        let me = std::thread::current().id();
        let mine = self
            .kind
            .holders
            .lock()
            .iter()
            .rev()
            .find(|(t, _)| *t == me)
            .map(|(_, h)| h.share());
        match mine {
            Some(h) => self.release_set(h),
            None => Err(Error::NotOwner {
                path: self.order().join(","),
            }),
        }
    }

    /// Whether every lock is held by this process.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let m = zk_recipes::MultiLock::from_paths(&client, &["/a", "/b"])?;
    /// assert!(!m.is_acquired_in_this_process());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_acquired_in_this_process(&self) -> bool {
        self.kind.locks.iter().all(|l| l.is_acquired_in_this_process())
    }
}

impl InterProcessLock for MultiLock {
    fn release(&self) -> Result<()> {
        MultiLock::release(self)
    }
    fn acquire_holding(&self, deadline: Option<Instant>) -> Result<Option<Holding>> {
        self.acquire_set(deadline)
    }
    fn release_holding(&self, holding: Holding) -> Result<()> {
        self.release_set(holding)
    }
    fn is_acquired_in_this_process(&self) -> bool {
        MultiLock::is_acquired_in_this_process(self)
    }
}

impl Member for MultiLock {
    fn order_key(&self) -> (String, u8) {
        self.kind.locks[0].order_key()
    }
}

impl RawLock for MultiLock {
    type GuardMarker = NotSend;
}

impl Sealed for MultiKind {}

impl LockKind for MultiKind {}

/// Curator's multi-mutex test doubles: a lock that fails on demand. The
/// lock trait is sealed (only this crate's locks implement it), so these
/// tests live inside the crate, on a real server (the embedded one, or the
/// backend `ZK_TEST_SERVER` names).
#[cfg(test)]
pub(crate) mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use zk_framework::{CuratorFramework, RetryOneTime};
    use zk_testing::TestingServer;

    use crate::error::{Error, Result};
    use crate::locks::holding::Holding;
    use crate::locks::lock::InterProcessLock;
    use crate::locks::multi::MultiLock;
    use crate::locks::mutex::InterProcessMutex;

    const PATH_1: &str = "/locks/our-lock-1";
    const PATH_2: &str = "/locks/our-lock-2";

    fn server() -> TestingServer {
        TestingServer::start().expect("start the test server (ZK_TEST_SERVER selects the backend)")
    }

    /// A client that retries once (as Curator's tests).
    fn connect(connect_string: &str) -> CuratorFramework {
        let t = zk_testing::Timing::from_env();
        let c = CuratorFramework::builder()
            .connect_string(connect_string)
            .session_timeout(t.session())
            .connection_timeout(t.connection())
            .retry_policy(RetryOneTime::new(Duration::from_millis(100)))
            .build()
            .expect("build client");
        c.block_until_connected(t.wait()).expect("client connects");
        c
    }
    use connect as connect_one_time;

    fn lock_children(c: &CuratorFramework, path: &str) -> Vec<String> {
        match c.get_children(path) {
            Ok(k) => k,
            Err(zk_framework::Error::NoNode { .. }) => Vec::new(),
            Err(e) => panic!("get_children {path}: {e}"),
        }
    }

    /// A lock that wraps a real mutex and fails on demand (Curator's test doubles).
    pub(crate) struct FaultyLock {
        inner: Arc<InterProcessMutex>,
        fail_release: bool,
        /// On acquire: records whether `watch` is held, then fails.
        fail_acquire: Option<(Arc<InterProcessMutex>, Arc<AtomicBool>)>,
    }

    impl InterProcessLock for FaultyLock {
        fn acquire_holding(&self, deadline: Option<Instant>) -> Result<Option<Holding>> {
            if let Some((watch, saw)) = &self.fail_acquire {
                saw.store(watch.is_acquired_in_this_process(), Ordering::SeqCst);
                return Err(Error::InvalidArgument("foo".into()));
            }
            self.inner.acquire_holding(deadline)
        }
        fn release_holding(&self, holding: Holding) -> Result<()> {
            if self.fail_release {
                return Err(Error::InvalidArgument("foo".into()));
            }
            self.inner.release_holding(holding)
        }
        fn release(&self) -> Result<()> {
            if self.fail_release {
                return Err(Error::InvalidArgument("foo".into()));
            }
            self.inner.release()
        }
        fn is_acquired_in_this_process(&self) -> bool {
            self.inner.is_acquired_in_this_process()
        }
    }

    impl crate::locks::lock::sealed::Member for FaultyLock {
        fn order_key(&self) -> (String, u8) {
            self.inner.order_key()
        }
    }

    #[test]
    fn test_some_releases_fail() {
        let server = server();
        let client = connect_one_time(&server.connect_string());
        let good = Arc::new(InterProcessMutex::new(&client, PATH_1).unwrap());
        let other_good = Arc::new(InterProcessMutex::new(&client, PATH_2).unwrap());
        let bad = FaultyLock {
            inner: other_good.clone(),
            fail_release: true,
            fail_acquire: None,
        };
        let multi = MultiLock::new(vec![good.clone() as Arc<dyn InterProcessLock>, Arc::new(bad)]).unwrap();
        let g = multi.acquire().unwrap();
        let err = g.release().unwrap_err();
        match &err {
            Error::Multiple(errors) => assert_eq!(errors, &vec![Error::InvalidArgument("foo".into())]),
            other => panic!("expected Multiple, got {other:?}"),
        }
        // The bad lock failed first (reverse order); the good one was still released.
        assert!(!good.is_acquired_in_this_process());
        assert!(other_good.is_acquired_in_this_process());
        assert!(lock_children(&client, PATH_1).is_empty());
        other_good.release().unwrap();
    }

    #[test]
    fn test_some_locks_fail_to_lock() {
        let server = server();
        let client = connect_one_time(&server.connect_string());
        let good = Arc::new(InterProcessMutex::new(&client, PATH_1).unwrap());
        let saw = Arc::new(AtomicBool::new(false));
        let bad = FaultyLock {
            inner: Arc::new(InterProcessMutex::new(&client, PATH_2).unwrap()),
            fail_release: false,
            fail_acquire: Some((good.clone(), saw.clone())),
        };
        // Given in the "wrong" order: the canonical order still takes PATH_1 first.
        let multi = MultiLock::new(vec![Arc::new(bad) as Arc<dyn InterProcessLock>, good.clone()]).unwrap();
        assert_eq!(multi.order(), vec![PATH_1.to_string(), PATH_2.to_string()]);
        let err = multi.acquire().unwrap_err();
        assert_eq!(err, Error::InvalidArgument("foo".into()));
        assert!(!good.is_acquired_in_this_process(), "rolled back");
        assert!(saw.load(Ordering::SeqCst), "the good lock was taken before the bad one");
        assert!(!multi.is_acquired_in_this_process());
        assert!(lock_children(&client, PATH_1).is_empty());
        assert!(multi.release().is_err(), "nothing to release");
    }

    /// Release goes on past failures and reports each of them.
    #[test]
    fn release_reports_every_error() {
        let server = server();
        let client = connect(&server.connect_string());
        let paths = ["/multi/e1", "/multi/e2", "/multi/e3"];
        let inner: Vec<Arc<InterProcessMutex>> = paths
            .iter()
            .map(|p| Arc::new(InterProcessMutex::new(&client, p).unwrap()))
            .collect();
        let locks: Vec<Arc<dyn InterProcessLock>> = vec![
            Arc::new(FaultyLock {
                inner: inner[0].clone(),
                fail_release: true,
                fail_acquire: None,
            }),
            inner[1].clone(),
            Arc::new(FaultyLock {
                inner: inner[2].clone(),
                fail_release: true,
                fail_acquire: None,
            }),
        ];
        let multi = MultiLock::new(locks).unwrap();
        let g = multi.acquire().unwrap();
        match g.release() {
            Err(Error::Multiple(errors)) => {
                assert_eq!(errors.len(), 2, "{errors:?}");
                assert!(errors.iter().all(|e| *e == Error::InvalidArgument("foo".into())));
            }
            other => panic!("expected Multiple with 2 errors, got {other:?}"),
        }
        assert!(!inner[1].is_acquired_in_this_process(), "released between the failures");
        // A release by a thread that does not hold the set is NotOwner, not Multiple.
        assert!(matches!(multi.release(), Err(Error::NotOwner { .. })));
        for m in [&inner[0], &inner[2]] {
            m.release().unwrap();
        }
    }
}
