//! The leak check: lock nodes left under the campaign's root, listed through a
//! fresh client.

use std::time::{Duration, Instant};

use zk_framework::CuratorFramework;

use zk_campaign::checker::{leak_report, leaked_nodes};

/// Lists every node under `root` whose name carries Curator's protection
/// prefix `_c_` (every lock and lease node does), through a fresh client;
/// polls until none is left or `wait` passes.
pub(crate) fn check_leaks(cs: &str, root: &str, wait: Duration) -> Result<Vec<String>, String> {
    let client = crate::resource::unconnected_client(cs).map_err(|e| e.to_string())?;
    let deadline = Instant::now() + wait;
    let result = loop {
        let listed = client
            .block_until_connected(Duration::from_secs(30))
            .and_then(|()| lock_nodes(&client, root));
        match listed {
            Ok(nodes) if nodes.is_empty() || Instant::now() >= deadline => break Ok(nodes),
            Err(e) if Instant::now() >= deadline => break Err(e.to_string()),
            _ => std::thread::sleep(Duration::from_millis(200)),
        }
    };
    client.close();
    result
}

fn lock_nodes(client: &CuratorFramework, path: &str) -> zk_framework::Result<Vec<String>> {
    let mut out = Vec::new();
    let kids = match client.get_children(path) {
        Ok(k) => k,
        Err(zk_framework::Error::NoNode { .. }) => return Ok(out),
        Err(e) => return Err(e),
    };
    for k in kids {
        let p = if path == "/" {
            format!("/{k}")
        } else {
            format!("{path}/{k}")
        };
        out.extend(leaked_nodes([p.as_str()]));
        out.extend(lock_nodes(client, &p)?);
    }
    Ok(out)
}

/// The children left under `parent`, as full paths, through a fresh
/// client (for a kind whose every node there is a leak once the workers
/// closed theirs and the killed ones' sessions expired); polls until none
/// is left or `wait` passes. A missing `parent` leaves none.
pub(crate) fn children_left(cs: &str, parent: &str, wait: Duration) -> Result<Vec<String>, String> {
    let c = crate::resource::client(cs)?;
    let deadline = Instant::now() + wait;
    let r = loop {
        match c.get_children(parent) {
            Ok(k) if k.is_empty() || Instant::now() >= deadline => {
                break Ok(k.into_iter().map(|n| format!("{parent}/{n}")).collect())
            }
            Err(zk_framework::Error::NoNode { .. }) => break Ok(Vec::new()),
            Err(e) if Instant::now() >= deadline => break Err(e.to_string()),
            _ => std::thread::sleep(Duration::from_millis(200)),
        }
    };
    c.close();
    r
}

pub(crate) fn print_leaks(leaks: &[String]) {
    print!("{}", leak_report(leaks));
}
