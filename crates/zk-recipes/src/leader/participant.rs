//! Who takes part in an election, read from the server: Curator's
//! `getParticipants` / `getLeader`, typed.

use zk_framework::CuratorFramework;

use crate::core::queue;
use crate::error::Result;
use crate::locks::driver::Driver;
use crate::locks::participants::{Participant, ParticipantKind};

/// The participants of the election at `path` whose nodes sort with
/// `driver`, in election order; the first readable node is the leader.
/// Nodes that vanish while they are read are left out (Curator's rule).
pub(crate) fn read(client: &CuratorFramework, path: &str, driver: Driver) -> Result<Vec<Participant>> {
    read_up_to(client, path, driver, None)
}

/// The children of `path` in `driver`'s order (`None`: it does not exist).
///
/// # Errors
///
/// The listing's failure other than `NoNode`.
pub(crate) fn sorted(client: &CuratorFramework, path: &str, driver: Driver) -> Result<Option<Vec<String>>> {
    Ok(queue::children(client, path)?.map(|mut kids| {
        driver.sort(&mut kids);
        kids
    }))
}

/// The first `limit` readable participants (`None`: all), in election order.
fn read_up_to(client: &CuratorFramework, path: &str, driver: Driver, limit: Option<usize>) -> Result<Vec<Participant>> {
    let Some(kids) = sorted(client, path, driver)? else {
        return Ok(Vec::new());
    };
    let nodes = queue::read(client, path, kids, limit, None::<&queue::NoWatch>)?;
    Ok(nodes
        .into_iter()
        .enumerate()
        .map(|(i, n)| participant(n.path, driver, &n.data, &n.stat, i))
        .collect())
}

/// An election's participant as its node reads, at `position` in the
/// election's order (the first leads).
pub(crate) fn participant(
    node: String,
    driver: Driver,
    data: &[u8],
    stat: &zk_framework::proto::Stat,
    position: usize,
) -> Participant {
    let kind = if driver == Driver::LATCH {
        ParticipantKind::Latch
    } else {
        // A selector's election is a mutex (Curator's).
        ParticipantKind::Mutex
    };
    Participant::read(node, kind, data, stat, position, position == 0)
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
        None => Ok(String::from_utf8_lossy(&crate::locks::identity::node_data(client)).into_owned()),
    }
}

/// Checks a participant id given by the caller: not empty, at most
/// [`MAX_ID_LEN`] bytes, no control characters.
pub(crate) fn check_id(id: &str) -> Result<()> {
    if id.is_empty() {
        return Err(crate::error::Error::InvalidArgument(
            "an empty participant id (leave it unset for the default, this process's identity)".into(),
        ));
    }
    if id.len() > MAX_ID_LEN {
        return Err(crate::error::Error::InvalidArgument(format!(
            "a participant id of {} bytes (at most {MAX_ID_LEN})",
            id.len()
        )));
    }
    if id.chars().any(char::is_control) {
        return Err(crate::error::Error::InvalidArgument(format!(
            "a participant id with a control character: {id:?}"
        )));
    }
    Ok(())
}

/// The longest participant id, in bytes.
pub(crate) const MAX_ID_LEN: usize = 4096;
