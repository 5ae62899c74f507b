//! Writes applied at most once: a versioned `setData` or a first `create`
//! whose reply may have been lost is never sent again blindly; its outcome
//! is proven by reading the node back, or reported as unknown with what was
//! read.
//!
//! # Why
//!
//! A write whose reply is lost (the connection broke after the request left)
//! may or may not have been applied. The managed client's retry loop would
//! send it again; a versioned `setData` applied the first time then fails
//! with `BadVersion`, a create with `NodeExists`, and a recipe that reads
//! either as "lost the race" re-reads the value it has just written and
//! applies its change a second time. Curator 5.4's `DistributedAtomicLong`
//! does exactly that (one `increment()` from 0 leaves 2); its
//! `compareAndSet`, `initialize` and `SharedCount.trySetCount` report failure
//! for writes that were applied.
//!
//! Here each write goes through [`CuratorFramework::call_with_retry`] with a
//! closure that sends the write on its first attempt only. Once an attempt
//! ended with an error after which the request may have been applied
//! ([`may_have_applied`]: `ConnectionLoss`, `OperationTimeout`, the
//! deadline, `SessionExpired`, `SessionMoved`, `Closed`, the connection
//! failures), every later attempt
//! of the retry loop reads the node back instead, and the write is sent
//! again only when the read proves it was not applied.
//!
//! # The proof, for a versioned `setData(path, bytes, v)`
//!
//! The base is what the writer read before: version `v`, `mzxid` `m`,
//! `czxid` `c`. The read-back finds data `d` and a stat `s`:
//!
//! * `s.czxid == c && s.mzxid == m`: the node is exactly as we read it (a
//!   zxid names one transaction), so our write was not applied: it is sent
//!   again (safe: it is still conditional on `v`).
//! * `s.czxid == c && s.version == v + 1 && d == bytes && s.mzxid > m`: one
//!   write, conditional on `v` or unconditional, moved the node from our base
//!   to our bytes: **applied**, reported as proven by read-back.
//! * anything else (the version moved by more, other bytes, the node deleted
//!   or re-created): **unknown**, with what was read. Never retried.
//!
//! **The bound of the second rule.** The read shows *that* one write took the
//! node from `v` to our bytes, not *whose* it was: ZooKeeper keeps no writer
//! in the stat. Another client that wrote exactly our bytes from the same
//! version in the same window is indistinguishable. A versioned write from
//! `v` by that client excludes ours (both are conditional on `v`: one is
//! applied, the other fails), so the server's value is always right, and the
//! value never counts twice. But the attribution can be wrong: for a counter,
//! two clients adding the same delta from the same base compute the same
//! bytes; if theirs won and the reply to our (rejected) write was lost, both
//! are told "applied" for one change on the server. An unconditional writer
//! (Curator's `forceSet`, `SharedValue.setValue`) of the same bytes at that
//! moment does the same. This takes a lost reply *and* a concurrent
//! identical write within one round trip; callers that cannot accept it
//! (unique ids from a counter) treat an outcome proven by read-back as
//! unknown: the outcome says which proof it rests on. Curator's node layout
//! (bare 4 or 8 bytes) leaves no room for a writer's mark, so no read can do
//! better while Java and Rust share the node.
//!
//! # The proof, for a first `create(path, bytes)`
//!
//! Before the create, the client's last seen zxid `z` is noted: a create
//! sent after it is given a larger zxid. The read-back finds:
//!
//! * no node: not applied (or applied and deleted since: a counter deleted
//!   under its writers has lost its count anyway); created again.
//! * a persistent node (`ephemeralOwner == 0`) with `czxid > z`, version 0
//!   and our bytes: **applied** (by read-back, with the bound above: another
//!   client creating the same bytes in the same window).
//! * anything else: unknown, with what was read.

use zk_framework::proto::path::parent;
use zk_framework::{Client, CreateMode, CuratorFramework, Error as ZkError, Stat};

/// What a writer read before its write: the node's incarnation, its last
/// change and its version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Base {
    pub(crate) czxid: i64,
    pub(crate) mzxid: i64,
    pub(crate) version: i32,
}

impl From<&Stat> for Base {
    fn from(s: &Stat) -> Base {
        Base {
            czxid: s.czxid,
            mzxid: s.mzxid,
            version: s.version,
        }
    }
}

/// What a read-back found: the node's data and stat, or `None` (missing, or
/// the read failed).
pub(crate) type ReadBack = Option<(Vec<u8>, Stat)>;

/// The outcome of a write applied at most once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Written {
    /// Applied; `read_back` when proven by reading the node back after a
    /// lost reply (see the module's bound), not by the reply itself.
    Applied { stat: Stat, read_back: bool },
    /// Not applied: the version moved (`BadVersion`) or, for a create, the
    /// node exists.
    Conflict,
    /// Not applied: a versioned set found no node.
    Missing,
    /// Whether it was applied is unknown; what the read-back found.
    Unknown { read: ReadBack },
}

/// Whether a request that failed with `e` may still have been applied on the
/// server (it may have left before the connection failed). The connection
/// failures proper (`ConnectFailed`, `ConnectTimeout`, `Tls`) are counted in
/// too, as zk-framework's protected create counts them: the price of a
/// needless doubt is one read.
pub(crate) fn may_have_applied(e: &ZkError) -> bool {
    matches!(
        e,
        ZkError::ConnectionLoss
            | ZkError::OperationTimeout
            | ZkError::DeadlineExceeded
            | ZkError::SessionExpired
            | ZkError::SessionMoved
            | ZkError::Closed
            | ZkError::ConnectFailed { .. }
            | ZkError::ConnectTimeout { .. }
            | ZkError::Tls(_)
    )
}

/// A read-back's verdict.
enum Proof {
    /// Not applied: the write may be sent again.
    NotApplied,
    /// Settled (applied, or unknown).
    Settled(Written),
}

/// The rule for a versioned set (pure; see the module doc).
fn judge_set(read: Option<(&[u8], &Stat)>, ours: &[u8], base: &Base) -> Proof {
    let Some((data, s)) = read else {
        return Proof::Settled(Written::Unknown { read: None });
    };
    if s.czxid == base.czxid && s.mzxid == base.mzxid {
        Proof::NotApplied
    } else if s.czxid == base.czxid && s.version == base.version.wrapping_add(1) && data == ours && s.mzxid > base.mzxid
    {
        Proof::Settled(Written::Applied {
            stat: s.clone(),
            read_back: true,
        })
    } else {
        Proof::Settled(Written::Unknown {
            read: Some((data.to_vec(), s.clone())),
        })
    }
}

/// The rule for a first create (pure; see the module doc). `before` is the
/// last zxid the client had seen before it sent the create.
fn judge_create(read: Option<(&[u8], &Stat)>, ours: &[u8], before: i64) -> Proof {
    let Some((data, s)) = read else {
        return Proof::NotApplied;
    };
    if s.ephemeral_owner == 0 && s.czxid > before && s.version == 0 && data == ours {
        Proof::Settled(Written::Applied {
            stat: s.clone(),
            read_back: true,
        })
    } else {
        Proof::Settled(Written::Unknown {
            read: Some((data.to_vec(), s.clone())),
        })
    }
}

fn read(c: &Client, server_path: &str) -> Result<Option<(Vec<u8>, Stat)>, ZkError> {
    match c.get_data(server_path) {
        Ok(r) => Ok(Some(r)),
        Err(ZkError::NoNode { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// `setData(path, data, base.version)`, applied at most once (see the
/// module doc). `path` is the client's path (namespace not applied).
///
/// # Errors
///
/// The write's error when it was certainly not applied (`NoAuth`, a
/// retryable error when the retries ran out and the read-back proved it was
/// not applied, ...).
pub(crate) fn set_versioned(fw: &CuratorFramework, path: &str, data: &[u8], base: &Base) -> Result<Written, ZkError> {
    let sp = fw.fix_path(path);
    let mut in_doubt = false;
    let prove = |c: &Client| -> Result<Proof, ZkError> {
        let r = read(c, &sp)?;
        Ok(judge_set(r.as_ref().map(|(d, s)| (d.as_slice(), s)), data, base))
    };
    let result = fw.call_with_retry(|c| {
        if in_doubt {
            match prove(c)? {
                Proof::Settled(w) => return Ok(w),
                Proof::NotApplied => in_doubt = false,
            }
        }
        match c.set_data(&sp, data, Some(base.version)) {
            Ok(stat) => Ok(Written::Applied { stat, read_back: false }),
            Err(ZkError::BadVersion { .. }) => Ok(Written::Conflict),
            Err(ZkError::NoNode { .. }) => Ok(Written::Missing),
            Err(e) => {
                in_doubt = may_have_applied(&e);
                Err(e)
            }
        }
    });
    match result {
        Err(e) if in_doubt => settle(fw, e, prove),
        r => r,
    }
}

/// A persistent `create(path, data)` with container parents, applied at most
/// once (see the module doc). `path` is the client's path.
///
/// # Errors
///
/// As [`set_versioned`]; `NoNode` when the parents could not be made.
pub(crate) fn create_once(fw: &CuratorFramework, path: &str, data: &[u8]) -> Result<Written, ZkError> {
    let sp = fw.fix_path(path);
    let acl = fw.acl_for_path(path);
    // An empty container parent may be reaped between our making it and the
    // create: a bounded number of rounds.
    let mut rounds = 0;
    loop {
        let mut in_doubt = false;
        let mut before = 0;
        let mut parent_missing = false;
        let prove = |c: &Client, before: i64| -> Result<Proof, ZkError> {
            let r = read(c, &sp)?;
            Ok(judge_create(r.as_ref().map(|(d, s)| (d.as_slice(), s)), data, before))
        };
        let result = fw.call_with_retry(|c| {
            if in_doubt {
                match prove(c, before)? {
                    Proof::Settled(w) => return Ok(w),
                    Proof::NotApplied => in_doubt = false,
                }
            }
            before = c.last_zxid();
            match c.create2(&sp, data, &acl, CreateMode::Persistent) {
                Ok((_, stat)) => Ok(Written::Applied { stat, read_back: false }),
                Err(ZkError::NodeExists { .. }) => Ok(Written::Conflict),
                Err(e @ ZkError::NoNode { .. }) => {
                    parent_missing = true;
                    Err(e)
                }
                Err(e) => {
                    in_doubt = may_have_applied(&e);
                    Err(e)
                }
            }
        });
        match result {
            Err(e) if in_doubt => return settle(fw, e, |c| prove(c, before)),
            Err(e @ ZkError::NoNode { .. }) if parent_missing && rounds < PARENT_ROUNDS => {
                rounds += 1;
                let Some(p) = parent(path).filter(|p| *p != "/") else {
                    return Err(e);
                };
                match fw
                    .create()
                    .creating_parent_containers_if_needed()
                    .with_mode(CreateMode::Container)
                    .for_path(p)
                {
                    Ok(_) | Err(ZkError::NodeExists { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            r => return r,
        }
    }
}

/// Rounds of making the parents again after `NoNode`.
const PARENT_ROUNDS: u32 = 5;

/// The retry loop ended while the write was in doubt: one more read-back,
/// with a fresh budget. Not applied: the write's error (nothing happened);
/// settled: that; the read failing too: unknown, nothing read.
fn settle(
    fw: &CuratorFramework,
    e: ZkError,
    prove: impl FnMut(&Client) -> Result<Proof, ZkError>,
) -> Result<Written, ZkError> {
    match fw.call_with_retry(prove) {
        Ok(Proof::NotApplied) => Err(e),
        Ok(Proof::Settled(w)) => Ok(w),
        Err(read_error) => {
            log::warn!("a write's reply was lost ({e}) and reading it back failed ({read_error}): outcome unknown");
            Ok(Written::Unknown { read: None })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(czxid: i64, mzxid: i64, version: i32) -> Stat {
        Stat {
            czxid,
            mzxid,
            version,
            ..Stat::default()
        }
    }

    const BASE: Base = Base {
        czxid: 10,
        mzxid: 20,
        version: 3,
    };

    fn applied(p: &Proof) -> bool {
        matches!(p, Proof::Settled(Written::Applied { read_back: true, .. }))
    }

    fn unknown(p: &Proof) -> bool {
        matches!(p, Proof::Settled(Written::Unknown { .. }))
    }

    #[test]
    fn a_set_is_proven_by_its_version_bytes_and_zxids() {
        let ours = [0, 0, 0, 1];
        // Unchanged since the read: not applied.
        assert!(matches!(
            judge_set(Some((&[0, 0, 0, 0], &stat(10, 20, 3))), &ours, &BASE),
            Proof::NotApplied
        ));
        // One write to our bytes: applied.
        assert!(applied(&judge_set(Some((&ours, &stat(10, 25, 4))), &ours, &BASE)));
        // One write to other bytes, two writes, a re-created node, a deleted one: unknown.
        assert!(unknown(&judge_set(
            Some((&[0, 0, 0, 2], &stat(10, 25, 4))),
            &ours,
            &BASE
        )));
        assert!(unknown(&judge_set(Some((&ours, &stat(10, 30, 5))), &ours, &BASE)));
        assert!(unknown(&judge_set(Some((&ours, &stat(22, 25, 4))), &ours, &BASE)));
        assert!(unknown(&judge_set(
            Some((&[0, 0, 0, 0], &stat(22, 22, 3))),
            &ours,
            &BASE
        )));
        assert!(unknown(&judge_set(None, &ours, &BASE)));
        // The version wraps as the server's does.
        let top = Base {
            version: i32::MAX,
            ..BASE
        };
        assert!(applied(&judge_set(Some((&ours, &stat(10, 25, i32::MIN))), &ours, &top)));
    }

    #[test]
    fn a_create_is_proven_by_its_zxid_bytes_and_owner() {
        let ours = [0, 0, 0, 1];
        assert!(matches!(judge_create(None, &ours, 5), Proof::NotApplied));
        assert!(applied(&judge_create(Some((&ours, &stat(9, 9, 0))), &ours, 5)));
        // Older than our create, other bytes, changed since, ephemeral: unknown.
        assert!(unknown(&judge_create(Some((&ours, &stat(4, 4, 0))), &ours, 5)));
        assert!(unknown(&judge_create(Some((&[1], &stat(9, 9, 0))), &ours, 5)));
        assert!(unknown(&judge_create(Some((&ours, &stat(9, 12, 1))), &ours, 5)));
        let mut eph = stat(9, 9, 0);
        eph.ephemeral_owner = 7;
        assert!(unknown(&judge_create(Some((&ours, &eph)), &ours, 5)));
    }
}
