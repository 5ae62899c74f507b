//! The support module of zk-testing's integration tests: a tiny raw-frame client for the
//! `embedded_*` suites, and condition waits ([`wait_until`], from `zk_testing`).

use std::collections::VecDeque;
use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use zk_proto::frame::{frame, FrameBuffer, DEFAULT_MAX_FRAME};
use zk_proto::jute::{Decode, Encode, Reader};
use zk_proto::{
    Acl, ConnectRequest, ConnectResponse, Create2Response, CreateRequest, DeleteRequest, GetChildrenResponse,
    GetDataResponse, MultiOp, MultiRequest, MultiResponse, OpCode, PathRecord, PathWatchRequest, ReplyHeader,
    RequestHeader, SetDataRequest, Stat, StatResponse, WatcherEvent,
};

/// Default time to wait for anything the server should send.
pub const WAIT: Duration = Duration::from_secs(10);

pub use zk_testing::wait_until;

/// Something the server sent after the handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Packet {
    Event(WatcherEvent),
    Reply(ReplyHeader, Vec<u8>),
}

/// A reply: header and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub hdr: ReplyHeader,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn decode<T: Decode>(&self) -> T {
        T::from_bytes(&self.body).unwrap_or_else(|e| panic!("bad body {:?}: {e}", self.body))
    }
}

/// The result of reading until the server closes.
#[derive(Debug, PartialEq, Eq)]
pub enum Closed {
    /// Closed (EOF or reset) after these frames.
    Yes(Vec<Vec<u8>>),
    /// Still open after the timeout, with these frames.
    No(Vec<Vec<u8>>),
}

pub fn connect_request(session_id: i64, passwd: Vec<u8>, timeout: i32, last_zxid: i64) -> ConnectRequest {
    ConnectRequest {
        protocol_version: 0,
        last_zxid_seen: last_zxid,
        timeout,
        session_id,
        passwd,
        read_only: Some(false),
    }
}

/// A raw connection.
pub struct Client {
    pub stream: TcpStream,
    fb: FrameBuffer,
    xid: i32,
    pub session_id: i64,
    pub passwd: Vec<u8>,
    pub timeout: i32,
    /// Every packet received after the handshake, in order.
    pub log: Vec<Packet>,
    /// Events not consumed yet.
    pub events: VecDeque<WatcherEvent>,
    pub last_zxid: i64,
}

impl Client {
    /// Opens a TCP connection without any handshake.
    pub fn tcp(addr: &str) -> TcpStream {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_nodelay(true).unwrap();
        s
    }

    /// A new session with timeout 30000.
    pub fn connect(addr: &str) -> Client {
        Self::connect_timeout(addr, 30000)
    }

    /// A new session with the given requested timeout.
    pub fn connect_timeout(addr: &str, timeout: i32) -> Client {
        let (c, r) = Self::handshake(addr, &connect_request(0, vec![0; 16], timeout, 0)).expect("handshake");
        assert!(r.timeout > 0, "new session refused: {r:?}");
        c
    }

    /// Wraps an open stream (no handshake done by this call).
    pub fn wrap(stream: TcpStream) -> Client {
        Client {
            stream,
            fb: FrameBuffer::new(DEFAULT_MAX_FRAME),
            xid: 0,
            session_id: 0,
            passwd: Vec::new(),
            timeout: 0,
            log: Vec::new(),
            events: VecDeque::new(),
            last_zxid: 0,
        }
    }

    /// Reattaches to the session of `other`.
    pub fn reattach(addr: &str, other: &Client) -> io::Result<(Client, ConnectResponse)> {
        Self::handshake(
            addr,
            &connect_request(other.session_id, other.passwd.clone(), other.timeout, other.last_zxid),
        )
    }

    /// Sends `req` and reads the ConnectResponse.
    pub fn handshake(addr: &str, req: &ConnectRequest) -> io::Result<(Client, ConnectResponse)> {
        let mut c = Client::wrap(Self::tcp(addr));
        c.last_zxid = req.last_zxid_seen;
        c.send_raw(&frame(|o| req.encode(o)));
        let f = c.read_frame(WAIT)?;
        let resp = ConnectResponse::from_bytes(&f).map_err(|e| io::Error::new(ErrorKind::InvalidData, e))?;
        c.session_id = resp.session_id;
        c.passwd = resp.passwd.clone();
        c.timeout = resp.timeout;
        Ok((c, resp))
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write");
    }

    /// Reads the next frame payload.
    pub fn read_frame(&mut self, timeout: Duration) -> io::Result<Vec<u8>> {
        let deadline = Instant::now() + timeout;
        let mut buf = [0u8; 65536];
        loop {
            if let Some(f) = self
                .fb
                .next_frame()
                .map_err(|e| io::Error::new(ErrorKind::InvalidData, e))?
            {
                return Ok(f);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::Error::new(ErrorKind::TimedOut, "no frame"));
            }
            self.stream.set_read_timeout(Some(left))?;
            match self.stream.read(&mut buf) {
                Ok(0) => return Err(io::Error::new(ErrorKind::UnexpectedEof, "closed by the server")),
                Ok(n) => self.fb.extend(&buf[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Err(io::Error::new(ErrorKind::TimedOut, "no frame"))
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Reads the next packet (event or reply) and logs it.
    pub fn next_packet(&mut self, timeout: Duration) -> io::Result<Packet> {
        let f = self.read_frame(timeout)?;
        let mut r = Reader::new(&f);
        let hdr = ReplyHeader::decode(&mut r).expect("reply header");
        let p = if hdr.xid == -1 {
            assert_eq!((hdr.zxid, hdr.err), (-1, 0), "notification header");
            let ev = WatcherEvent::decode(&mut r).expect("event");
            assert!(r.is_empty());
            self.events.push_back(ev.clone());
            Packet::Event(ev)
        } else {
            if hdr.zxid > 0 {
                self.last_zxid = hdr.zxid;
            }
            Packet::Reply(hdr, r.rest().to_vec())
        };
        self.log.push(p.clone());
        Ok(p)
    }

    pub fn next_xid(&mut self) -> i32 {
        self.xid += 1;
        self.xid
    }

    /// Sends a request frame with the given xid and raw body.
    pub fn send_request(&mut self, xid: i32, op: i32, body: &[u8]) {
        let f = frame(|o| {
            RequestHeader { xid, op }.encode(o);
            o.extend_from_slice(body);
        });
        self.send_raw(&f);
    }

    /// Sends a request and waits for its reply (events before it are logged).
    pub fn rq_raw(&mut self, op: i32, body: &[u8]) -> Reply {
        let xid = if op == OpCode::Ping.code() { -2 } else { self.next_xid() };
        self.send_request(xid, op, body);
        self.wait_reply(xid)
    }

    pub fn wait_reply(&mut self, xid: i32) -> Reply {
        loop {
            match self.next_packet(WAIT).expect("reply") {
                Packet::Event(_) => {}
                Packet::Reply(hdr, body) => {
                    assert_eq!(hdr.xid, xid, "reply out of order");
                    return Reply { hdr, body };
                }
            }
        }
    }

    pub fn rq<T: Encode>(&mut self, op: OpCode, body: &T) -> Reply {
        self.rq_raw(op.code(), &body.to_bytes())
    }

    pub fn rq0(&mut self, op: OpCode) -> Reply {
        self.rq_raw(op.code(), &[])
    }

    /// Waits for the next event not consumed yet.
    pub fn event(&mut self) -> WatcherEvent {
        self.try_event(WAIT).expect("an event")
    }

    pub fn try_event(&mut self, timeout: Duration) -> Option<WatcherEvent> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(e) = self.events.pop_front() {
                return Some(e);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next_packet(left) {
                Ok(Packet::Event(_)) => {}
                Ok(Packet::Reply(h, _)) => panic!("unexpected reply {h:?}"),
                Err(_) => return None,
            }
        }
    }

    /// Reads until the server closes (or `timeout`).
    pub fn read_until_closed(&mut self, timeout: Duration) -> Closed {
        let deadline = Instant::now() + timeout;
        let mut frames = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Closed::No(frames);
            }
            match self.read_frame(left) {
                Ok(f) => frames.push(f),
                Err(e) if e.kind() == ErrorKind::TimedOut => return Closed::No(frames),
                Err(_) => return Closed::Yes(frames),
            }
        }
    }

    pub fn shutdown(&self) {
        let _ = self.stream.shutdown(Shutdown::Both);
    }

    // ---- typed helpers; Err(code) on error ----

    pub fn create(&mut self, path: &str, data: &[u8], flags: i32) -> Result<String, i32> {
        let r = self.rq(OpCode::Create, &create_req(path, data, flags));
        if r.hdr.err != 0 {
            return Err(r.hdr.err);
        }
        Ok(r.decode::<PathRecord>().path)
    }

    pub fn create2(&mut self, path: &str, data: &[u8], flags: i32) -> Result<(String, Stat), i32> {
        let r = self.rq(OpCode::Create2, &create_req(path, data, flags));
        if r.hdr.err != 0 {
            return Err(r.hdr.err);
        }
        let c: Create2Response = r.decode();
        Ok((c.path, c.stat))
    }

    /// createContainer (opcode 19).
    pub fn create_container(&mut self, path: &str) -> Result<(String, Stat), i32> {
        let r = self.rq(OpCode::CreateContainer, &create_req(path, b"", 4));
        if r.hdr.err != 0 {
            return Err(r.hdr.err);
        }
        let c: Create2Response = r.decode();
        Ok((c.path, c.stat))
    }

    pub fn delete(&mut self, path: &str, version: i32) -> Result<(), i32> {
        let r = self.rq(
            OpCode::Delete,
            &DeleteRequest {
                path: path.into(),
                version,
            },
        );
        if r.hdr.err != 0 {
            Err(r.hdr.err)
        } else {
            Ok(())
        }
    }

    pub fn exists(&mut self, path: &str, watch: bool) -> Result<Stat, i32> {
        let r = self.rq(
            OpCode::Exists,
            &PathWatchRequest {
                path: path.into(),
                watch,
            },
        );
        if r.hdr.err != 0 {
            return Err(r.hdr.err);
        }
        Ok(r.decode::<StatResponse>().stat)
    }

    pub fn stat(&mut self, path: &str) -> Stat {
        self.exists(path, false)
            .unwrap_or_else(|e| panic!("exists {path}: {e}"))
    }

    pub fn get_data(&mut self, path: &str, watch: bool) -> Result<(Vec<u8>, Stat), i32> {
        let r = self.rq(
            OpCode::GetData,
            &PathWatchRequest {
                path: path.into(),
                watch,
            },
        );
        if r.hdr.err != 0 {
            return Err(r.hdr.err);
        }
        let d: GetDataResponse = r.decode();
        Ok((d.data, d.stat))
    }

    pub fn set_data(&mut self, path: &str, data: &[u8], version: i32) -> Result<Stat, i32> {
        let r = self.rq(
            OpCode::SetData,
            &SetDataRequest {
                path: path.into(),
                data: data.to_vec(),
                version,
            },
        );
        if r.hdr.err != 0 {
            return Err(r.hdr.err);
        }
        Ok(r.decode::<StatResponse>().stat)
    }

    pub fn children(&mut self, path: &str, watch: bool) -> Result<Vec<String>, i32> {
        let r = self.rq(
            OpCode::GetChildren,
            &PathWatchRequest {
                path: path.into(),
                watch,
            },
        );
        if r.hdr.err != 0 {
            return Err(r.hdr.err);
        }
        let mut c = r.decode::<GetChildrenResponse>().children;
        c.sort();
        Ok(c)
    }

    pub fn multi(&mut self, ops: Vec<MultiOp>) -> (ReplyHeader, MultiResponse) {
        let r = self.rq(OpCode::Multi, &MultiRequest { ops });
        let resp = if r.hdr.err == 0 {
            r.decode()
        } else {
            MultiResponse::default()
        };
        (r.hdr, resp)
    }

    /// Sends closeSession and returns its reply header.
    pub fn close_session(&mut self) -> ReplyHeader {
        self.rq0(OpCode::CloseSession).hdr
    }

    /// The server's current zxid as seen by a read (exists "/").
    pub fn zxid(&mut self) -> i64 {
        self.rq(
            OpCode::Exists,
            &PathWatchRequest {
                path: "/".into(),
                watch: false,
            },
        )
        .hdr
        .zxid
    }
}

pub fn create_req(path: &str, data: &[u8], flags: i32) -> CreateRequest {
    CreateRequest {
        path: path.into(),
        data: data.to_vec(),
        acl: Acl::open_unsafe(),
        flags,
    }
}

pub fn ev(ty: zk_proto::EventType, path: &str) -> WatcherEvent {
    WatcherEvent {
        event_type: ty.code(),
        state: 3,
        path: path.into(),
    }
}
