//! Reading a queue once: list a lock's or an election's children, sort them,
//! read each node, and leave out the ones that vanished while they were read
//! (Curator's rule). An election's participants and leader, the leader
//! observer and `inspect` all read queues through here.

use zk_framework::proto::path::join;
use zk_framework::proto::Stat;
use zk_framework::{CuratorFramework, Watcher};

use crate::error::Result;

/// A node of a queue, read back.
#[derive(Debug, Clone)]
pub(crate) struct QueueNode {
    /// Its name (the child's).
    pub(crate) name: String,
    /// Its full path (the client's, relative to its namespace).
    pub(crate) path: String,
    pub(crate) data: Vec<u8>,
    pub(crate) stat: Stat,
}

/// The children of `path` (`None`: it does not exist).
///
/// # Errors
///
/// The listing's failure other than `NoNode`.
pub(crate) fn children(client: &CuratorFramework, path: &str) -> Result<Option<Vec<String>>> {
    match client.get_children(path) {
        Ok(k) => Ok(Some(k)),
        Err(zk_framework::Error::NoNode { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Reads the nodes `names` under `base` in their order, leaving out those
/// that vanished meanwhile, and stops once `limit` were read (`None`: all).
/// With `watch`, each node read gets a data watch (an observer's single
/// watch on the first readable node: `limit` 1).
///
/// # Errors
///
/// A read's failure other than `NoNode`.
pub(crate) fn read<W: Watcher + Clone>(
    client: &CuratorFramework,
    base: &str,
    names: impl IntoIterator<Item = String>,
    limit: Option<usize>,
    watch: Option<&W>,
) -> Result<Vec<QueueNode>> {
    let mut out = Vec::new();
    for name in names {
        if limit.is_some_and(|l| out.len() >= l) {
            break;
        }
        let path = join(base, &name);
        let read = match watch {
            Some(w) => client.get_data_w(&path, w.clone()),
            None => client.get_data(&path),
        };
        match read {
            Ok((data, stat)) => out.push(QueueNode { name, path, data, stat }),
            Err(zk_framework::Error::NoNode { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(out)
}

/// A watcher type for reads without a watch (`read(.., None::<&NoWatch>)`).
pub(crate) type NoWatch = fn(zk_framework::WatchedEvent);
