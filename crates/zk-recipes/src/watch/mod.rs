//! `PersistentWatcher`: a persistent (optionally recursive) watch on a path
//! (ZooKeeper 3.6+), kept through reconnects and added again on a new
//! session, with its events on a channel (Curator's `PersistentWatcher`).
//! It is the one module that keeps a persistent watch: a
//! [`crate::cache::CuratorCache`] is built on one.
//!
//! * **The client's order.** Node events and connection states are told in
//!   the one order the client delivered them on its connection: the
//!   watcher hears both from its registration (a persistent watch gets the
//!   session's states with its node events), on the client's I/O thread, and
//!   tells each at once. A [`WatcherEvent::Suspended`] is never told after a
//!   node event that came later, and a [`WatcherEvent::Reset`] comes before
//!   every node event of the connection it announces.
//! * **Resets.** The server keeps a persistent watch through a reconnect of
//!   the same session but announces nothing that changed while the
//!   connection was down, and a new session has no watch at all. So the
//!   channel says when the watch is in place again ([`WatcherEvent::Reset`],
//!   told once the server has proven it: the `addWatch` answered, or after a
//!   reconnect an answer on the new connection): whoever needs the changes
//!   made in between reads again then (a [`crate::cache::CuratorCache`]
//!   does this for you).
//! * **Closing** removes the watch from the server. On ZooKeeper 3.6-3.8
//!   that takes a `removeWatches` of type `Any`, which also takes this
//!   client's one-shot watches on the path; the client sets those again at
//!   once ([`zk_framework::Client::remove_watch`]), so a lock waiter or a
//!   barrier watching the same path of the same client still hears its
//!   change.
//!
//! Clones share one watcher; it closes at `close()` or when the last clone
//! is dropped.
//!
//! # Examples
//!
//! ```
//! # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
//! # let client = zk_framework::CuratorFramework::builder().connect_string(&server.connect_string()).build()?;
//! use std::time::Duration;
//! use zk_recipes::{PersistentWatcher, WatcherEvent};
//!
//! let watcher = PersistentWatcher::new(&client, "/jobs", true)?;
//! let events = watcher.events();
//! watcher.start()?;
//! assert!(matches!(events.recv_timeout(Duration::from_secs(10))?, WatcherEvent::Reset { .. }));
//! client.create().creating_parents_if_needed().for_path("/jobs/a")?;
//! let ev = events.recv_timeout(Duration::from_secs(10))?;
//! assert!(matches!(ev, WatcherEvent::Node { ref path, .. } if path == "/jobs"));
//! watcher.close();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub(crate) mod event;
pub(crate) mod keeper;
pub(crate) mod watcher;

// The earlier paths of this family's items, as deprecated aliases of the
// crate root's (one path per item).

/// The earlier path of [`crate::PersistentWatcher`].
#[deprecated(
    since = "0.1.0",
    note = "import it from the crate root: `zk_recipes::PersistentWatcher`"
)]
pub type PersistentWatcher = crate::watch::watcher::PersistentWatcher;
/// The earlier path of [`crate::WatcherEvent`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::WatcherEvent`")]
pub type WatcherEvent = crate::watch::event::WatcherEvent;
