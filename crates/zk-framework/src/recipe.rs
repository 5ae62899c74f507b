//! The managed client's API for recipe authors: what `zk-recipes` builds its
//! locks and elections on, documented as a contract rather than hidden. It is
//! one handle, [`Recipe`], reached through [`CuratorFramework::recipe`]
//! (`client.recipe().session_generation()`), beside the user's API of
//! [`CuratorFramework`] (nodes, watches, connection states). Its methods were
//! [`CuratorFramework`]'s before, where they stay as deprecated delegations.
//!
//! * **Session generation** ([`Recipe::session_generation`]): 1
//!   for the first session, one more for each new session after an expiry.
//!   Record it when you create an ephemeral node: while it is the same, the
//!   node can still exist; once it has moved on, the node went with its
//!   session.
//! * **Connection epoch** ([`Recipe::connection_epoch`]): moves on
//!   whenever the client may have missed something the server said (a
//!   reconnect, a stale spell). A fact learnt in one epoch (a node exists and
//!   is yours) holds, for a recipe that watches for its change, while the
//!   epoch lasts; after a move, ask again before trusting it. A reconnect
//!   alone proves nothing: the watches it re-registers fire one round trip
//!   later.
//! * **The marked write** ([`Recipe::marked_write`]): a transaction that
//!   carries its own marker (an ephemeral node it creates, or a kept one it
//!   writes at its version), applied at most once; after a lost reply
//!   ([`crate::Error::may_have_applied`], the one list of doubtful errors)
//!   the marker settles it on the same session, read after a `sync` on the
//!   connection it is read on, so that no server lagging the write can
//!   answer; after a new session, the read-back ([`Settled::ReadBack`]),
//!   synced too. Counters, shared values, the queue build on it.
//! * **Synced reads** ([`Recipe::sync_then_read`],
//!   [`crate::Client::sync_then_read`]): a `sync` and reads on one
//!   connection, answered by a server that has every write committed before
//!   the sync (the protected create's lookup after a lost reply is one).
//! * **Creates that list** ([`CreateBuilder::for_path_listing_parent`],
//!   [`CreateBuilder::for_paths_together`]): a create (or a group of creates
//!   in one transaction) and the listing of its parent in one round trip, so
//!   that a queue recipe decides whether its node is first without a second
//!   one; with [`CreateBuilder::with_protection`] a create whose reply was
//!   lost is found again by its `_c_<uuid>-` prefix, or cleaned up.
//! * **Detached calls** ([`Recipe::exists_detached`],
//!   [`Recipe::exists_w_detached`], [`Recipe::delete_detached`],
//!   [`Recipe::get_data_detached`], [`Recipe::get_children_detached`]): the
//!   request is written and the call returns; the reply is handed to a callback on the client's I/O
//!   thread, in order with the session's notifications. Callbacks and
//!   watchers only signal (a `try_send`, an atomic): they never block and
//!   never call the client.
//! * **Per-client state** ([`Recipe::extension`]): one value per
//!   type, kept by the client and shared by its clones, so that two clients
//!   of one process share nothing (no process-wide statics).
//! * **The close** ([`Recipe::close_signal`]): a channel that
//!   disconnects when the client closes; select on it beside a watch and a
//!   deadline so that no wait outlives the client.
//! * **Close hooks** ([`Recipe::on_close`], [`CloseHook`]): a
//!   signal run by the thread that closes the client, at once after every
//!   `close_signal()` receiver has disconnected, for a recipe whose own
//!   thread is busy elsewhere (a selector's thread runs its leader's work) and
//!   must still hear the close at once. It only signals, as a watcher does.
//! * **Retries** ([`Recipe::call_with_retry`], [`Recipe::pause`]): the
//!   client's own retry loop around any call of the raw client, and the pause
//!   its retries take, which ends at once when the client closes.
//! * **Paths** ([`Recipe::fix_path`], [`Recipe::unfix_path`]): the namespace
//!   applied to a path and taken off one the server reports.
//! * **Work off the caller's thread** ([`Recipe::delete_in_background`],
//!   [`Recipe::schedule`]): a delete retried until it is done, and a job run at
//!   its time on the client's executor.
//! * **Deadlines** ([`CuratorFramework::with_deadline`]): a handle whose
//!   every operation (the wait for a connection, the retry pauses, each
//!   reply) ends by the deadline.
//! * **Node keys** ([`Recipe::node_key`], [`NodeKey`]): a node as
//!   the server names it (the client's namespace applied), to key what a
//!   recipe records about nodes (figures per lock, nodes granted, a
//!   canonical order of locks) so that two clients with different
//!   namespaces naming one node agree, and a user's path cannot be mistaken
//!   for the server's.
//!
//! # Examples
//!
//! A tiny recipe: an ephemeral node that knows whether it may still exist
//! and whether it was proven in the current connection epoch.
//!
//! ```
//! # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
//! # let client = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
//! # client.block_until_connected(std::time::Duration::from_secs(10))?;
//! use zk_framework::CreateMode;
//!
//! let generation = client.recipe().session_generation();
//! let epoch = client.recipe().connection_epoch();
//! let created = client
//!     .create()
//!     .creating_parent_containers_if_needed()
//!     .with_protection()
//!     .with_mode(CreateMode::EphemeralSequential)
//!     .for_path_listing_parent("/my-recipe/member-")?;
//! let first = created.siblings.as_ref().is_some_and(|kids| kids.len() == 1);
//! // Trusted while both hold; after a move of the epoch, prove it again.
//! let trusted = client.recipe().session_generation() == generation && client.recipe().connection_epoch() == epoch;
//! assert!(first && trusted);
//! let (tx, rx) = crossbeam_channel::bounded(1);
//! client.recipe().exists_detached(&created.path, move |r| {
//!     let _ = tx.try_send(r); // only signal
//! })?;
//! let stat = rx.recv()??.expect("still there");
//! assert_eq!(stat.ephemeral_owner, client.session_id());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod handle;
mod key;
mod marked;
// Last, so that its deprecated block comes last on `CuratorFramework`'s page.
mod deprecated;

pub use crate::framework::CloseHook;
#[cfg(doc)]
use crate::framework::{CreateBuilder, CuratorFramework};
pub use handle::Recipe;
pub use key::NodeKey;
pub use marked::{Applied, KeptMarker, MarkedWrite, Marker, Settled, Unproven, WriteProof};
