//! Shared helpers for the recipe tests (mutex, semaphore).
#![allow(dead_code)]

use std::time::Duration;

use zk_framework::framework::CuratorFramework;
use zk_framework::retry::ExponentialBackoffRetry;
use zk_testing::{TestingServer, Timing};

pub fn timing() -> Timing {
    Timing::from_env()
}

/// A started client with the session and connection timeouts tests use.
pub fn client(server: &TestingServer) -> CuratorFramework {
    client_with(server, None)
}

pub fn client_ns(server: &TestingServer, ns: &str) -> CuratorFramework {
    client_with(server, Some(ns))
}

fn client_with(server: &TestingServer, ns: Option<&str>) -> CuratorFramework {
    let t = timing();
    let mut b = CuratorFramework::builder()
        .connect_string(server.connect_string())
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3));
    if let Some(ns) = ns {
        b = b.namespace(ns);
    }
    let c = b.build().expect("build client");
    c.block_until_connected(t.wait()).expect("connected");
    c
}

/// Every node under `prefix` in the server's tree (embedded only), excluding
/// `prefix` itself.
pub fn nodes_under(server: &TestingServer, prefix: &str) -> Vec<String> {
    match server.embedded() {
        Some(e) => e
            .dump_tree()
            .into_iter()
            .map(|(p, _, _)| p)
            .filter(|p| p.starts_with(&format!("{prefix}/")))
            .collect(),
        None => Vec::new(),
    }
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
