//! The node's handle ([`PersistentNode`]): start, close, waits, data.

use crate::core::{Stage, Worker};
use crate::error::{Error, Result};
use crate::nodes::registration::{AbsentReason, Registration};
use crate::nodes::state::{Fact, Inner};
use crossbeam_channel::Receiver;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A node kept in place (Curator's `PersistentNode`): created at
/// [`start`](Self::start), re-created after a session loss, after someone
/// deletes it and when its parent vanishes, with its data kept across
/// re-creations; its [`registration`](Self::registration) says honestly
/// whether it is in place (see the [family page](crate::nodes)), and every change is
/// told on [`events`](Self::events). A close leaves nothing behind, not even
/// what a create in flight at `close()` makes (see the
/// [family page](crate::nodes#what-a-close-leaves)). Clones share this node; it
/// closes at `close()` or when the last clone is dropped.
///
/// # Examples
///
/// ```
/// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
/// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
/// # client.block_until_connected(std::time::Duration::from_secs(10))?;
/// use std::time::Duration;
/// use zk_framework::CreateMode;
/// use zk_recipes::PersistentNode;
///
/// let node = PersistentNode::builder(&client, "/services/api/host-1", CreateMode::Ephemeral)
///     .data(b"10.0.0.1:8080".to_vec())
///     .build()?;
/// node.start()?;
/// assert!(node.wait_for_initial_create_for(Duration::from_secs(10))?);
/// assert!(node.registration().is_registered());
/// node.close()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct PersistentNode {
    pub(crate) inner: Arc<Inner>,
    /// Shared by the clones only (the node's thread holds `inner`): the last
    /// one dropped closes the node.
    _owner: Arc<Owner>,
}

/// Closes the node when the last clone goes.
struct Owner(Arc<Inner>);

impl Drop for Owner {
    fn drop(&mut self) {
        if self.0.state.lock().lifecycle == Stage::Started {
            let _ = self.0.close();
        }
    }
}

impl std::fmt::Debug for PersistentNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PersistentNode")
            .field("path", &self.inner.spec.path)
            .field("mode", &self.inner.spec.mode)
            .field("registration", &self.registration())
            .finish()
    }
}

impl PersistentNode {
    pub(crate) fn from_inner(inner: Arc<Inner>) -> PersistentNode {
        PersistentNode {
            _owner: Arc::new(Owner(inner.clone())),
            inner,
        }
    }

    /// Starts the node's thread, which creates the node (waiting for a
    /// connection) and keeps it in place. Returns at once.
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyStarted`] when started before;
    /// [`Error::Closed`] after `close()`; [`Error::SpawnFailed`] when the
    /// system refuses a thread (the node is closed then).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::PersistentNode::builder(&client, "/a", zk_framework::CreateMode::Ephemeral).build()?;
    /// n.start()?;
    /// assert!(n.start().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start(&self) -> Result<()> {
        {
            let mut st = self.inner.state.lock();
            let spec = &self.inner.spec;
            st.lifecycle.start(spec.recipe, &spec.path)?;
        }
        let inner = self.inner.clone();
        let spec = &self.inner.spec;
        match Worker::spawn(spec.recipe, &spec.path, "persistent-node", move |cancel| {
            inner.run(&cancel)
        }) {
            Ok(w) => {
                *self.inner.worker.lock() = Some(w);
                self.inner.publish();
                Ok(())
            }
            Err(e) => {
                let mut st = self.inner.state.lock();
                st.lifecycle = Stage::Closed;
                self.inner.publish_locked(&mut st);
                st.subscribers.close();
                st.members.close();
                Err(e)
            }
        }
    }

    /// Leaves, for every clone: stops the node's thread and deletes the
    /// node (only a node this client created or showed ours: an ephemeral
    /// node of another session is never deleted; a delete that fails goes on
    /// in the background as a guaranteed delete). No create is begun once
    /// the close has begun, and a create in flight is deleted by the thread
    /// that gets its reply (see the [family page](crate::nodes#what-a-close-leaves)).
    /// Every event channel ends, after `Absent { Closed }`. Returns within
    /// the stop bound (2 s); a delete not through by then goes on in the
    /// background.
    ///
    /// # Errors
    ///
    /// [`Error::NotStarted`] when never started; [`Error::Closed`] when
    /// closed before.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::PersistentNode::builder(&client, "/a", zk_framework::CreateMode::Ephemeral).build()?;
    /// n.start()?;
    /// n.close()?;
    /// assert!(n.close().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&self) -> Result<()> {
        self.inner.close()
    }

    /// Waits until the node was created (or our node found in place) once
    /// ever: `Ok(true)` from then on, even while the node is gone again (a
    /// session expiry, a delete); `Ok(false)` when `timeout` passes first.
    /// To wait until the node is in place now, use
    /// [`wait_registered_for`](Self::wait_registered_for).
    ///
    /// # Errors
    ///
    /// [`Error::NotStarted`]; [`Error::Closed`] (also when closed while
    /// waiting); [`Error::TtlNotEnabled`] when the server refuses TTL nodes.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::PersistentNode::builder(&client, "/a", zk_framework::CreateMode::Ephemeral).build()?;
    /// n.start()?;
    /// if !n.wait_for_initial_create_for(std::time::Duration::from_secs(5))? { eprintln!("not yet") }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_for_initial_create_for(&self, timeout: Duration) -> Result<bool> {
        self.wait_for_initial_create_until_opt(Instant::now().checked_add(timeout))
    }

    /// As [`wait_for_initial_create_for`](Self::wait_for_initial_create_for),
    /// until `deadline`.
    ///
    /// # Errors
    ///
    /// As [`wait_for_initial_create_for`](Self::wait_for_initial_create_for).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::PersistentNode::builder(&client, "/a", zk_framework::CreateMode::Ephemeral).build()?;
    /// n.start()?;
    /// let done = n.wait_for_initial_create_until(std::time::Instant::now() + std::time::Duration::from_secs(5))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_for_initial_create_until(&self, deadline: Instant) -> Result<bool> {
        self.wait_for_initial_create_until_opt(Some(deadline))
    }

    fn wait_for_initial_create_until_opt(&self, deadline: Option<Instant>) -> Result<bool> {
        let inner = &self.inner;
        let mut st = inner.state.lock();
        loop {
            st.lifecycle.check(inner.spec.recipe, &inner.spec.path)?;
            if st.created_once {
                return Ok(true);
            }
            if st.fact == Fact::Absent(AbsentReason::TtlNotEnabled) {
                return Err(Error::TtlNotEnabled {
                    path: inner.spec.path.clone(),
                });
            }
            match deadline {
                Some(d) if d <= Instant::now() => return Ok(false),
                Some(d) => {
                    let _ = inner.changed.wait_until(&mut st, d);
                }
                None => inner.changed.wait(&mut st),
            }
        }
    }

    /// Waits until the node is registered now (its
    /// [`registration`](Self::registration) says
    /// [`Registered`](Registration::Registered)): `Ok(true)` then,
    /// `Ok(false)` when `timeout` passes first. Unlike
    /// [`wait_for_initial_create_for`](Self::wait_for_initial_create_for),
    /// a node created once and gone since (deleted, its session expired, the
    /// connection down or not yet proven) is waited for again.
    ///
    /// # Errors
    ///
    /// [`Error::NotStarted`]; [`Error::Closed`] (also when closed while
    /// waiting); [`Error::TtlNotEnabled`] when the server refuses TTL nodes.
    ///
    /// # Examples
    ///
    /// ```
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// # client.block_until_connected(std::time::Duration::from_secs(10))?;
    /// use std::time::Duration;
    /// let n = zk_recipes::PersistentNode::builder(&client, "/a", zk_framework::CreateMode::Ephemeral).build()?;
    /// n.start()?;
    /// assert!(n.wait_registered_for(Duration::from_secs(10))?);
    /// client.delete().for_path("/a")?; // gone: waited for again until it is back
    /// assert!(n.wait_registered_for(Duration::from_secs(10))?);
    /// assert!(n.registration().is_registered());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_registered_for(&self, timeout: Duration) -> Result<bool> {
        self.wait_registered_until_opt(Instant::now().checked_add(timeout))
    }

    /// As [`wait_registered_for`](Self::wait_registered_for), until
    /// `deadline`.
    ///
    /// # Errors
    ///
    /// As [`wait_registered_for`](Self::wait_registered_for).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::PersistentNode::builder(&client, "/a", zk_framework::CreateMode::Ephemeral).build()?;
    /// n.start()?;
    /// let now = n.wait_registered_until(std::time::Instant::now() + std::time::Duration::from_secs(5))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_registered_until(&self, deadline: Instant) -> Result<bool> {
        self.wait_registered_until_opt(Some(deadline))
    }

    fn wait_registered_until_opt(&self, deadline: Option<Instant>) -> Result<bool> {
        let inner = &self.inner;
        let mut st = inner.state.lock();
        loop {
            st.lifecycle.check(inner.spec.recipe, &inner.spec.path)?;
            // Drawn from the client's state now: a change of it (a
            // reconnect, the health) publishes and wakes this wait.
            if inner.registration(&st).is_registered() {
                return Ok(true);
            }
            if st.fact == Fact::Absent(AbsentReason::TtlNotEnabled) {
                return Err(Error::TtlNotEnabled {
                    path: inner.spec.path.clone(),
                });
            }
            match deadline {
                Some(d) if d <= Instant::now() => return Ok(false),
                Some(d) => {
                    let _ = inner.changed.wait_until(&mut st, d);
                }
                None => inner.changed.wait(&mut st),
            }
        }
    }

    /// Whether the node is in place now (see the [family page](crate::nodes)),
    /// answered locally.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::PersistentNode::builder(&client, "/a", zk_framework::CreateMode::Ephemeral).build()?;
    /// println!("{:?}", n.registration());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn registration(&self) -> Registration {
        self.inner.registration(&self.inner.state.lock())
    }

    /// Every change of [`registration`](Self::registration) from now on, in
    /// order, starting with where it stands; the channel ends at close (after
    /// `Absent { Closed }`; one asked for after the close is ended at once).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::PersistentNode::builder(&client, "/a", zk_framework::CreateMode::Ephemeral).build()?;
    /// let events = n.events();
    /// n.start()?;
    /// println!("{:?}", events.recv()?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn events(&self) -> Receiver<Registration> {
        let mut st = self.inner.state.lock();
        let now = self.inner.registration(&st);
        st.subscribers.subscribe_with(now)
    }

    /// Sets the node's data: kept for every re-creation, and written to the
    /// node in place by the node's thread at once (an unversioned write,
    /// as Curator's). Before the first create, it is the data created with.
    ///
    /// # Errors
    ///
    /// [`Error::Closed`] after `close()`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::PersistentNode::builder(&client, "/a", zk_framework::CreateMode::Ephemeral).build()?;
    /// n.set_data(b"v2".to_vec())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_data(&self, data: Vec<u8>) -> Result<()> {
        let mut st = self.inner.state.lock();
        if st.lifecycle == Stage::Closed {
            return Err(self.inner.closed_error());
        }
        st.data = data;
        st.data_dirty = true;
        drop(st);
        let _ = self.inner.wake.0.try_send(());
        Ok(())
    }

    /// The data kept for the node.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::PersistentNode::builder(&client, "/a", zk_framework::CreateMode::Ephemeral)
    ///     .data(b"x".to_vec())
    ///     .build()?;
    /// assert_eq!(n.data(), b"x");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn data(&self) -> Vec<u8> {
        self.inner.state.lock().data.clone()
    }

    /// The node's actual path once created (a sequential or protected
    /// node's full name); `None` before.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::PersistentNode::builder(&client, "/a", zk_framework::CreateMode::Ephemeral).build()?;
    /// assert_eq!(n.actual_path(), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn actual_path(&self) -> Option<String> {
        self.inner.state.lock().path.clone()
    }

    /// How many creates succeeded so far (the first and every re-creation).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let n = zk_recipes::PersistentNode::builder(&client, "/a", zk_framework::CreateMode::Ephemeral).build()?;
    /// assert_eq!(n.creates(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn creates(&self) -> u64 {
        self.inner.state.lock().creates
    }
}
