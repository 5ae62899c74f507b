//! [`SharedValue`]: the value, its versioned writes and its listeners.

use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;
use zk_framework::proto::path::validate_path;
use zk_framework::{ConnectionState, CreateMode, CuratorFramework, Error as ZkError, Stat, WatchedEvent};

use crate::core::marked::{self, Base, Markers, Written};
use crate::core::{Lifecycle, Worker};
use crate::error::{Error, Result};

/// A value with the version and zxids of the node state it was read from
/// (Curator's `VersionedValue`, with the `mzxid` that orders reads as
/// Curator 5.7 does). Give it back to a versioned write
/// ([`SharedValue::try_set_value`], [`SharedCount::try_set_count`](crate::SharedCount::try_set_count)).
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// let count = zk_recipes::SharedCount::new(&client, "/counts/a", 0)?;
/// count.start()?;
/// let v = count.get_versioned_count()?;
/// println!("{} at version {} (mzxid {})", v.value(), v.version(), v.mzxid());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionedValue<T> {
    value: T,
    version: i32,
    mzxid: i64,
    czxid: i64,
}

impl<T> VersionedValue<T> {
    pub(crate) fn new(value: T, stat: &Stat) -> Self {
        VersionedValue {
            value,
            version: stat.version,
            mzxid: stat.mzxid,
            czxid: stat.czxid,
        }
    }

    /// The value.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let count = zk_recipes::SharedCount::new(&client, "/counts/a", 0)?;
    /// let n: i32 = *count.get_versioned_count()?.value();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn value(&self) -> &T {
        &self.value
    }

    /// The value, taken out.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let shared = zk_recipes::SharedValue::new(&client, "/values/a", b"seed".to_vec())?;
    /// let bytes: Vec<u8> = shared.get_versioned_value()?.into_value();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_value(self) -> T {
        self.value
    }

    /// The node's data version when it was read.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let count = zk_recipes::SharedCount::new(&client, "/counts/a", 0)?;
    /// let version = count.get_versioned_count()?.version();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn version(&self) -> i32 {
        self.version
    }

    /// The zxid of the node's last change when it was read (newer reads have
    /// larger ones, even after the version wraps).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let count = zk_recipes::SharedCount::new(&client, "/counts/a", 0)?;
    /// let zxid = count.get_versioned_count()?.mzxid();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn mzxid(&self) -> i64 {
        self.mzxid
    }

    pub(crate) fn base(&self) -> Base {
        Base {
            czxid: self.czxid,
            mzxid: self.mzxid,
            version: self.version,
        }
    }

    pub(crate) fn map<U>(self, f: impl FnOnce(T) -> U) -> VersionedValue<U> {
        VersionedValue {
            value: f(self.value),
            version: self.version,
            mzxid: self.mzxid,
            czxid: self.czxid,
        }
    }
}

/// How an outcome "applied" is known.
///
/// # Examples
///
/// ```
/// use zk_recipes::Proof;
/// assert_ne!(Proof::Reply, Proof::ReadBack);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Proof {
    /// The server's reply to the write said so.
    Reply,
    /// The reply was lost, and the write's own marker (an ephemeral child
    /// created in the write's transaction, see [`crate::atomic`]) was found
    /// on the same session: applied, by this writer. As certain as a reply.
    Marker,
    /// The reply was lost and the marker could not tell (the session changed
    /// before the proof, someone deleted or wrote the writer's kept marker
    /// meanwhile, or the node's ACL refused the marker), and reading
    /// the node back found exactly one change since the writer's read, to
    /// the writer's bytes. The bound: the read cannot tell whose change it
    /// was. Another client that wrote the same bytes from the same version
    /// meanwhile (a counter's increment from the same base) makes both
    /// writers hear "applied" for one change; the server's value is right
    /// either way, and nothing is applied twice. Treat it as unknown when
    /// that matters (ids handed out from a counter).
    ReadBack,
}

/// The outcome of a versioned write ([`SharedValue::try_set_value`],
/// [`SharedCount::try_set_count`](crate::SharedCount::try_set_count)).
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// use zk_recipes::{SharedCount, TrySet};
/// let count = SharedCount::new(&client, "/counts/a", 0)?;
/// count.start()?;
/// let seen = count.get_versioned_count()?;
/// match count.try_set_count(seen.value() + 1, &seen)? {
///     TrySet::Set { version, .. } => println!("now at version {version}"),
///     TrySet::Stale { current } => println!("someone else set it first: {}", current.value()),
///     TrySet::Unknown { read } => println!("reply lost; the node now holds {read:?}"),
///     _ => {}
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a write that was not applied says so only here"]
#[non_exhaustive]
pub enum TrySet<T> {
    /// Written: the node's new version, and how that is known.
    Set {
        /// The node's version after the write.
        version: i32,
        /// The reply, the write's marker, or a read-back after a lost reply.
        proof: Proof,
    },
    /// Not written: the node had moved on from the version given; its
    /// current value.
    Stale {
        /// The value read after the write was refused.
        current: VersionedValue<T>,
    },
    /// The reply was lost and the read-back cannot tell whether the write
    /// was applied (the node changed more than once, or to other bytes, or
    /// was deleted): what it found (`None`: no node, or the read failed).
    /// The write is not retried.
    Unknown {
        /// What the read-back found.
        read: Option<VersionedValue<T>>,
    },
}

/// A change a listener is told of.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// use zk_recipes::{SharedCount, ValueEvent};
/// let count = SharedCount::new(&client, "/counts/a", 0)?;
/// let changes = count.events();
/// count.start()?;
/// if let Ok(ValueEvent::Changed(v)) = changes.recv_timeout(std::time::Duration::from_secs(5)) {
///     println!("now {}", v.value());
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ValueEvent<T> {
    /// The node holds a newer value (a larger mzxid than the last one told).
    Changed(VersionedValue<T>),
    /// The node was deleted; the last value is kept until it comes back.
    Deleted,
    /// The node holds bytes that are not a value of this kind
    /// ([`Error::CorruptValue`]).
    Invalid(Error),
}

type Listener = Box<dyn Fn(&ValueEvent<Vec<u8>>) -> bool + Send>;

struct Shared {
    client: CuratorFramework,
    path: String,
    /// The markers this value's writes keep under its node.
    markers: Markers,
    /// The value known, and its listeners: one lock, so that what is kept
    /// and what is told are in one order (a listener never hears an older
    /// value after a newer one, whichever threads offer them).
    known: Mutex<Known>,
}

struct Known {
    current: Option<VersionedValue<Vec<u8>>>,
    /// Told `Deleted` since the current value.
    deleted: bool,
    listeners: Vec<Listener>,
}

impl Known {
    fn tell(&mut self, e: &ValueEvent<Vec<u8>>) {
        self.listeners.retain(|l| l(e));
    }
}

impl Shared {
    /// Keeps `v` if it is newer than the current value and tells the
    /// listeners, under one lock.
    fn offer(&self, v: VersionedValue<Vec<u8>>) {
        let mut k = self.known.lock();
        if k.current.as_ref().is_some_and(|c| c.mzxid >= v.mzxid) {
            return;
        }
        k.current = Some(v.clone());
        k.deleted = false;
        k.tell(&ValueEvent::Changed(v));
    }

    /// The mzxid of the value known now (0: none).
    fn known_mzxid(&self) -> i64 {
        self.known.lock().current.as_ref().map_or(0, |c| c.mzxid)
    }

    /// Tells `Deleted` for a read that found no node, unless a newer value
    /// came while it was read (the value known then had mzxid `read_from`):
    /// the read may be older than that value; `false` then (read again).
    fn deleted_since(&self, read_from: i64) -> bool {
        let mut k = self.known.lock();
        if k.current.as_ref().map_or(0, |c| c.mzxid) != read_from {
            return false;
        }
        if !k.deleted {
            k.deleted = true;
            k.tell(&ValueEvent::Deleted);
        }
        true
    }

    /// Reads the node, leaving a data watch (or, when it is missing, an
    /// exists watch) that signals `tx`.
    fn read_watched(&self, tx: &Sender<WatchedEvent>) -> std::result::Result<Option<VersionedValue<Vec<u8>>>, ZkError> {
        match self.client.get_data_w(&self.path, tx.clone()) {
            Ok((data, stat)) => Ok(Some(VersionedValue::new(data, &stat))),
            Err(ZkError::NoNode { .. }) => match self.client.check_exists_w(&self.path, tx.clone())? {
                // Created in between: read it (the exists watch fires too).
                Some(_) => self.read_watched(tx),
                None => Ok(None),
            },
            Err(e) => Err(e),
        }
    }
}

/// The proof a write's outcome rests on.
pub(crate) fn proof_of(read_back: bool, marker: bool) -> Proof {
    match (read_back, marker) {
        (true, _) => Proof::ReadBack,
        (false, true) => Proof::Marker,
        (false, false) => Proof::Reply,
    }
}

/// How long a failed re-read waits before the next (a closed client or
/// `close()` ends the wait).
const REREAD_PAUSE: Duration = Duration::from_millis(200);

/// A shared byte value in one node (Curator's `SharedValue`).
///
/// Reads ([`get_value`](SharedValue::get_value)) give the latest value the
/// watch brought (as Curator's do); writes go to the server. Clones share
/// this value (one thread, one set of listeners); it closes at
/// [`close`](SharedValue::close) or when the last clone is dropped.
///
/// # Examples
///
/// ```
/// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
/// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
/// # client.block_until_connected(std::time::Duration::from_secs(10))?;
/// use zk_recipes::{SharedValue, TrySet};
/// let shared = SharedValue::new(&client, "/config/mode", b"blue".to_vec())?;
/// shared.start()?;
/// let seen = shared.get_versioned_value()?;
/// assert_eq!(seen.value(), b"blue");
/// assert!(matches!(shared.try_set_value(b"green".to_vec(), &seen)?, TrySet::Set { .. }));
/// // The same version again is stale now.
/// assert!(matches!(shared.try_set_value(b"red".to_vec(), &seen)?, TrySet::Stale { .. }));
/// shared.close();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct SharedValue {
    v: Arc<Value>,
}

/// One shared value, whatever the number of its handles.
struct Value {
    shared: Arc<Shared>,
    seed: Vec<u8>,
    lifecycle: Lifecycle<Worker>,
}

impl Drop for Value {
    /// The last handle went: the thread is told to end (not waited for).
    fn drop(&mut self) {
        self.lifecycle.with(|w| w.map(Worker::cancel));
    }
}

impl std::fmt::Debug for SharedValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedValue")
            .field("path", &self.v.shared.path)
            .field("current", &self.v.shared.known.lock().current)
            .finish()
    }
}

impl SharedValue {
    /// A shared value at `path`, created with `seed` at
    /// [`start`](SharedValue::start) if missing.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] with `InvalidPath` for a bad path;
    /// [`Error::InvalidArgument`] for the root.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let shared = zk_recipes::SharedValue::new(&client, "/config/mode", b"blue".to_vec())?;
    /// assert!(zk_recipes::SharedValue::new(&client, "relative", Vec::new()).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(client: &CuratorFramework, path: &str, seed: impl Into<Vec<u8>>) -> Result<Self> {
        check_path(path)?;
        Ok(SharedValue::named("SharedValue", client, path, seed.into()))
    }

    /// A shared value whose errors name `recipe` (a [`SharedCount`] is one).
    pub(crate) fn named(recipe: &'static str, client: &CuratorFramework, path: &str, seed: Vec<u8>) -> Self {
        let v = Value {
            shared: Arc::new(Shared {
                client: client.clone(),
                path: path.to_string(),
                markers: Markers::new(client),
                known: Mutex::new(Known {
                    current: None,
                    deleted: false,
                    listeners: Vec::new(),
                }),
            }),
            seed,
            lifecycle: Lifecycle::new(recipe, path),
        };
        SharedValue { v: Arc::new(v) }
    }

    /// The path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let shared = zk_recipes::SharedValue::new(&client, "/config/mode", Vec::new())?;
    /// assert_eq!(shared.path(), "/config/mode");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn path(&self) -> &str {
        &self.v.shared.path
    }

    /// Creates the node with the seed if it is missing (container parents;
    /// an existing node is kept, whatever it holds), reads it with a watch,
    /// and starts the thread that keeps the value current.
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyStarted`], [`Error::Closed`]; the create's
    /// or the read's error ([`Error::ZooKeeper`]), after the client's
    /// retries, and [`Error::SpawnFailed`]; then it is not started and may
    /// be started again.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let shared = zk_recipes::SharedValue::new(&client, "/config/mode", b"blue".to_vec())?;
    /// shared.start()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start(&self) -> Result<()> {
        self.v.lifecycle.start(|| self.begin())
    }

    /// The start's work, under the lifecycle's lock: the create, the first
    /// read, the thread.
    fn begin(&self) -> Result<Worker> {
        let sh = &self.v.shared;
        match sh
            .client
            .create()
            .creating_parent_containers_if_needed()
            .with_mode(CreateMode::Persistent)
            .with_data(self.v.seed.clone())
            .for_path(&sh.path)
        {
            Ok(_) | Err(ZkError::NodeExists { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        let (tx, rx) = crossbeam_channel::bounded::<WatchedEvent>(1);
        let from = sh.known_mzxid();
        let first = sh.read_watched(&tx)?;
        drop(tx);
        match first {
            Some(v) => sh.offer(v),
            None => {
                sh.deleted_since(from);
            }
        }
        let states = sh.client.state_receiver();
        let closing = sh.client.recipe().close_signal();
        let shared = self.v.shared.clone();
        let name = format!("zk-shared-value {}", sh.path);
        Worker::spawn(self.v.lifecycle.recipe(), &sh.path, &name, move |cancel| {
            follow(&shared, rx, states, closing, cancel)
        })
    }

    /// The latest value known (from `start`, the watch, or this client's
    /// writes).
    ///
    /// # Errors
    ///
    /// [`Error::NotStarted`], [`Error::Closed`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let shared = zk_recipes::SharedValue::new(&client, "/config/mode", b"blue".to_vec())?;
    /// shared.start()?;
    /// let bytes = shared.get_value()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_value(&self) -> Result<Vec<u8>> {
        self.get_versioned_value().map(VersionedValue::into_value)
    }

    /// The latest value known, with its version and zxids: what a
    /// [`try_set_value`](SharedValue::try_set_value) takes.
    ///
    /// # Errors
    ///
    /// [`Error::NotStarted`] (also while the node has not been seen
    /// yet), [`Error::Closed`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let shared = zk_recipes::SharedValue::new(&client, "/config/mode", b"blue".to_vec())?;
    /// shared.start()?;
    /// let v = shared.get_versioned_value()?;
    /// println!("{:?} at version {}", v.value(), v.version());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_versioned_value(&self) -> Result<VersionedValue<Vec<u8>>> {
        self.usable()?;
        let current = self.v.shared.known.lock().current.clone();
        current.ok_or_else(|| self.v.lifecycle.error(crate::core::Stage::New))
    }

    /// Sets the value whatever it is now (an unversioned write, as Curator's
    /// `setValue`); creates the node if it is missing.
    ///
    /// # Errors
    ///
    /// [`Error::NotStarted`], [`Error::Closed`]; the write's
    /// error after the client's retries.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let shared = zk_recipes::SharedValue::new(&client, "/config/mode", b"blue".to_vec())?;
    /// shared.start()?;
    /// shared.set_value(b"green".to_vec())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_value(&self, value: impl Into<Vec<u8>>) -> Result<()> {
        self.usable()?;
        let value = value.into();
        let sh = &self.v.shared;
        let stat = match sh.client.set_data(&sh.path, value.clone(), None) {
            Ok(stat) => stat,
            Err(ZkError::NoNode { .. }) => {
                match sh
                    .client
                    .create()
                    .creating_parent_containers_if_needed()
                    .with_data(value.clone())
                    .for_path_with_stat(&sh.path)
                {
                    Ok((_, stat)) => stat,
                    Err(ZkError::NodeExists { .. }) => sh.client.set_data(&sh.path, value.clone(), None)?,
                    Err(e) => return Err(e.into()),
                }
            }
            Err(e) => return Err(e.into()),
        };
        sh.offer(VersionedValue::new(value, &stat));
        Ok(())
    }

    /// Sets the value if the node is still at `expected`'s version: one
    /// versioned write, applied at most once. A lost reply is settled by
    /// the write's marker ([`TrySet`], [`Proof::Marker`]; after a new
    /// session, a read-back), never by sending the write again blindly.
    ///
    /// # Errors
    ///
    /// [`Error::NotStarted`], [`Error::Closed`]; `NoNode` when the
    /// node was deleted; the write's error when it was certainly not
    /// applied (retries ran out and the node is proven unchanged).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let shared = zk_recipes::SharedValue::new(&client, "/config/mode", b"blue".to_vec())?;
    /// shared.start()?;
    /// let seen = shared.get_versioned_value()?;
    /// let outcome = shared.try_set_value(b"green".to_vec(), &seen)?;
    /// # let _ = outcome;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_set_value(
        &self,
        value: impl Into<Vec<u8>>,
        expected: &VersionedValue<Vec<u8>>,
    ) -> Result<TrySet<Vec<u8>>> {
        self.usable()?;
        let value = value.into();
        let sh = &self.v.shared;
        match marked::set_versioned(&sh.client, &sh.markers, &sh.path, &value, &expected.base())? {
            Written::Applied {
                stat,
                read_back,
                marker,
            } => {
                let version = stat.version;
                sh.offer(VersionedValue::new(value, &stat));
                Ok(TrySet::Set {
                    version,
                    proof: proof_of(read_back, marker),
                })
            }
            Written::Conflict => {
                let (data, stat) = sh.client.get_data(&sh.path)?;
                let current = VersionedValue::new(data, &stat);
                sh.offer(current.clone());
                Ok(TrySet::Stale { current })
            }
            Written::Missing => Err(ZkError::NoNode { path: sh.path.clone() }.into()),
            Written::Unknown { read } => Ok(TrySet::Unknown {
                read: read.map(|(d, s)| VersionedValue::new(d, &s)),
            }),
        }
    }

    /// A channel of the changes from now on: each newer value (by mzxid,
    /// whoever wrote it, this client included), the node's deletion.
    /// Dropping the receiver unsubscribes. The channel disconnects at
    /// [`close`](SharedValue::close).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let shared = zk_recipes::SharedValue::new(&client, "/config/mode", b"blue".to_vec())?;
    /// let changes = shared.events();
    /// shared.start()?;
    /// for change in changes.try_iter() {
    ///     println!("{change:?}");
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn events(&self) -> Receiver<ValueEvent<Vec<u8>>> {
        self.events_with(|e| e.clone())
    }

    /// The old name of [`events`](Self::events).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let shared = zk_recipes::SharedValue::new(&client, "/config/mode", b"blue".to_vec())?;
    /// #[allow(deprecated)]
    /// let changes = shared.events();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[deprecated(since = "0.1.0", note = "every recipe's event channel is `events()`")]
    pub fn listen(&self) -> Receiver<ValueEvent<Vec<u8>>> {
        self.events()
    }

    pub(crate) fn events_with<T: Send + 'static>(
        &self,
        convert: impl Fn(&ValueEvent<Vec<u8>>) -> ValueEvent<T> + Send + 'static,
    ) -> Receiver<ValueEvent<T>> {
        let (tx, rx) = crossbeam_channel::unbounded();
        if self.v.lifecycle.is_closed() {
            return rx; // disconnected at once
        }
        self.v
            .shared
            .known
            .lock()
            .listeners
            .push(Box::new(move |e| tx.send(convert(e)).is_ok()));
        rx
    }

    /// Stops following the node and disconnects the listeners' channels;
    /// leaves the node (its kept write markers are deleted). Idempotent. The
    /// thread is waited for at most 2 s.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let shared = zk_recipes::SharedValue::new(&client, "/config/mode", b"blue".to_vec())?;
    /// shared.start()?;
    /// shared.close();
    /// shared.close();
    /// assert!(shared.get_value().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&self) {
        if let Some(w) = self.v.lifecycle.close() {
            w.stop();
        }
        self.v.shared.known.lock().listeners.clear();
        self.v.shared.markers.release();
    }

    fn usable(&self) -> Result<()> {
        self.v.lifecycle.check()
    }
}

/// The background thread: waits for the watch, a connection state, the
/// client's close or the cancel; re-reads with a new watch.
fn follow(
    sh: &Shared,
    mut rx: Receiver<WatchedEvent>,
    states: Receiver<ConnectionState>,
    closing: Receiver<()>,
    cancel: Receiver<()>,
) {
    loop {
        crossbeam_channel::select! {
            recv(rx) -> _ => {}
            recv(states) -> s => match s {
                Ok(s) if s.is_connected() => {}
                Ok(_) => continue,
                Err(_) => return,
            },
            recv(closing) -> _ => return,
            recv(cancel) -> _ => return,
        }
        // Re-read with a fresh watch (an older one firing later only
        // signals a dropped channel). Only the watch holds the sender: a
        // watch dropped unfired (a session's end) disconnects the channel,
        // which wakes this loop for a re-read too.
        loop {
            let (tx, r) = crossbeam_channel::bounded::<WatchedEvent>(1);
            rx = r;
            let from = sh.known_mzxid();
            match sh.read_watched(&tx) {
                Ok(Some(v)) => sh.offer(v),
                // A newer value came while it was read: read again.
                Ok(None) if !sh.deleted_since(from) => continue,
                Ok(None) => {}
                Err(ZkError::Closed) => return,
                Err(e) => {
                    log::debug!("shared value {}: re-read failed ({e}); again shortly", sh.path);
                    crossbeam_channel::select! {
                        recv(closing) -> _ => return,
                        recv(cancel) -> _ => return,
                        default(REREAD_PAUSE) => continue,
                    }
                }
            }
            break;
        }
    }
}

pub(crate) fn check_path(path: &str) -> Result<()> {
    validate_path(path, false).map_err(ZkError::from)?;
    if path == "/" {
        return Err(Error::InvalidArgument(
            "a shared value cannot live at the root path".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::count::count_of;

    #[test]
    fn a_count_is_exactly_four_big_endian_bytes() {
        assert_eq!(count_of("/c", &[0, 0, 1, 2]).unwrap(), 258);
        assert_eq!(count_of("/c", &[0xff, 0xff, 0xff, 0xfe]).unwrap(), -2);
        for bad in [&[][..], &[1, 2, 3], &[0, 0, 0, 1, 0]] {
            assert_eq!(
                count_of("/c", bad),
                Err(Error::CorruptValue {
                    path: "/c".into(),
                    expected: 4,
                    bytes: bad.to_vec()
                })
            );
        }
    }
}
