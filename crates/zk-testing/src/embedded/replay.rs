//! The server's handling of what clients send, in memory: [`Replay`] feeds
//! bytes to connections of a server state the way a connection's reader
//! thread does (the frame buffer, the four-letter-word check on a
//! connection's first bytes, the handshake, then every request through the
//! handlers), with no socket read, no thread and no timer, and hands back the
//! bytes the server queued in reply. It is what the coverage-guided fuzzer
//! drives (the `zk-fuzz` crate's `server_request` target): the request
//! decoding and handling of a real server, thousands of times a second.
//!
//! Imports `server` (the frame processing the reader threads use), `state`,
//! `conn`, `config`.

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, OnceLock};

use parking_lot::{Condvar, Mutex};
use zk_proto::frame::{four_letter_word, FrameBuffer};

use super::config::ServerConfig;
use super::conn::{ConnEntry, ConnShared};
use super::server::Shared;
use super::state::State;

/// One connected loopback socket for the whole process: a registered
/// connection holds a stream (for the writer thread, which a replay never
/// runs), and a socket per connection would use up the ephemeral ports at a
/// fuzzer's rate. Connections take a duplicate of it; nothing is written to it.
fn loopback() -> io::Result<(TcpStream, SocketAddr)> {
    static PAIR: OnceLock<Result<(TcpStream, TcpStream), String>> = OnceLock::new();
    let pair = PAIR.get_or_init(|| {
        let listener = TcpListener::bind(("127.0.0.1", 0)).map_err(|e| e.to_string())?;
        let ours = TcpStream::connect(listener.local_addr().map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
        let (theirs, _) = listener.accept().map_err(|e| e.to_string())?;
        Ok((ours, theirs))
    });
    match pair {
        Ok((ours, _)) => Ok((ours.try_clone()?, ours.local_addr()?)),
        Err(e) => Err(io::Error::other(e.clone())),
    }
}

/// The result of one [`Replay::feed`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fed {
    /// The bytes the server queued on the connection (frames: replies and
    /// watch events; or a four-letter word's text), since the last feed.
    pub replies: Vec<u8>,
    /// The server closed the connection (a bad handshake, a frame over the
    /// limit, an unknown opcode, a four-letter word...): later feeds to it
    /// are ignored.
    pub closed: bool,
    /// Whether the connection has a session (its handshake was accepted).
    pub established: bool,
}

struct Conn {
    shared: Arc<ConnShared>,
    fb: FrameBuffer,
    established: bool,
    first: bool,
}

/// An embedded server's state with connections fed in memory; see the
/// module's documentation. TLS settings in the configuration are ignored
/// (the bytes fed are the plaintext); everything else applies.
///
/// # Examples
///
/// ```
/// use zk_proto::frame::{frame, request_frame};
/// use zk_proto::{ConnectRequest, Encode, OpCode, PathRecord};
/// use zk_testing::embedded::{Replay, ServerConfig};
///
/// let mut server = Replay::new(ServerConfig::default())?;
/// let conn = server.connect()?;
/// let hello = ConnectRequest { timeout: 5000, passwd: vec![0; 16], ..Default::default() };
/// let fed = server.feed(conn, &frame(|o| hello.encode(o)));
/// assert!(fed.established && !fed.closed);
/// // A sync of "/": the reply header (xid 1) and the path echoed.
/// let fed = server.feed(conn, &request_frame(1, OpCode::Sync, Some(&PathRecord { path: "/".into() })));
/// assert_eq!(&fed.replies[4..8], &1i32.to_be_bytes());
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Replay {
    shared: Shared,
    conns: HashMap<u64, Conn>,
}

impl std::fmt::Debug for Replay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replay")
            .field("connections", &self.conns.len())
            .finish()
    }
}

impl Replay {
    /// A fresh server state (an empty tree, zxid 0) with `config`.
    ///
    /// # Errors
    ///
    /// The error of making the process's loopback socket (see
    /// [`Replay::connect`]), on the first call in a process only.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = zk_testing::embedded::Replay::new(Default::default())?;
    /// assert_eq!(server.zxid(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn new(config: ServerConfig) -> io::Result<Replay> {
        loopback()?;
        let max_frame = config.max_frame;
        Ok(Replay {
            shared: Shared {
                state: Mutex::new(State::new(config, 0)),
                pause_cv: Condvar::new(),
                ticker_cv: Condvar::new(),
                threads: Mutex::new(Vec::new()),
                max_frame,
                tls: None,
            },
            conns: HashMap::new(),
        })
    }

    /// Registers a new connection, from 127.0.0.1 (its `ip` identity), and
    /// returns its id.
    ///
    /// # Errors
    ///
    /// The error of duplicating the process's loopback socket (a registered
    /// connection holds one; no byte goes through it).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut server = zk_testing::embedded::Replay::new(Default::default())?;
    /// assert_ne!(server.connect()?, server.connect()?);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn connect(&mut self) -> io::Result<u64> {
        let (stream, peer) = loopback()?;
        let mut st = self.shared.state.lock();
        let id = st.next_conn;
        st.next_conn += 1;
        st.stats.accepted += 1;
        let shared = Arc::new(ConnShared::new(id, stream));
        st.conns.insert(id, ConnEntry::new(shared.clone(), peer));
        self.conns.insert(
            id,
            Conn {
                shared,
                fb: FrameBuffer::new(self.shared.max_frame),
                established: false,
                first: true,
            },
        );
        Ok(id)
    }

    /// Feeds bytes received on connection `conn`, as its reader thread would:
    /// they are buffered, and every complete frame is processed (the first
    /// as the handshake); a connection whose first four bytes spell a
    /// four-letter word gets its answer and is closed. An unknown or closed
    /// connection takes nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut server = zk_testing::embedded::Replay::new(Default::default())?;
    /// let conn = server.connect()?;
    /// let fed = server.feed(conn, b"ruok");
    /// assert_eq!((fed.replies.as_slice(), fed.closed), (&b"imok"[..], true));
    /// // A frame over the limit (jute.maxbuffer) closes the connection.
    /// let conn = server.connect()?;
    /// assert!(server.feed(conn, &[0x7f, 0xff, 0xff, 0xff]).closed);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn feed(&mut self, conn: u64, bytes: &[u8]) -> Fed {
        let Some(c) = self.conns.get_mut(&conn) else {
            return Fed {
                replies: Vec::new(),
                closed: true,
                established: false,
            };
        };
        if !c.shared.is_closing() {
            c.fb.extend(bytes);
            serve_buffered(&self.shared, c);
        }
        Fed {
            replies: c.shared.take_queued(),
            closed: c.shared.is_closing(),
            established: c.established,
        }
    }

    /// The last zxid the server gave out.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_testing::embedded::Replay::new(Default::default())?.zxid(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn zxid(&self) -> i64 {
        self.shared.state.lock().zxid
    }

    /// The number of nodes in the tree (`/` and `/zookeeper`'s included).
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(zk_testing::embedded::Replay::new(Default::default())?.nodes() >= 1);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn nodes(&self) -> usize {
        self.shared.state.lock().tree.len()
    }
}

/// What a connection's reader does with what it buffered (server.rs's
/// `reader_loop` for a plain connection, after a read): the four-letter-word
/// check on the first four bytes, then every complete frame, until the
/// connection closes; a bad frame length closes it.
fn serve_buffered(shared: &Shared, c: &mut Conn) {
    if c.first {
        let Some(w) = c.fb.peek4() else { return };
        c.first = false;
        if let Some(word) = four_letter_word(w) {
            shared.four_letter_word(&c.shared, word);
            return;
        }
    }
    loop {
        match c.fb.next_frame() {
            Ok(Some(f)) => {
                c.established = shared.process(&c.shared, &f, c.established);
                if c.shared.is_closing() {
                    return;
                }
            }
            Ok(None) => return,
            Err(e) => {
                log::debug!("embedded zk: conn {}: {e}; closing", c.shared.id);
                shared.state.lock().close_conn(c.shared.id);
                return;
            }
        }
    }
}
