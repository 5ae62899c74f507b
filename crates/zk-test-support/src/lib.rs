//! The helpers the workspace's integration tests share: zk-framework's,
//! zk-recipes' and the root package's `tests/it` (a dev-dependency of each,
//! `publish = false`). What one crate's tests
//! alone use stays in that crate's `tests/it/support`.
//!
//! * Re-exported from [`zk_testing::support`]: the server on the backend
//!   `ZK_TEST_SERVER` selects, the timings (`ZK_TEST_TIMING`), logging, a
//!   closed port, the watches a session holds, a test in a process of its own.
//! * Here: managed clients with the test timings, closed when dropped, and
//!   tree listings through a client.
//! * [`framework`]: clients of the managed client whose every connection state
//!   is recorded, and state expectations with deadlines.
//! * [`tls`], [`x509`], [`acl`]: the settings the clients' suites
//!   (zk-framework's) share with their halves in zk-recipes (locks over TLS,
//!   under an `x509` or a digest ACL).
//! * [`fuzz`]: what zk-framework's wire suites (`fuzz_wire`) use, on
//!   `proptest`: a fixed seed, the inputs of the fuzz corpus (`zk-fuzz`),
//!   valid samples of the records, a panic counter.
//!
//! It depends on zk-framework and zk-testing, never the reverse: a library
//! crate's tests reach it as a dev-dependency.
//!
//! # Examples
//!
//! ```
//! use zk_test_support::{client, server, tree};
//! let s = server(); // the embedded server unless ZK_TEST_SERVER=apache
//! let c = client(&s);
//! c.create().creating_parents_if_needed().for_path("/doc/a").unwrap();
//! assert!(tree(&c, "/doc").contains(&"/doc/a".to_string()));
//! c.close();
//! ```

pub mod acl;
pub mod framework;
pub mod fuzz;
pub mod tls;
pub mod x509;

use std::time::Duration;

use zk_framework::CuratorFramework;
use zk_framework::ExponentialBackoffRetry;

pub use zk_testing::support::*;

/// A started client with the session and connection timeouts tests use
/// (`ExponentialBackoffRetry(100 ms, 3)`).
pub fn client(server: &TestingServer) -> CuratorFramework {
    client_with(&server.connect_string(), None)
}

/// As [`client`], in namespace `ns`.
pub fn client_ns(server: &TestingServer, ns: &str) -> CuratorFramework {
    client_with(&server.connect_string(), Some(ns))
}

fn client_with(connect_string: &str, ns: Option<&str>) -> CuratorFramework {
    let t = timing();
    let mut b = CuratorFramework::builder()
        .connect_string(connect_string)
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3));
    if let Some(ns) = ns {
        b = b.namespace(ns);
    }
    let c = b.build().expect("build client");
    c.block_until_connected(t.wait()).expect("client connects");
    c
}

/// A client that is closed when dropped (its `Deref` is the client).
pub struct Client(pub CuratorFramework);

impl std::ops::Deref for Client {
    type Target = CuratorFramework;
    fn deref(&self) -> &CuratorFramework {
        &self.0
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// As [`client`] to `connect_string`, closed when dropped.
pub fn connect(connect_string: &str) -> Client {
    Client(client_with(connect_string, None))
}

/// Recursively lists `path` through a client (works on both backends).
pub fn tree(client: &CuratorFramework, path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(kids) = client.get_children(path) else {
        return out;
    };
    for k in kids {
        let p = if path == "/" {
            format!("/{k}")
        } else {
            format!("{path}/{k}")
        };
        out.push(p.clone());
        out.extend(tree(client, &p));
    }
    out
}
