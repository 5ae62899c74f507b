//! A minimal raw-frame ZooKeeper connection, independent of any client library.
//!
//! It exists so the harness can do what a real client cannot be asked to do (for
//! example close another client's session on a real server to expire it) and so
//! conformance tests can send exact frames and read exact replies.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use zk_proto::frame::{frame, read_frame, DEFAULT_MAX_FRAME};
use zk_proto::jute::{Decode, Encode, Reader};
use zk_proto::{xid, ConnectRequest, ConnectResponse, OpCode, ReplyHeader, RequestHeader, WatcherEvent};

/// One reply: its header and the raw body bytes (empty when `err != 0`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawReply {
    /// The reply header.
    pub header: ReplyHeader,
    /// The body bytes after the header.
    pub body: Vec<u8>,
}

impl RawReply {
    /// Decodes the body as `T`.
    ///
    /// # Errors
    ///
    /// `InvalidData` when the body is not a valid `T`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_proto::{OpCode, PathRecord};
    /// let (mut c, _) = zk_testing::raw::RawConnection::connect("127.0.0.1:2181", 5000, None).unwrap();
    /// let r = c.request(OpCode::Sync, &PathRecord { path: "/".into() }).unwrap();
    /// assert_eq!(r.decode::<PathRecord>().unwrap().path, "/");
    /// ```
    pub fn decode<T: Decode>(&self) -> io::Result<T> {
        T::from_bytes(&self.body).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }
}

/// A blocking connection that speaks raw frames.
#[derive(Debug)]
pub struct RawConnection {
    stream: TcpStream,
    next_xid: i32,
    events: VecDeque<WatcherEvent>,
}

impl RawConnection {
    /// Connects and performs the handshake. `session` resumes `(id, password)`.
    ///
    /// # Errors
    ///
    /// I/O errors, including `ConnectionAborted` when the server closes the
    /// connection without a ConnectResponse. An expired session is *not* an error
    /// here: the response then has `timeout == 0`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let (_c, resp) = zk_testing::raw::RawConnection::connect("127.0.0.1:2181", 5000, None).unwrap();
    /// assert!(resp.timeout > 0);
    /// ```
    pub fn connect(
        addr: &str,
        timeout_ms: i32,
        session: Option<(i64, &[u8])>,
    ) -> io::Result<(RawConnection, ConnectResponse)> {
        let sa = addr
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no address"))?;
        let stream = TcpStream::connect_timeout(&sa, Duration::from_secs(5))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        let (session_id, passwd) = session.map(|(i, p)| (i, p.to_vec())).unwrap_or((0, vec![0; 16]));
        let req = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            timeout: timeout_ms,
            session_id,
            passwd,
            read_only: Some(false),
        };
        let mut c = RawConnection {
            stream,
            next_xid: 1,
            events: VecDeque::new(),
        };
        c.send_raw(&frame(|out| req.encode(out)))?;
        let bytes = read_frame(&mut c.stream, DEFAULT_MAX_FRAME).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    "server closed without a ConnectResponse",
                )
            } else {
                e
            }
        })?;
        let resp = ConnectResponse::from_bytes(&bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        Ok((c, resp))
    }

    /// Writes raw bytes (a whole frame, or garbage).
    ///
    /// # Errors
    ///
    /// I/O errors.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let (mut c, _) = zk_testing::raw::RawConnection::connect("127.0.0.1:2181", 5000, None).unwrap();
    /// c.send_raw(&[0xde, 0xad]).unwrap();
    /// ```
    pub fn send_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes)
    }

    /// Sends a request with the next xid and returns that xid.
    ///
    /// # Errors
    ///
    /// I/O errors.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_proto::{OpCode, PathRecord};
    /// let (mut c, _) = zk_testing::raw::RawConnection::connect("127.0.0.1:2181", 5000, None).unwrap();
    /// let xid = c.send(OpCode::Sync, Some(&PathRecord { path: "/".into() })).unwrap();
    /// assert_eq!(c.read_reply().unwrap().header.xid, xid);
    /// ```
    pub fn send(&mut self, op: OpCode, body: Option<&dyn zk_proto::frame::EncodeDyn>) -> io::Result<i32> {
        let x = if op == OpCode::Ping { xid::PING } else { self.take_xid() };
        let f = frame(|out| {
            RequestHeader { xid: x, op: op.code() }.encode(out);
            if let Some(b) = body {
                b.encode_dyn(out);
            }
        });
        self.send_raw(&f)?;
        Ok(x)
    }

    fn take_xid(&mut self) -> i32 {
        let x = self.next_xid;
        self.next_xid += 1;
        x
    }

    /// Reads frames until a reply (not a notification) arrives; notifications are
    /// kept for [`RawConnection::next_event`].
    ///
    /// # Errors
    ///
    /// I/O errors; `UnexpectedEof` when the server closed the connection.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_proto::OpCode;
    /// let (mut c, _) = zk_testing::raw::RawConnection::connect("127.0.0.1:2181", 5000, None).unwrap();
    /// c.send(OpCode::Ping, None).unwrap();
    /// assert_eq!(c.read_reply().unwrap().header.xid, -2);
    /// ```
    pub fn read_reply(&mut self) -> io::Result<RawReply> {
        loop {
            let bytes = read_frame(&mut self.stream, DEFAULT_MAX_FRAME)?;
            let mut r = Reader::new(&bytes);
            let header = ReplyHeader::decode(&mut r).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            if header.xid == xid::NOTIFICATION {
                let ev = WatcherEvent::decode(&mut r).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                self.events.push_back(ev);
                continue;
            }
            return Ok(RawReply {
                header,
                body: r.rest().to_vec(),
            });
        }
    }

    /// Sends a request and reads its reply.
    ///
    /// # Errors
    ///
    /// I/O errors.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_proto::{OpCode, PathWatchRequest};
    /// let (mut c, _) = zk_testing::raw::RawConnection::connect("127.0.0.1:2181", 5000, None).unwrap();
    /// let r = c.request(OpCode::Exists, &PathWatchRequest { path: "/".into(), watch: false }).unwrap();
    /// assert_eq!(r.header.err, 0);
    /// ```
    pub fn request<T: Encode>(&mut self, op: OpCode, body: &T) -> io::Result<RawReply> {
        self.send(op, Some(body))?;
        self.read_reply()
    }

    /// The next watch notification: one already received, or the next frame,
    /// waiting at most `timeout`. `Ok(None)` on timeout.
    ///
    /// # Errors
    ///
    /// I/O errors, or `InvalidData` if a non-notification frame arrives.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// let (mut c, _) = zk_testing::raw::RawConnection::connect("127.0.0.1:2181", 5000, None).unwrap();
    /// assert!(c.next_event(Duration::from_millis(10)).unwrap().is_none());
    /// ```
    pub fn next_event(&mut self, timeout: Duration) -> io::Result<Option<WatcherEvent>> {
        if let Some(e) = self.events.pop_front() {
            return Ok(Some(e));
        }
        self.stream
            .set_read_timeout(Some(timeout.max(Duration::from_millis(1))))?;
        let mut len = [0u8; 4];
        let res = match self.stream.read_exact(&mut len) {
            Ok(()) => {
                let n = i32::from_be_bytes(len);
                if n < 0 || n as usize > DEFAULT_MAX_FRAME {
                    return Err(io::Error::new(io::ErrorKind::InvalidData, "bad frame length"));
                }
                let mut buf = vec![0u8; n as usize];
                self.stream.set_read_timeout(Some(Duration::from_secs(10)))?;
                self.stream.read_exact(&mut buf)?;
                let mut r = Reader::new(&buf);
                let header = ReplyHeader::decode(&mut r).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                if header.xid != xid::NOTIFICATION {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "reply while waiting for an event",
                    ));
                }
                let ev = WatcherEvent::decode(&mut r).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                Ok(Some(ev))
            }
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => Ok(None),
            Err(e) => Err(e),
        };
        self.stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        res
    }

    /// Sends closeSession and waits for its reply (the server then closes).
    ///
    /// # Errors
    ///
    /// I/O errors.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let (mut c, _) = zk_testing::raw::RawConnection::connect("127.0.0.1:2181", 5000, None).unwrap();
    /// c.close_session().unwrap();
    /// ```
    pub fn close_session(&mut self) -> io::Result<RawReply> {
        self.send(OpCode::CloseSession, None)?;
        self.read_reply()
    }

    /// Whether the server has closed the connection (reads with a short timeout).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let (mut c, _) = zk_testing::raw::RawConnection::connect("127.0.0.1:2181", 5000, None).unwrap();
    /// assert!(!c.is_closed_by_peer(std::time::Duration::from_millis(50)));
    /// ```
    pub fn is_closed_by_peer(&mut self, wait: Duration) -> bool {
        let _ = self.stream.set_read_timeout(Some(wait.max(Duration::from_millis(1))));
        let mut b = [0u8; 1];
        let closed = match self.stream.peek(&mut b) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => !matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut),
        };
        let _ = self.stream.set_read_timeout(Some(Duration::from_secs(10)));
        closed
    }
}
