//! Writes applied at most once: a versioned `setData` or a first `create`
//! whose reply may have been lost is never sent again blindly; its outcome
//! is proven by the write's own marker, or by reading the node back, or
//! reported as unknown with what was read.
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
//! # The proof: the write's own marker
//!
//! Each write is zk-framework's marked write
//! ([`zk_framework::recipe::Recipe::marked_write`]): one transaction with a
//! marker, an EPHEMERAL child `<path>/_c_<uuid>-once` of the node, created
//! or written with the write or not at all. A writer's first write creates
//! its marker; the writer ([`Markers`], one per counter or shared value)
//! keeps it, and its later writes `setData` it at its version in their
//! transaction. So a write is two requests with its read, as Curator's, and
//! no delete follows it. Each kept marker serves one write at a time
//! (concurrent writes of one writer make more, up to 16 kept), so after a
//! lost reply ([`zk_framework::Error::may_have_applied`]), on the same
//! session, the marker settles the outcome exactly, read after a `sync` on
//! the connection it is read on (so a follower the client reconnected to
//! that has not yet applied the lost write cannot answer): created, or one
//! version on, **applied** (by this writer: [`Written::Applied`] with
//! `marker`); missing (a new one), or at its version (a kept one), **not
//! applied**, and the write is sent again. Whose write it was is never in
//! doubt, whatever other writers did meanwhile. The node's data stays
//! Curator's bare bytes (no Curator recipe lists a counter's children).
//! Kept markers are deleted (without waiting) when their writer is dropped
//! or closed, and go with their session otherwise; while a writer lives, a
//! plain delete of its node from elsewhere meets `NotEmpty` (delete the
//! children too). A kept marker someone deleted or wrote is dropped, and
//! the write goes out at once with a new one.
//!
//! Only when the marker cannot tell (the session changed before the proof:
//! an ephemeral marker goes with its session; a kept marker deleted or
//! written by someone else meanwhile; or the node's ACL refuses the
//! marker's create, and the write goes out alone) is the node's data read
//! back, after a `sync` too, by the rules below, with their bound. When no
//! proof can be made in time (the sync or the read fails until the retries
//! or the deadline run out), the outcome is [`Written::Unknown`].
//!
//! # The read-back, for a versioned `setData(path, bytes, v)`
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
//! version between our read and the read-back (a window as long as the
//! disconnection, not one round trip) is indistinguishable. A versioned write from
//! `v` by that client excludes ours (both are conditional on `v`: one is
//! applied, the other fails), so the server's value is always right, and the
//! value never counts twice. But the attribution can be wrong: for a counter,
//! two clients adding the same delta from the same base compute the same
//! bytes; if theirs won and the reply to our (rejected) write was lost, both
//! are told "applied" for one change on the server. An unconditional writer
//! (Curator's `forceSet`, `SharedValue.setValue`) of the same bytes at that
//! moment does the same. This takes a lost reply, a session that changed
//! (or a refused marker) *and* a concurrent identical write; callers that
//! cannot accept it (unique ids from a counter) treat an outcome proven by
//! read-back as unknown: the outcome says which proof it rests on.
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

use std::time::Instant;

use parking_lot::Mutex;
use zk_framework::proto::path::{join, parent};
use zk_framework::recipe::{Applied, KeptMarker, MarkedWrite, Marker, Settled, WriteProof};
use zk_framework::{CreateMode, CuratorFramework, Error as ZkError, Op, OpResult, ReadResult, RetryDecision, Stat};

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
    /// Applied: by the reply itself, by the write's marker (`marker`: exact)
    /// or by reading the node back (`read_back`: see the module's bound).
    Applied { stat: Stat, read_back: bool, marker: bool },
    /// Not applied: the version moved (`BadVersion`) or, for a create, the
    /// node exists.
    Conflict,
    /// Not applied: a versioned set found no node.
    Missing,
    /// Whether it was applied is unknown; what the read-back found.
    Unknown { read: ReadBack },
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
            marker: false,
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
            marker: false,
        })
    } else {
        Proof::Settled(Written::Unknown {
            read: Some((data.to_vec(), s.clone())),
        })
    }
}

/// The name of a write's marker: protected (`_c_<uuid>-`), so that every
/// tool that knows Curator's protected names sees it is a client's own.
fn marker_name() -> String {
    zk_framework::paths::protected_name(&zk_framework::paths::new_protected_id(), "once")
}

/// Most markers a writer keeps between its writes (one per write in flight
/// at once on the node; more than this are deleted when their write ends).
const MAX_KEPT: usize = 16;

/// Something kept per session (a kept marker goes with its session).
trait OfSession {
    fn session(&self) -> i64;
}

impl OfSession for KeptMarker {
    fn session(&self) -> i64 {
        KeptMarker::session(self)
    }
}

/// The markers one writer (a counter, a shared value) keeps under its node
/// between writes, so that a write after the first is one transaction
/// (`setData` on the node and on its marker) and no delete: two requests
/// per update with the read, as Curator's, where a marker made and deleted
/// per write cost three. Each kept marker serves one write at a time, so
/// its version tells exactly whether that write was applied. Kept markers
/// are deleted (without waiting) when the writer is dropped, and go with
/// their session otherwise.
pub(crate) struct Markers {
    client: CuratorFramework,
    pool: Pool<KeptMarker>,
}

/// The kept markers themselves: at most [`MAX_KEPT`], those of the current
/// session only.
#[derive(Debug)]
struct Pool<M> {
    free: Mutex<Vec<M>>,
}

impl<M> Default for Pool<M> {
    fn default() -> Self {
        Pool {
            free: Mutex::new(Vec::new()),
        }
    }
}

impl<M: OfSession> Pool<M> {
    /// A kept marker of `session`; those of other sessions are forgotten
    /// (they went with their session).
    fn take(&self, session: i64) -> Option<M> {
        let mut free = self.free.lock();
        free.retain(|m| m.session() == session);
        free.pop()
    }

    /// Keeps `m`; gives it back when [`MAX_KEPT`] are kept already (to be
    /// deleted).
    fn keep(&self, m: M) -> Option<M> {
        let mut free = self.free.lock();
        if free.len() < MAX_KEPT {
            free.push(m);
            None
        } else {
            Some(m)
        }
    }

    /// Every kept marker, the pool emptied.
    fn drain(&self) -> Vec<M> {
        std::mem::take(&mut *self.free.lock())
    }
}

impl std::fmt::Debug for Markers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Markers")
            .field("kept", &self.pool.free.lock().len())
            .finish()
    }
}

impl Markers {
    pub(crate) fn new(client: &CuratorFramework) -> Markers {
        Markers {
            client: client.clone(),
            pool: Pool::default(),
        }
    }

    /// The marker for the next write on `path`: a kept one of the current
    /// session, else a new one.
    fn next(&self, path: &str) -> Marker {
        match self.pool.take(self.client.session_id()) {
            Some(m) => Marker::Kept(m),
            None => {
                let p = join(path, &marker_name());
                let acl = self.client.acl_for_path(&p);
                Marker::fresh(p, acl)
            }
        }
    }

    /// Keeps `m` for the next write, or deletes it when enough are kept.
    fn keep(&self, m: KeptMarker) {
        if let Some(extra) = self.pool.keep(m) {
            self.forget(&extra);
        }
    }

    /// Gives an unused marker back (a kept one goes back to the pool).
    fn give_back(&self, m: Marker) {
        if let Marker::Kept(k) = m {
            self.keep(k);
        }
    }

    /// Deletes a marker without waiting (it goes with its session otherwise).
    fn forget(&self, m: &KeptMarker) {
        let path = m.path().to_string();
        if let Err(e) = self.client.recipe().delete_detached(m.path(), None, move |r| {
            if let Err(e) = r {
                log::debug!("deleting the marker {path}: {e}");
            }
        }) {
            log::debug!("deleting the marker {}: {e}", m.path());
        }
    }

    /// Deletes the kept markers (without waiting).
    pub(crate) fn release(&self) {
        let session = self.client.session_id();
        for m in self.pool.drain().into_iter().filter(|m| m.session() == session) {
            self.forget(&m);
        }
    }
}

impl Drop for Markers {
    fn drop(&mut self) {
        self.release();
    }
}

/// Which write: what its refusals mean, and how its stat is known.
#[derive(Clone, Copy)]
enum Kind<'a> {
    /// A versioned `setData` from `base`.
    Set(&'a Base),
    /// A first persistent `create`.
    Create,
}

/// `setData(path, data, base.version)`, applied at most once and its
/// outcome proven by its marker (see the module doc); without a marker
/// when the node's ACL refuses one. `path` is the client's path (namespace
/// not applied).
///
/// # Errors
///
/// The write's error when it was certainly not applied (`NoAuth`, a
/// retryable error when the retries ran out and the proof showed it was not
/// applied, ...).
pub(crate) fn set_versioned(
    fw: &CuratorFramework,
    markers: &Markers,
    path: &str,
    data: &[u8],
    base: &Base,
) -> Result<Written, ZkError> {
    let op = Op::set_data(path, data.to_vec(), Some(base.version));
    write_once(fw, markers, path, op, data, Kind::Set(base))
}

/// A persistent `create(path, data)` with container parents, applied at
/// most once and proven by its marker (see the module doc); without a
/// marker when the ACL refuses one. `path` is the client's path.
///
/// # Errors
///
/// As [`set_versioned`]; `NoNode` when the parents could not be made.
pub(crate) fn create_once(
    fw: &CuratorFramework,
    markers: &Markers,
    path: &str,
    data: &[u8],
) -> Result<Written, ZkError> {
    let op = Op::create(path, data.to_vec(), fw.acl_for_path(path), CreateMode::Persistent);
    let mut rounds = 0;
    loop {
        match write_once(fw, markers, path, op.clone(), data, Kind::Create) {
            Err(e @ ZkError::NoNode { .. }) if rounds < PARENT_ROUNDS => {
                rounds += 1;
                make_parent(fw, path, e)?;
            }
            r => return r,
        }
    }
}

/// The one marked write of a writer: `op` on `path` with a marker (a kept
/// one, else a new one; none when the node's ACL refuses one), through
/// zk-framework's marked write, whose proof is the marker or, when it
/// cannot tell, `kind`'s read-back rule.
fn write_once(
    fw: &CuratorFramework,
    markers: &Markers,
    path: &str,
    op: Op,
    data: &[u8],
    kind: Kind<'_>,
) -> Result<Written, ZkError> {
    let policy = fw.retry_policy();
    let start = Instant::now();
    let mut resends = 0;
    let mut unmarked = false;
    loop {
        let marker = if unmarked { Marker::Unmarked } else { markers.next(path) };
        let write = MarkedWrite::new(vec![op.clone()], marker).read_back(path);
        match fw.recipe().marked_write(write)? {
            Settled::Applied(applied) => {
                if let Some(m) = applied.marker.clone() {
                    markers.keep(m);
                }
                return Ok(Written::Applied {
                    stat: stat_of(&applied, data, kind),
                    read_back: false,
                    marker: applied.proof == WriteProof::Marker,
                });
            }
            // The write's own op: nothing was applied, and the marker is
            // as it was.
            Settled::Refused {
                index: 0,
                error,
                marker,
                ..
            } => {
                markers.give_back(marker);
                return match (error, kind) {
                    (ZkError::BadVersion { .. } | ZkError::NodeExists { .. }, _) => Ok(Written::Conflict),
                    // The node is gone, and its markers with it.
                    (ZkError::NoNode { .. }, Kind::Set(_)) => Ok(Written::Missing),
                    (e, _) => Err(e),
                };
            }
            // The marker's op.
            Settled::Refused { error, marker, .. } => match marker {
                // A kept marker someone deleted or wrote: dropped, and the
                // write goes out at once with a new one.
                Marker::Kept(k) => {
                    if !matches!(error, ZkError::NoNode { .. }) {
                        markers.forget(&k);
                    }
                }
                // The node's ACL refuses a marker: the write goes out alone.
                Marker::Fresh { .. } if matches!(error, ZkError::NoAuth { .. }) => unmarked = true,
                _ => return Err(error),
            },
            Settled::ReadBack {
                reads,
                zxid_before,
                error,
                ..
            } => {
                let read = match reads.first() {
                    Some(ReadResult::Data(d)) => d.as_ref().map(|(d, s)| (d.as_slice(), s)),
                    // The read-back was refused: nothing is known.
                    _ => return Ok(Written::Unknown { read: None }),
                };
                let verdict = match kind {
                    Kind::Set(base) => judge_set(read, data, base),
                    Kind::Create => judge_create(read, data, zxid_before),
                };
                match verdict {
                    Proof::Settled(w) => return Ok(w),
                    // Not applied: sent again, as the retry policy allows.
                    Proof::NotApplied => match policy.next_retry(resends, start.elapsed()) {
                        RetryDecision::RetryAfter(d) => {
                            resends += 1;
                            fw.recipe().pause(d)?;
                        }
                        RetryDecision::GiveUp => return Err(error),
                    },
                }
            }
            Settled::Unknown { .. } => return Ok(Written::Unknown { read: None }),
            other => {
                log::warn!("a marked write of {path} ended unexpectedly: {other:?}");
                return Ok(Written::Unknown { read: None });
            }
        }
    }
}

/// The Stat the applied write gave the node: from its reply, else from the
/// node as read after the proof (when nothing changed it since), else
/// built from the transaction's zxid (one version on, or a new node).
fn stat_of(applied: &Applied, data: &[u8], kind: Kind<'_>) -> Stat {
    if let Some(Some(OpResult::SetData { stat })) = applied.results.as_ref().map(|r| r.first()) {
        return stat.clone();
    }
    if let Some(Some(OpResult::Create { stat: Some(stat), .. })) = applied.results.as_ref().map(|r| r.first()) {
        return stat.clone();
    }
    if let Some((_, s)) = applied.reads.first().and_then(ReadResult::data) {
        if s.mzxid == applied.zxid {
            return s.clone();
        }
    }
    let (czxid, version) = match kind {
        Kind::Set(base) => (base.czxid, base.version.wrapping_add(1)),
        Kind::Create => (applied.zxid, 0),
    };
    Stat {
        czxid,
        mzxid: applied.zxid,
        pzxid: if matches!(kind, Kind::Create) { applied.zxid } else { 0 },
        version,
        data_length: data.len().try_into().unwrap_or(i32::MAX),
        ..Stat::default()
    }
}

/// Makes `path`'s parent (containers) after a create met `NoNode` (`e`):
/// the parent is missing, or an empty container was reaped meanwhile. The
/// root has no parent to make: `e` again.
fn make_parent(fw: &CuratorFramework, path: &str, e: ZkError) -> Result<(), ZkError> {
    let Some(p) = parent(path).filter(|p| *p != "/") else {
        return Err(e);
    };
    match fw
        .create()
        .creating_parent_containers_if_needed()
        .with_mode(CreateMode::Container)
        .for_path(p)
    {
        Ok(_) | Err(ZkError::NodeExists { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Rounds of making the parents again after `NoNode`.
const PARENT_ROUNDS: u32 = 5;

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
    fn a_writer_keeps_at_most_sixteen_markers_of_its_current_session() {
        #[derive(Debug, Clone, PartialEq, Eq)]
        struct M(usize, i64);
        impl OfSession for M {
            fn session(&self) -> i64 {
                self.1
            }
        }
        let m = |i: usize, session: i64| M(i, session);
        let pool = Pool::<M>::default();
        // 20 writes ended at once: 16 kept, 4 given back to be deleted.
        let extra: Vec<M> = (0..20).filter_map(|i| pool.keep(m(i, 7))).collect();
        assert_eq!(extra, (16..20).map(|i| m(i, 7)).collect::<Vec<_>>());
        // Each one taken serves one write at a time.
        let taken: Vec<M> = (0..16).filter_map(|_| pool.take(7)).collect();
        assert_eq!(taken.len(), 16);
        assert_eq!(pool.take(7), None, "none left: a new one is made");
        for t in taken {
            assert_eq!(pool.keep(t), None);
        }
        // Another session's markers went with it: forgotten, never used.
        assert_eq!(pool.take(8), None);
        assert_eq!(pool.drain(), Vec::<M>::new(), "forgotten by the take");
        assert_eq!(pool.keep(m(1, 8)), None);
        assert_eq!(pool.drain(), vec![m(1, 8)]);
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
