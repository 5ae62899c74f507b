//! A synchronous ZooKeeper client whose sessions survive faults.
//!
//! One [`Client`] handle (cheap to clone, `Send + Sync`) is shared by any number of
//! threads. Requests are pipelined over one TCP connection: each caller writes
//! its own request and waits for its own reply; replies are matched to the FIFO
//! of in-flight requests.
//!
//! # Session rules (those of the Java 3.8 client)
//!
//! * [`Client::connect`] parses and validates, starts two threads (I/O and
//!   events) and returns at once; the first connection is made in the background
//!   ([`Client::wait_connected`] waits for it).
//! * Each connection attempt (TCP connect + handshake) to one address is bounded
//!   by `min(connect_timeout, session timeout)`, so a host that drops SYNs or
//!   never answers the handshake is skipped. Hosts are shuffled and tried in
//!   turn; after a full round of failures the client pauses (exponential
//!   backoff, 100 ms doubling up to 1 s), so it never spins.
//! * Connected, with negotiated session timeout `T`: the read timeout is `2T/3`
//!   (nothing received for that long ⇒ the connection is dead); a ping goes out
//!   when nothing has been sent for `2T/9`, also when the client only receives
//!   events.
//! * When the connection dies (read timeout, EOF, error, a garbage or
//!   out-of-order frame), every in-flight call fails at once with
//!   [`Error::ConnectionLoss`](crate::error::Error::ConnectionLoss), a [`SessionEvent::Disconnected`] is sent, and the
//!   client reattaches with its session id, password and last zxid. Calls made
//!   while disconnected fail fast with `ConnectionLoss`; they are never queued.
//! * Expiry is known only from the server (a ConnectResponse with timeout ≤ 0),
//!   never guessed from the client's clock. Then the handle is dead: state
//!   [`ClientState::Expired`], [`SessionEvent::Expired`], and every pending and
//!   later call fails with [`Error::SessionExpired`](crate::error::Error::SessionExpired). A new session needs a new
//!   `Client`.
//! * After a reconnect the client sends its credentials, then SetWatches with
//!   every still-registered watch and `relativeZxid` = the last zxid seen, before
//!   any user request; the server fires what was missed.
//!
//! # Time bounds
//!
//! * A call never blocks longer than the read timeout plus the connect timeout
//!   (`2T/3 + connect_timeout`, using the requested `T` before the first
//!   connection) plus scheduling noise; when that bound passes without a reply it
//!   returns [`Error::OperationTimeout`](crate::error::Error::OperationTimeout) and the connection is dropped (the
//!   session survives). In practice a dead connection is noticed within the read
//!   timeout, and a dropped reply within about 250 ms (see the next point).
//! * A reply 250 ms late makes its caller send a ping, once. The ping's reply
//!   comes in order behind the late one: a dropped reply is then noticed (the
//!   ping's reply overtakes it; the connection is dropped and the call fails
//!   with `ConnectionLoss`), and a server that holds a reply until it next hears
//!   from a client (Apache ZooKeeper 3.8 did, for seconds, on an ensemble under
//!   load) lets it go.
//! * [`Client::close`] (and dropping the last handle) takes at most about 1.5 s:
//!   up to 1 s for the closeSession reply, then up to 0.5 s to join the threads
//!   (a thread still busy, e.g. in a connect attempt or a user watcher, is
//!   detached and ends on its own).
//!
//! # Threads and the request path
//!
//! Each client has an I/O thread (connects, reads and dispatches replies, pings,
//! runs the watchers that only signal) and an event thread (runs the other
//! watchers). A caller encodes its request, takes a
//! short lock to get an xid and queue itself, and writes the frame itself (no
//! thread hop); concurrent callers' frames are combined into one write. The I/O
//! thread hands each reply to its caller, who decodes it. `TCP_NODELAY` is set.
//!
//! # Not done (as in or unlike Java)
//!
//! * A session on a read-only server stays there: there is no search for a
//!   read-write server (Java's `pingRwServer`).
//! * No SASL.
//! * A server that refuses the handshake because it has not seen the client's
//!   last zxid is retried forever with backoff, as Java does.
//!
//! # TLS
//!
//! With [`ClientConfig::with_tls`] (or a `zks://` connect string plus TLS
//! settings) every connection is TLS ([`TlsConfig`]: CA certificates, an
//! optional client certificate, host name verification on by default). The TLS
//! handshake is part of the connection attempt and shares its bound; a refused
//! handshake is a failed attempt like any other, reported by
//! [`Client::wait_connected`] as [`Error::Tls`](crate::error::Error::Tls). Plain TCP connections are
//! unchanged (no extra copy or lock).
//!
//! # Watches
//!
//! Watches are one-shot callbacks ([`Watcher`]) on nodes. A watch is registered
//! only when the server really set it: `get_data_w`/`get_children_w` on success,
//! `exists_w` on success and on NoNode. Registered watches survive reconnects.
//! Session events are **not** delivered to one-shot watchers (unlike Java, which
//! sends `Disconnected` to every watcher); they go to [`Client::state_receiver`].
//!
//! Persistent watches (ZooKeeper 3.6+, [`Client::add_watch`]) are multi-shot
//! callbacks ([`PersistentWatcher`]) that stay registered when they fire; they
//! do get the session's states, as in Java (see [`Client::add_watch`]). After a
//! reconnect every registration is re-sent in Java's order (data, exist, child,
//! persistent, persistent recursive) in batches of about 128 KiB of paths: a
//! batch with a persistent path as SetWatches2 (105), any other as SetWatches
//! (101). The server replays no missed change for persistent watches.
//! [`Client::remove_watch`], [`Client::remove_all_watches`] and
//! [`Client::check_watches`] are opcodes 18 and 17.
//! Callbacks run on a dedicated event thread, never under a lock, so they may
//! call the client; a panicking callback is caught and logged. They run one at
//! a time: keep them short. One exception, opted into: a watcher whose
//! [`Watcher::only_signals`] is `true` (a channel's `Sender` is one) runs on the
//! I/O thread as soon as its notification is read, when every watcher of that
//! notification only signals and the event thread has nothing queued; so it
//! wakes the thread waiting for it one thread hop sooner, and the order of
//! events is kept.
//!
//! # Examples
//!
//! ```no_run
//! use std::time::Duration;
//! use zk_framework::{Client, ClientConfig};
//! use zk_framework::proto::{Acl, CreateMode};
//!
//! let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
//! zk.wait_connected_timeout(Duration::from_secs(10))?;
//! let path = zk.create("/jobs-", b"payload", &Acl::open_unsafe(), CreateMode::EphemeralSequential)?;
//! let (data, stat) = zk.get_data(&path)?;
//! assert_eq!(data, b"payload");
//! zk.delete(&path, Some(stat.version))?;
//! # Ok::<(), zk_framework::Error>(())
//! ```

mod connect_string;
mod date;
mod detached;
mod events;
mod handle;
mod hosts;
mod inner;
mod io;
mod multi;
mod nodes;
mod persistent;
mod reconfig;
mod request;
mod sasl;
mod synced;
mod tls;
mod types;
mod watch_types;
mod watches;

// The TLS failure inside `Error::Tls` is defined with the error type; it is
// kept here too, where the client's TLS settings are.
#[doc(inline)]
pub use crate::error::{SaslError, SaslErrorKind, TlsError, TlsErrorKind};
pub(crate) use connect_string::parse as parse_connect_string;
pub use connect_string::{ConnectString, HostPort};
pub use handle::Client;
pub use reconfig::Reconfig;
pub use sasl::{GssapiConfig, SaslConfig};
pub use tls::{TlsConfig, TlsConfigBuilder};
pub use types::{
    ClientConfig, ClientState, Op, OpResult, ReadOp, ReadResult, RegisteredWatches, SessionEvent, WatchedEvent, Watcher,
};
pub use watch_types::{AddWatchMode, PersistentWatcher, WatchId, WatcherType};
