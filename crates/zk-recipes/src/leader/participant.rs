//! Who takes part in an election, read from the server: Curator's
//! `getParticipants` / `getLeader`, typed.

use zk_framework::CuratorFramework;

use crate::driver::Driver;
use crate::error::Result;
use crate::identity::HolderIdentity;
use crate::queue;

/// One participant of an election, as its node tells.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// let latch = zk_recipes::leader::LeaderLatch::builder(&client, "/election").id("node-1").build()?;
/// for p in latch.participants()? {
///     println!("{} leader={} term={}", p.id, p.is_leader, p.term);
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Participant {
    /// The participant id (the node's data as UTF-8, invalid bytes replaced,
    /// as Curator reads it).
    pub id: String,
    /// Who created the node, when its data is the holder identity our
    /// participants write by default (otherwise an address or unknown).
    pub identity: HolderIdentity,
    /// The node's full path (relative to the client's namespace).
    pub node: String,
    /// The session that owns the node.
    pub session_id: i64,
    /// The node's czxid: the term its leadership has (or will have).
    pub term: i64,
    /// Whether this node is first: the leader by the election's order. (The
    /// participant itself may not have noticed yet, as with Curator.)
    pub is_leader: bool,
}

/// The participants of the election at `path` whose nodes sort with
/// `driver`, in election order; the first readable node is the leader.
/// Nodes that vanish while they are read are left out (Curator's rule).
pub(crate) fn read(client: &CuratorFramework, path: &str, driver: Driver) -> Result<Vec<Participant>> {
    read_up_to(client, path, driver, None)
}

/// The first `limit` readable participants (`None`: all), in election order.
fn read_up_to(client: &CuratorFramework, path: &str, driver: Driver, limit: Option<usize>) -> Result<Vec<Participant>> {
    let Some(kids) = queue::sorted(client, path, driver)? else {
        return Ok(Vec::new());
    };
    let nodes = queue::read(client, path, kids, limit, None::<&queue::NoWatch>)?;
    Ok(nodes
        .into_iter()
        .enumerate()
        .map(|(i, n)| participant(n.path, &n.data, &n.stat, i == 0))
        .collect())
}

pub(crate) fn participant(node: String, data: &[u8], stat: &zk_framework::proto::Stat, first: bool) -> Participant {
    Participant {
        id: String::from_utf8_lossy(data).into_owned(),
        identity: HolderIdentity::parse(data),
        node,
        session_id: stat.ephemeral_owner,
        term: stat.czxid,
        is_leader: first,
    }
}

/// The leader of the election at `path`: the first readable node.
pub(crate) fn leader(client: &CuratorFramework, path: &str, driver: Driver) -> Result<Option<Participant>> {
    Ok(read_up_to(client, path, driver, Some(1))?.pop())
}

/// The participant id a builder was given, checked ([`check_id`]), or the
/// default: this process's holder identity, as the locks write it.
pub(crate) fn id_or_identity(client: &CuratorFramework, id: Option<String>) -> Result<String> {
    match id {
        Some(id) => {
            check_id(&id)?;
            Ok(id)
        }
        None => Ok(String::from_utf8_lossy(&crate::identity::node_data(client)).into_owned()),
    }
}

/// Checks a participant id given by the caller: not empty, at most
/// [`MAX_ID_LEN`] bytes, no control characters.
pub(crate) fn check_id(id: &str) -> Result<()> {
    if id.is_empty() {
        return Err(crate::Error::InvalidArgument(
            "an empty participant id (leave it unset for the default, this process's identity)".into(),
        ));
    }
    if id.len() > MAX_ID_LEN {
        return Err(crate::Error::InvalidArgument(format!(
            "a participant id of {} bytes (at most {MAX_ID_LEN})",
            id.len()
        )));
    }
    if id.chars().any(char::is_control) {
        return Err(crate::Error::InvalidArgument(format!(
            "a participant id with a control character: {id:?}"
        )));
    }
    Ok(())
}

/// The longest participant id, in bytes.
pub(crate) const MAX_ID_LEN: usize = 4096;
