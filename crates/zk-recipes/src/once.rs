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
//! # The proof: the write's own marker
//!
//! Each write goes out as one transaction (a `multi`) with a marker: an
//! EPHEMERAL child `<path>/_c_<uuid>-once` of the node, written with the
//! write or not at all. A writer's first write creates its marker; the
//! writer ([`Markers`], one per counter or shared value) keeps it, and its
//! later writes `setData` it at its version in their transaction. So a
//! write is two requests with its read, as Curator's, and no delete
//! follows it. Each kept marker serves one write at a time (concurrent
//! writes of one writer make more, up to 16 kept), so after a lost reply,
//! on the same session, the marker settles the outcome exactly: created,
//! or one version on, **applied** (by this writer: [`Written::Applied`] with
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
//! back, by the rules below, with their bound.
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

use parking_lot::Mutex;
use zk_framework::proto::path::parent;
use zk_framework::{Client, CreateMode, CuratorFramework, Error as ZkError, Op, OpResult, Stat};

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

fn read(c: &Client, server_path: &str) -> Result<Option<(Vec<u8>, Stat)>, ZkError> {
    match c.get_data(server_path) {
        Ok(r) => Ok(Some(r)),
        Err(ZkError::NoNode { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// `setData(path, data, base.version)` without a marker, its outcome after a
/// lost reply proven by reading the node back (see the module doc).
///
/// # Errors
///
/// The write's error when it was certainly not applied (`NoAuth`, a
/// retryable error when the retries ran out and the read-back proved it was
/// not applied, ...).
fn set_plain(fw: &CuratorFramework, path: &str, data: &[u8], base: &Base) -> Result<Written, ZkError> {
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
            Ok(stat) => Ok(Written::Applied {
                stat,
                read_back: false,
                marker: false,
            }),
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

/// A persistent `create(path, data)` with container parents, without a
/// marker (see the module doc).
///
/// # Errors
///
/// As [`set_versioned`]; `NoNode` when the parents could not be made.
fn create_plain(fw: &CuratorFramework, path: &str, data: &[u8]) -> Result<Written, ZkError> {
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
                Ok((_, stat)) => Ok(Written::Applied {
                    stat,
                    read_back: false,
                    marker: false,
                }),
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
                make_parent(fw, path, e)?;
            }
            r => return r,
        }
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

/// A marker kept between writes: its server path, the session that created
/// it (it went with that session) and the version its last write left.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Marker {
    path: String,
    session: i64,
    version: i32,
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
    pool: Pool,
}

/// The kept markers themselves: at most [`MAX_KEPT`], those of the current
/// session only.
#[derive(Debug, Default)]
struct Pool {
    free: Mutex<Vec<Marker>>,
}

impl Pool {
    /// A kept marker of `session`; those of other sessions are forgotten
    /// (they went with their session).
    fn take(&self, session: i64) -> Option<Marker> {
        let mut free = self.free.lock();
        free.retain(|m| m.session == session);
        free.pop()
    }

    /// Keeps `m`; gives it back when [`MAX_KEPT`] are kept already (to be
    /// deleted).
    fn keep(&self, m: Marker) -> Option<Marker> {
        let mut free = self.free.lock();
        if free.len() < MAX_KEPT {
            free.push(m);
            None
        } else {
            Some(m)
        }
    }

    /// Every kept marker, the pool emptied.
    fn drain(&self) -> Vec<Marker> {
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

    /// Keeps `m` for the next write, or deletes it when enough are kept.
    fn keep(&self, c: &Client, m: Marker) {
        if let Some(extra) = self.pool.keep(m) {
            forget(c, &extra.path);
        }
    }

    /// Deletes the kept markers (without waiting).
    pub(crate) fn release(&self) {
        let free = self.pool.drain();
        if free.is_empty() {
            return;
        }
        let c = self.client.zookeeper_client();
        let session = c.session_id();
        for m in free.into_iter().filter(|m| m.session == session) {
            forget(&c, &m.path);
        }
    }
}

impl Drop for Markers {
    fn drop(&mut self) {
        self.release();
    }
}

/// What a marked write ended with.
enum Marked {
    /// Settled.
    Done(Written),
    /// The marker's create was refused (the node's ACL): nothing was
    /// applied; the write goes out alone.
    Refused,
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
    let write = |sp: &str| Op::SetData {
        path: sp.to_string(),
        data: data.to_vec(),
        version: Some(base.version),
    };
    let judge = |c: &Client, sp: &str| -> Result<Proof, ZkError> {
        let r = read(c, sp)?;
        Ok(judge_set(r.as_ref().map(|(d, s)| (d.as_slice(), s)), data, base))
    };
    let found = |c: &Client, sp: &str, marker_zxid: i64| -> Stat {
        // Our write's stat: the node's, unless it moved on since (then ours
        // as it was: one version on, changed in the marker's transaction).
        let mut stat = read(c, sp).ok().flatten().map(|(_, s)| s).unwrap_or_default();
        if stat.mzxid != marker_zxid {
            stat.version = base.version.wrapping_add(1);
            stat.mzxid = marker_zxid;
            stat.czxid = base.czxid;
        }
        stat
    };
    match marked(fw, markers, path, write, judge, found, |_| {})? {
        Marked::Done(w) => Ok(w),
        Marked::Refused => set_plain(fw, path, data, base),
    }
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
    let acl = fw.acl_for_path(path);
    let mut rounds = 0;
    loop {
        let before = std::cell::Cell::new(0);
        let write = |sp: &str| Op::Create {
            path: sp.to_string(),
            data: data.to_vec(),
            acl: acl.clone(),
            mode: CreateMode::Persistent,
            ttl: None,
        };
        let judge = |c: &Client, sp: &str| -> Result<Proof, ZkError> {
            let r = read(c, sp)?;
            Ok(judge_create(
                r.as_ref().map(|(d, s)| (d.as_slice(), s)),
                data,
                before.get(),
            ))
        };
        let found = |c: &Client, sp: &str, marker_zxid: i64| -> Stat {
            let mut stat = read(c, sp).ok().flatten().map(|(_, s)| s).unwrap_or_default();
            if stat.czxid != marker_zxid {
                stat.czxid = marker_zxid;
                stat.mzxid = marker_zxid;
                stat.version = 0;
            }
            stat
        };
        let r = marked(fw, markers, path, write, judge, found, |c| before.set(c.last_zxid()));
        match r {
            Ok(Marked::Done(w)) => return Ok(w),
            Ok(Marked::Refused) => return create_plain(fw, path, data),
            Err(e @ ZkError::NoNode { .. }) if rounds < PARENT_ROUNDS => {
                rounds += 1;
                make_parent(fw, path, e)?;
            }
            Err(e) => return Err(e),
        }
    }
}

/// The marker one send of a write goes with.
#[derive(Debug, Clone)]
enum Use {
    /// Created by the write's transaction (server path).
    Fresh(String),
    /// Kept from an earlier write, written by this one (`setData` at its
    /// version).
    Kept(Marker),
}

/// What the marker says of a write sent with it (on its session).
enum Told {
    /// Applied: the zxid of the write's transaction, the marker to keep.
    Applied(i64, Marker),
    /// Not applied: the marker (when it exists) to keep.
    NotApplied(Option<Marker>),
    /// The marker cannot tell (a kept one deleted or written by someone
    /// else): the node's data is read back.
    Cannot,
}

/// Asks the marker whether the write sent with it was applied.
fn ask(c: &Client, used: &Use, session: i64) -> Result<Told, ZkError> {
    Ok(match used {
        Use::Fresh(path) => match c.exists(path)? {
            Some(s) => Told::Applied(
                s.czxid,
                Marker {
                    path: path.clone(),
                    session,
                    version: s.version,
                },
            ),
            None => Told::NotApplied(None),
        },
        Use::Kept(m) => match c.exists(&m.path)? {
            Some(s) if s.version == m.version.wrapping_add(1) => Told::Applied(
                s.mzxid,
                Marker {
                    version: s.version,
                    ..m.clone()
                },
            ),
            Some(s) if s.version == m.version => Told::NotApplied(Some(m.clone())),
            Some(_) => {
                forget(c, &m.path);
                Told::Cannot
            }
            None => Told::Cannot,
        },
    })
}

/// The one marked write: `write` and its marker (a kept one written, or a
/// new one created) in one transaction through the client's retry loop;
/// after an error that may have let it through, the marker (on the same
/// session) or, when the session changed or the marker cannot tell,
/// `judge`'s read-back settles it; `found` gives the write's stat from the
/// zxid of the marker's transaction; `sending` runs before each send.
fn marked(
    fw: &CuratorFramework,
    markers: &Markers,
    path: &str,
    write: impl Fn(&str) -> Op,
    judge: impl Fn(&Client, &str) -> Result<Proof, ZkError>,
    found: impl Fn(&Client, &str, i64) -> Stat,
    sending: impl Fn(&Client),
) -> Result<Marked, ZkError> {
    let sp = fw.fix_path(path);
    // The send in doubt: its session and its marker.
    let mut in_doubt: Option<(i64, Use)> = None;
    // A kept marker not used up by this write goes back to the pool.
    let mut spare: Option<Marker> = None;
    let prove =
        |c: &Client, session: i64, used: &Use, spare: &mut Option<Marker>| -> Result<Option<Written>, ZkError> {
            let told = if c.session_id() == session {
                ask(c, used, session)?
            } else {
                // The marker went with its session: the node's data is all
                // there is to read (the read-back's bound applies).
                Told::Cannot
            };
            Ok(match told {
                Told::Applied(zxid, m) => {
                    markers.keep(c, m);
                    Some(Written::Applied {
                        stat: found(c, &sp, zxid),
                        read_back: false,
                        marker: true,
                    })
                }
                Told::NotApplied(m) => {
                    *spare = m;
                    None
                }
                Told::Cannot => match judge(c, &sp)? {
                    Proof::Settled(w) => Some(w),
                    Proof::NotApplied => None,
                },
            })
        };
    let result = fw.call_with_retry(|c| {
        if let Some((session, used)) = in_doubt.take() {
            match prove(c, session, &used, &mut spare) {
                Ok(Some(w)) => return Ok(Marked::Done(w)),
                Ok(None) => {}
                Err(e) => {
                    in_doubt = Some((session, used));
                    return Err(e);
                }
            }
        }
        let session = c.session_id();
        loop {
            let kept = spare
                .take()
                .filter(|m| m.session == session)
                .or_else(|| markers.pool.take(session));
            let used = match kept {
                Some(m) => Use::Kept(m),
                None => Use::Fresh(format!("{sp}/{}", marker_name())),
            };
            let marker_op = match &used {
                Use::Fresh(p) => Op::create(
                    p.clone(),
                    Vec::new(),
                    fw.acl_for_path(&fw.unfix_path(p)),
                    CreateMode::Ephemeral,
                ),
                Use::Kept(m) => Op::set_data(m.path.clone(), Vec::new(), Some(m.version)),
            };
            sending(c);
            let results = match c.multi_results(vec![write(&sp), marker_op]) {
                Ok(r) => r,
                Err(e) => {
                    if may_have_applied(&e) {
                        in_doubt = Some((session, used));
                    } else if let Use::Kept(m) = used {
                        spare = Some(m);
                    }
                    return Err(e);
                }
            };
            let (first, second) = (results.first(), results.get(1));
            let applied = match first {
                Some(OpResult::SetData { stat }) => Some(stat.clone()),
                Some(OpResult::Create { stat, .. }) => {
                    Some(stat.clone().unwrap_or_else(|| found(c, &sp, c.last_zxid())))
                }
                _ => None,
            };
            let marker_after = match (second, &used) {
                (Some(OpResult::Create { .. }), Use::Fresh(p)) => Some(Marker {
                    path: p.clone(),
                    session,
                    version: 0,
                }),
                (Some(OpResult::SetData { stat }), Use::Kept(m)) => Some(Marker {
                    version: stat.version,
                    ..m.clone()
                }),
                _ => None,
            };
            if let (Some(stat), Some(m)) = (applied, marker_after) {
                markers.keep(c, m);
                return Ok(Marked::Done(Written::Applied {
                    stat,
                    read_back: false,
                    marker: false,
                }));
            }
            // Not applied (a transaction is all or nothing): why.
            let (e1, e2) = (first.and_then(OpResult::error), second.and_then(OpResult::error));
            let unused = match used {
                Use::Kept(m) => Some(m),
                Use::Fresh(_) => None,
            };
            match (e1, e2) {
                (Some(ZkError::BadVersion { .. }), _) | (Some(ZkError::NodeExists { .. }), _) => {
                    spare = unused;
                    return Ok(Marked::Done(Written::Conflict));
                }
                (Some(ZkError::NoNode { .. }), _) if matches!(write(&sp), Op::SetData { .. }) => {
                    // The node is gone, and its markers with it.
                    return Ok(Marked::Done(Written::Missing));
                }
                (Some(e @ ZkError::NoNode { .. }), _) => return Err(e.clone()),
                (Some(e), _) if e.code() != Some(zk_framework::proto::ErrorCode::RuntimeInconsistency) => {
                    spare = unused;
                    return Err(e.clone());
                }
                (_, Some(e)) => match unused {
                    // A kept marker someone deleted or wrote: dropped, and
                    // the write goes out at once with a new one.
                    Some(m) => {
                        if !matches!(e, ZkError::NoNode { .. }) {
                            forget(c, &m.path);
                        }
                        continue;
                    }
                    None if matches!(e, ZkError::NoAuth { .. }) => return Ok(Marked::Refused),
                    None => return Err(e.clone()),
                },
                _ => {
                    return Err(ZkError::InvalidArgument(
                        "a transaction's results did not match its requests".into(),
                    ))
                }
            }
        }
    });
    let result = match result {
        Err(e) => match in_doubt.take() {
            // The retries ran out while in doubt: one more proof, with a
            // fresh budget.
            Some((session, used)) => match fw.call_with_retry(|c| prove(c, session, &used, &mut spare)) {
                Ok(Some(w)) => Ok(Marked::Done(w)),
                Ok(None) => Err(e),
                Err(read_error) => {
                    log::warn!("a write's reply was lost ({e}) and proving it failed ({read_error}): outcome unknown");
                    Ok(Marked::Done(Written::Unknown { read: None }))
                }
            },
            None => Err(e),
        },
        r => r,
    };
    if let Some(m) = spare {
        let c = fw.zookeeper_client();
        if c.session_id() == m.session {
            markers.keep(&c, m);
        }
    }
    result
}

/// Deletes a marker without waiting (it goes with its session otherwise).
fn forget(c: &Client, marker: &str) {
    let m = marker.to_string();
    if let Err(e) = c.delete_detached(marker, None, move |r| {
        if let Err(e) = r {
            log::debug!("deleting the marker {m}: {e}");
        }
    }) {
        log::debug!("deleting the marker {marker}: {e}");
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
    fn a_writer_keeps_at_most_sixteen_markers_of_its_current_session() {
        let m = |i: usize, session: i64| Marker {
            path: format!("/n/_c_{i}-once"),
            session,
            version: 0,
        };
        let pool = Pool::default();
        // 20 writes ended at once: 16 kept, 4 given back to be deleted.
        let extra: Vec<Marker> = (0..20).filter_map(|i| pool.keep(m(i, 7))).collect();
        assert_eq!(extra, (16..20).map(|i| m(i, 7)).collect::<Vec<_>>());
        // Each one taken serves one write at a time.
        let taken: Vec<Marker> = (0..16).filter_map(|_| pool.take(7)).collect();
        assert_eq!(taken.len(), 16);
        assert_eq!(pool.take(7), None, "none left: a new one is made");
        for t in taken {
            assert_eq!(pool.keep(t), None);
        }
        // Another session's markers went with it: forgotten, never used.
        assert_eq!(pool.take(8), None);
        assert_eq!(pool.drain(), Vec::<Marker>::new(), "forgotten by the take");
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
