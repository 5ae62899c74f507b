//! Helpers of the `client_*` tests (the plain client, `zk_framework::client`):
//! one test server over the embedded and the Apache backends (a
//! [`TestingServer`]), fault injection, and unique test roots.
//!
//! `ZK_TEST_SERVER=apache` runs the tests on a real Apache ZooKeeper; otherwise
//! they use the embedded server. Faults only the embedded server can inject are
//! reported by [`TestServer::is_embedded`]; tests that need them skip on Apache.

pub mod proxy {
    //! The fault proxy lives in zk-testing.
    #[allow(unused_imports)]
    pub use zk_testing::proxy::FaultProxy as Proxy;
}

use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;

use zk_framework::proto::{Acl, CreateMode};
use zk_framework::{Client, ClientConfig, SessionEvent};
use zk_testing::apache::{self, ApacheConfig};
use zk_testing::embedded::{EmbeddedServer, ServerConfig};
use zk_testing::{Backend, TestingServer};

pub use super::{closed_port, wait_until};

/// How long the client tests wait for an event.
pub const WAIT: Duration = Duration::from_secs(20);

/// The open ACL (`world:anyone`, all permissions).
pub fn open() -> Vec<Acl> {
    Acl::open_unsafe()
}

/// Receives session events until `want`; returns the ones before it. Fails
/// after [`WAIT`].
pub fn expect_event(rx: &Receiver<SessionEvent>, want: SessionEvent) -> Vec<SessionEvent> {
    let deadline = Instant::now() + WAIT;
    let mut seen = Vec::new();
    loop {
        match rx.recv_deadline(deadline) {
            Ok(e) if e == want => return seen,
            Ok(e) => seen.push(e),
            Err(_) => panic!("no {want:?} event; saw {seen:?}"),
        }
    }
}

/// A server for one test.
pub struct TestServer {
    server: TestingServer,
}

impl TestServer {
    /// Starts the selected backend; `None` (with a note) when it cannot run here
    /// (Apache selected but not installed).
    pub fn start() -> Option<TestServer> {
        Self::start_with(ServerConfig::default())
    }

    /// As [`TestServer::start`], with settings for the embedded server.
    pub fn start_with(config: ServerConfig) -> Option<TestServer> {
        super::init_log();
        let backend = Backend::from_env().expect("ZK_TEST_SERVER");
        let server = match backend {
            Backend::Embedded => TestingServer::embedded_with(config).expect("start the embedded server"),
            Backend::Apache => {
                if !apache::available() {
                    eprintln!("skipping: Apache ZooKeeper is not installed");
                    return None;
                }
                TestingServer::apache_with(ApacheConfig::default()).expect("start Apache ZooKeeper")
            }
        };
        Some(TestServer { server })
    }

    /// The embedded server, for faults only it can inject; `None` on Apache.
    pub fn embedded(&self) -> Option<&EmbeddedServer> {
        self.server.embedded()
    }

    pub fn is_embedded(&self) -> bool {
        self.embedded().is_some()
    }

    pub fn connect_string(&self) -> String {
        self.server.connect_string()
    }

    /// A connected client with the given session timeout.
    pub fn client(&self, session_timeout: Duration) -> Client {
        self.client_with(ClientConfig::default().with_session_timeout(session_timeout))
    }

    pub fn client_with(&self, config: ClientConfig) -> Client {
        let c = Client::connect(&self.connect_string(), config).expect("connect");
        c.wait_connected_timeout(Duration::from_secs(20)).expect("connected");
        c
    }

    /// Stops the server (its sessions persist for `restart`).
    pub fn stop(&mut self) {
        self.server.stop().expect("stop");
    }

    /// Starts it again on the same port with the same data and sessions.
    pub fn restart(&mut self) {
        self.server.restart().expect("restart");
    }

    /// Expires `client`'s session the way the server would. On Apache a second
    /// connection takes over the session and closes it (the ConnectRequest and
    /// the closeSession go out in one write, so the client cannot win the race
    /// back in between).
    pub fn expire(&mut self, client: &Client) {
        match self.server.embedded() {
            Some(s) => assert!(s.expire_session(client.session_id()), "no such session"),
            None => expire_session(&self.connect_string(), client.session_id(), &client.session_password()),
        }
    }
}

/// A unique test path under `/t-<name>-<n>`, created (persistent).
pub fn test_root(c: &Client, name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let p = format!("/t-{name}-{nanos}");
    c.create(&p, b"", &Acl::open_unsafe(), CreateMode::Persistent)
        .expect("create test root");
    p
}

/// Closes session `id` on the server at `addr` from a raw connection.
pub fn expire_session(addr: &str, id: i64, password: &[u8]) {
    use std::io::{Read, Write};
    use zk_framework::proto::frame::{frame, request_frame};
    use zk_framework::proto::jute::Encode;
    use zk_framework::proto::{ConnectRequest, OpCode};
    let req = ConnectRequest {
        protocol_version: 0,
        last_zxid_seen: 0,
        timeout: 4000,
        session_id: id,
        passwd: password.to_vec(),
        read_only: Some(false),
    };
    let mut bytes = frame(|o| req.encode(o));
    bytes.extend(request_frame(1, OpCode::CloseSession, None));
    let mut s = std::net::TcpStream::connect(addr).expect("raw connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(&bytes).expect("raw write");
    let mut sink = Vec::new();
    let _ = s.read_to_end(&mut sink);
    // ConnectResponse (4 + 36/37 bytes) then the closeSession reply (4 + 16).
    assert!(
        sink.len() >= 40 + 20,
        "closeSession not answered ({} bytes)",
        sink.len()
    );
}
