//! Helpers shared by the `client_*` integration tests: one test server over the
//! embedded and the Apache backends, fault injection, and condition waits.
//!
//! `ZK_TEST_SERVER=apache` runs the tests on a real Apache ZooKeeper; otherwise
//! they use the embedded server. Faults only the embedded server can inject are
//! reported by [`TestServer::is_embedded`]; tests that need them skip on Apache.

#![allow(dead_code)]

pub mod proxy {
    //! The fault proxy now lives in zk-testing.
    #[allow(unused_imports)]
    pub use zk_testing::proxy::FaultProxy as Proxy;
}

use std::net::TcpListener;
use std::time::{Duration, Instant};

use zk_framework::client::{Client, ClientConfig};
use zk_framework::proto::{Acl, CreateMode};
use zk_testing::apache::{self, ApacheConfig, ApacheServer};
use zk_testing::embedded::{EmbeddedServer, ServerConfig};

/// Which server the tests run against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Embedded,
    Apache,
}

pub fn backend() -> Backend {
    match std::env::var("ZK_TEST_SERVER") {
        Ok(v) if v.eq_ignore_ascii_case("apache") => Backend::Apache,
        _ => Backend::Embedded,
    }
}

enum Kind {
    Embedded(EmbeddedServer),
    Apache(ApacheServer),
}

/// A server for one test.
pub struct TestServer {
    kind: Kind,
}

impl TestServer {
    /// Starts the selected backend; `None` (with a note) when it cannot run here
    /// (Apache selected but not installed).
    pub fn start() -> Option<TestServer> {
        Self::start_with(ServerConfig::default())
    }

    /// As [`TestServer::start`], with settings for the embedded server.
    pub fn start_with(config: ServerConfig) -> Option<TestServer> {
        let _ = env_logger::builder().is_test(true).try_init();
        let kind = match backend() {
            Backend::Embedded => Kind::Embedded(EmbeddedServer::start(config).expect("start the embedded server")),
            Backend::Apache => {
                if !apache::available() {
                    eprintln!("skipping: Apache ZooKeeper is not installed");
                    return None;
                }
                Kind::Apache(ApacheServer::start(ApacheConfig::default()).expect("start Apache ZooKeeper"))
            }
        };
        Some(TestServer { kind })
    }

    /// The embedded server, for faults only it can inject; `None` on Apache.
    pub fn embedded(&self) -> Option<&EmbeddedServer> {
        match &self.kind {
            Kind::Embedded(s) => Some(s),
            Kind::Apache(_) => None,
        }
    }

    pub fn is_embedded(&self) -> bool {
        self.embedded().is_some()
    }

    pub fn connect_string(&self) -> String {
        match &self.kind {
            Kind::Embedded(s) => s.connect_string(),
            Kind::Apache(s) => s.connect_string(),
        }
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
        match &mut self.kind {
            Kind::Embedded(s) => s.stop(),
            Kind::Apache(s) => s.stop().expect("stop"),
        }
    }

    /// Starts it again on the same port with the same data and sessions.
    pub fn restart(&mut self) {
        match &mut self.kind {
            Kind::Embedded(s) => s.restart().expect("restart"),
            Kind::Apache(s) => s.restart().expect("restart"),
        }
    }

    /// Expires `client`'s session the way the server would. On Apache a second
    /// connection takes over the session and closes it (the ConnectRequest and
    /// the closeSession go out in one write, so the client cannot win the race
    /// back in between).
    pub fn expire(&mut self, client: &Client) {
        match &self.kind {
            Kind::Embedded(s) => assert!(s.expire_session(client.session_id()), "no such session"),
            Kind::Apache(_) => expire_session(&self.connect_string(), client.session_id(), &client.session_password()),
        }
    }
}

/// Polls `cond` every 10 ms until it holds or `timeout` passes.
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
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

/// A loopback port nobody listens on.
pub fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
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
