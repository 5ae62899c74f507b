//! The peers: other lock implementations run right after ours in a
//! scenario, on the same server, lock paths, window and warm-up. A peer that
//! cannot run here (no Java, no kazoo module) prints one `peer.error=NAME: ...`
//! line and is skipped.

mod process;
mod zkclient;
mod zookeeper08;

pub use process::{java_dir, javac};

use crate::opts::Peer;
use crate::Ctx;

/// Runs every peer asked for on the scenario `name`, in the order asked
/// (Curator first).
pub fn side_by_side(x: &Ctx, name: &str) {
    if !x.o.wanted(name) {
        return;
    }
    for &peer in &x.o.peers {
        match peer {
            Peer::Curator => process_peer(x, peer, process::curator(), name),
            Peer::Kazoo => process_peer(x, peer, process::kazoo(), name),
            Peer::ZookeeperClient => zkclient::run(x, name),
            Peer::Zookeeper => zookeeper08::run(x, name),
        }
    }
}

/// Prints a peer's missing prerequisites once per run.
fn process_peer(x: &Ctx, peer: Peer, driver: Result<&process::Driver, String>, name: &str) {
    match driver {
        Ok(d) => d.run(x, name),
        Err(e) => {
            use std::sync::Mutex;
            static SAID: Mutex<Vec<Peer>> = Mutex::new(Vec::new());
            let mut said = SAID.lock().unwrap_or_else(|p| p.into_inner());
            if !said.contains(&peer) {
                said.push(peer);
                println!("peer.error={}: {e}; skipped", peer.prefix());
            }
        }
    }
}
