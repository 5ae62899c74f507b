//! The marked write: a transaction that carries its own marker, and the one
//! function that settles a lost reply exactly (see
//! [`Recipe::marked_write`](crate::recipe::Recipe::marked_write)).

use crate::client::{Client, Op, OpResult, ReadOp, ReadResult};
use crate::error::{Error, Result};
use crate::framework::CuratorFramework;
use zk_proto::{Acl, CreateMode, ErrorCode};

/// The marker a [`MarkedWrite`] goes with: an EPHEMERAL node that its
/// transaction creates ([`Marker::fresh`]) or writes at its version (a
/// [`KeptMarker`] from an earlier write of the same session). The
/// transaction is all or nothing, so the marker changed if and only if the
/// write was applied.
///
/// # Examples
///
/// ```
/// use zk_framework::recipe::Marker;
/// use zk_framework::Acl;
/// let m = Marker::fresh("/counter/_c_1f2e-once", Acl::open_unsafe());
/// assert_eq!(m.path(), Some("/counter/_c_1f2e-once"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Marker {
    /// A new marker, created by the transaction with this ACL. Its name must
    /// be unique (a UUID in it): its existence alone proves the write.
    Fresh {
        /// The marker's path (the client's, namespace not applied).
        path: String,
        /// Its ACL.
        acl: Vec<Acl>,
    },
    /// A marker an earlier write of this session created and kept, written
    /// again (`setData` at its version) by this transaction.
    Kept(KeptMarker),
    /// No marker (for a node whose ACL refuses one): a lost reply is settled
    /// by the caller's own rule on the read-back alone
    /// ([`Settled::ReadBack`] with [`Unproven::NoMarker`]).
    Unmarked,
}

impl Marker {
    /// A new marker at `path` (unique: a UUID in its name) with `acl`.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::recipe::Marker;
    /// let m = Marker::fresh("/q/_op-1", zk_framework::Acl::open_unsafe());
    /// assert!(matches!(m, Marker::Fresh { .. }));
    /// ```
    pub fn fresh(path: impl Into<String>, acl: Vec<Acl>) -> Marker {
        Marker::Fresh { path: path.into(), acl }
    }

    /// The marker's path (the client's); `None` for [`Marker::Unmarked`].
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::recipe::Marker;
    /// let m = Marker::fresh("/q/_op-1", zk_framework::Acl::open_unsafe());
    /// assert_eq!(m.path(), Some("/q/_op-1"));
    /// assert_eq!(Marker::Unmarked.path(), None);
    /// ```
    pub fn path(&self) -> Option<&str> {
        match self {
            Marker::Fresh { path, .. } => Some(path),
            Marker::Kept(k) => Some(&k.path),
            Marker::Unmarked => None,
        }
    }
}

/// A marker a marked write left in place, to be written by the next write of
/// the same session ([`Marker::Kept`]). Only
/// [`Recipe::marked_write`](crate::recipe::Recipe::marked_write) makes one
/// (from what the server showed), so its version is the server's.
///
/// # Examples
///
/// ```no_run
/// use zk_framework::recipe::{MarkedWrite, Marker, Settled};
/// use zk_framework::{Acl, Op};
/// # let fw = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// let first = fw.recipe().marked_write(MarkedWrite::new(
///     vec![Op::set_data("/c", b"1".to_vec(), Some(0))],
///     Marker::fresh("/c/_c_5a-once", Acl::open_unsafe()),
/// ))?;
/// if let Settled::Applied(applied) = first {
///     let kept = applied.marker.expect("it had one"); // the next write sets it at its version
///     assert_eq!(kept.version(), 0);
///     let _next = Marker::Kept(kept);
/// }
/// # Ok::<(), zk_framework::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptMarker {
    path: String,
    session: i64,
    version: i32,
}

impl KeptMarker {
    /// The marker's path (the client's).
    ///
    /// # Examples
    ///
    /// See [`KeptMarker`].
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The session it belongs to (an ephemeral node goes with its session:
    /// a marker of another session is gone).
    ///
    /// # Examples
    ///
    /// See [`KeptMarker`].
    pub fn session(&self) -> i64 {
        self.session
    }

    /// Its data version as the server last showed it.
    ///
    /// # Examples
    ///
    /// See [`KeptMarker`].
    pub fn version(&self) -> i32 {
        self.version
    }
}

/// A transaction and its marker, for
/// [`Recipe::marked_write`](crate::recipe::Recipe::marked_write); with the
/// paths to read back (`getData`) when the marker's proof is not enough.
///
/// # Examples
///
/// ```
/// use zk_framework::recipe::{MarkedWrite, Marker};
/// use zk_framework::{Acl, Op};
/// let w = MarkedWrite::new(vec![Op::set_data("/c", b"2".to_vec(), Some(1))], Marker::fresh("/c/_c_1-once", Acl::open_unsafe()))
///     .read_back("/c");
/// assert_eq!(w.ops().len(), 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkedWrite {
    ops: Vec<Op>,
    marker: Marker,
    read_back: Vec<String>,
}

impl MarkedWrite {
    /// `ops` (the client's paths), applied together with `marker`'s create or
    /// write, or not at all.
    ///
    /// # Examples
    ///
    /// See [`MarkedWrite`].
    pub fn new(ops: Vec<Op>, marker: Marker) -> MarkedWrite {
        MarkedWrite {
            ops,
            marker,
            read_back: Vec::new(),
        }
    }

    /// Reads `path` (`getData`) with every proof, after the sync: the
    /// [`Applied::reads`] and [`Settled::ReadBack`]'s reads, in the order
    /// given.
    ///
    /// # Examples
    ///
    /// See [`MarkedWrite`].
    pub fn read_back(mut self, path: impl Into<String>) -> MarkedWrite {
        self.read_back.push(path.into());
        self
    }

    /// The transaction's ops (without the marker's).
    ///
    /// # Examples
    ///
    /// See [`MarkedWrite`].
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    /// The marker.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::recipe::{MarkedWrite, Marker};
    /// let w = MarkedWrite::new(vec![], Marker::fresh("/m", zk_framework::Acl::open_unsafe()));
    /// assert_eq!(w.marker().path(), Some("/m"));
    /// ```
    pub fn marker(&self) -> &Marker {
        &self.marker
    }
}

/// What proved a write applied.
///
/// # Examples
///
/// ```
/// use zk_framework::recipe::WriteProof;
/// assert_ne!(WriteProof::Reply, WriteProof::Marker);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WriteProof {
    /// The transaction's own reply.
    Reply,
    /// Its reply was lost; its marker, read on the same session after a
    /// `sync` on the connection it was read on, had changed.
    Marker,
}

/// A marked write that was applied.
///
/// # Examples
///
/// See [`Recipe::marked_write`](crate::recipe::Recipe::marked_write).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Applied {
    /// What proved it.
    pub proof: WriteProof,
    /// The transaction's zxid: the czxid of every node it created, the mzxid
    /// of every node it set.
    pub zxid: i64,
    /// The results of the write's ops (namespace removed), when its reply
    /// told them ([`WriteProof::Reply`]); `None` when the marker proved it.
    pub results: Option<Vec<OpResult>>,
    /// The marker as the write left it, to keep for the next write of this
    /// session (or to delete); `None` for [`Marker::Unmarked`].
    pub marker: Option<KeptMarker>,
    /// The read-back paths as read after the proof ([`WriteProof::Marker`]),
    /// in the order given; empty when the reply told the outcome.
    pub reads: Vec<ReadResult>,
}

/// Why the marker could not settle a lost reply.
///
/// # Examples
///
/// ```
/// use zk_framework::recipe::Unproven;
/// assert_ne!(Unproven::SessionChanged, Unproven::MarkerChanged);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unproven {
    /// The session that sent the write ended before the proof: its ephemeral
    /// marker went with it.
    SessionChanged,
    /// A kept marker was deleted, or written by someone else, meanwhile.
    MarkerChanged,
    /// The write had no marker ([`Marker::Unmarked`]).
    NoMarker,
}

/// How a [`Recipe::marked_write`](crate::recipe::Recipe::marked_write) ended.
///
/// # Examples
///
/// See [`Recipe::marked_write`](crate::recipe::Recipe::marked_write).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Settled {
    /// Applied, once.
    Applied(Applied),
    /// The server refused the transaction: nothing was applied.
    Refused {
        /// Every op's result, the marker's last.
        results: Vec<OpResult>,
        /// The failing op's index (`ops().len()`: the marker's own op).
        index: usize,
        /// Its error.
        error: Error,
        /// The marker, given back: a kept one unchanged when the write's op
        /// failed, to be used again.
        marker: Marker,
    },
    /// The reply was lost and the marker cannot tell: the read-back paths,
    /// read after a `sync` (on the new session for
    /// [`Unproven::SessionChanged`]), for the caller's own rule.
    ReadBack {
        /// Why the marker cannot tell.
        why: Unproven,
        /// The read-back paths, in the order given.
        reads: Vec<ReadResult>,
        /// The client's last seen zxid when the write was last sent: a node
        /// it created has a larger czxid.
        zxid_before: i64,
        /// The error that lost the reply.
        error: Error,
    },
    /// The reply was lost and no proof could be made in time (the `sync` or
    /// the read failed, the retries or the deadline ran out): whether it was
    /// applied is unknown. Never guessed.
    Unknown {
        /// The error that ended the proof.
        error: Error,
    },
}

/// The send in doubt: its session and the error that lost its reply.
struct Doubt {
    session: i64,
    error: Error,
}

/// The marked write's state across the retry loop's attempts.
struct Write<'w> {
    fw: &'w CuratorFramework,
    ops: Vec<Op>,
    marker: Marker,
    /// The marker's server path (the sync's path too, else the first
    /// read-back's, else the root).
    marker_sp: Option<String>,
    sync_sp: String,
    /// The read-back reads (server paths).
    reads: Vec<ReadOp>,
    doubt: Option<Doubt>,
    zxid_before: i64,
}

pub(super) fn marked_write(fw: &CuratorFramework, w: MarkedWrite) -> Result<Settled> {
    let ops = w
        .ops
        .into_iter()
        .map(|op| {
            op.map_path(|p, sequential| {
                zk_proto::path::validate_path(p, sequential)?;
                Ok(fw.server_path(p))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    if let Some(p) = w.marker.path() {
        zk_proto::path::validate_path(p, false)?;
    }
    let reads: Vec<ReadOp> = w
        .read_back
        .iter()
        .map(|p| {
            zk_proto::path::validate_path(p, false)?;
            Ok(ReadOp::get_data(fw.server_path(p)))
        })
        .collect::<Result<Vec<_>>>()?;
    let marker_sp = w.marker.path().map(|p| fw.server_path(p));
    let sync_sp = marker_sp
        .clone()
        .or_else(|| reads.first().map(|r| r.path().to_string()))
        .unwrap_or_else(|| fw.server_path("/"));
    let mut write = Write {
        fw,
        ops,
        marker_sp,
        sync_sp,
        marker: w.marker,
        reads,
        doubt: None,
        zxid_before: 0,
    };
    let result = fw.retry(|c| write.attempt(c));
    match result {
        Ok(settled) => Ok(settled),
        Err(e) => match write.doubt.take() {
            None => Err(e),
            // The retries ran out while in doubt: one more proof, with a
            // fresh budget (and the handle's deadline, if any).
            Some(doubt) => {
                let proven = fw.retry(|c| write.prove(c, &doubt));
                match proven {
                    Ok(Some(settled)) => Ok(settled),
                    // Proven not applied: the write's own error stands.
                    Ok(None) => Err(e),
                    Err(proof_error) => {
                        log::warn!(
                            "a marked write's reply was lost ({}) and proving it failed ({proof_error}): outcome unknown",
                            doubt.error
                        );
                        Ok(Settled::Unknown { error: proof_error })
                    }
                }
            }
        },
    }
}

impl Write<'_> {
    /// One attempt of the retry loop: the proof of the send in doubt, if
    /// any; then, when it was not applied (or nothing is in doubt), a send.
    fn attempt(&mut self, c: &Client) -> Result<Settled> {
        if let Some(doubt) = self.doubt.take() {
            match self.prove(c, &doubt) {
                Ok(Some(settled)) => return Ok(settled),
                Ok(None) => log::debug!("a marked write was not applied ({}): sent again", doubt.error),
                Err(e) => {
                    self.doubt = Some(doubt);
                    return Err(e);
                }
            }
        }
        let session = c.session_id();
        let sp = self.marker_sp.clone().unwrap_or_default();
        let marker_op = match &self.marker {
            Marker::Fresh { acl, .. } => Some(Op::create(sp, Vec::new(), acl.clone(), CreateMode::Ephemeral)),
            Marker::Kept(k) if k.session == session => Some(Op::set_data(sp, Vec::new(), Some(k.version))),
            // A marker of an ended session went with it: the transaction
            // would fail on it.
            Marker::Kept(_) => return Ok(self.refused_marker_gone()),
            Marker::Unmarked => None,
        };
        let mut ops = self.ops.clone();
        ops.extend(marker_op);
        self.zxid_before = c.last_zxid();
        match c.multi_results_at(ops) {
            Ok((results, zxid)) => Ok(self.answered(results, zxid, session)),
            Err(e) => {
                if e.may_have_applied() {
                    self.doubt = Some(Doubt {
                        session,
                        error: e.clone(),
                    });
                }
                Err(e)
            }
        }
    }

    /// The server's answer to the transaction.
    fn answered(&self, results: Vec<OpResult>, zxid: i64, session: i64) -> Settled {
        let failed = results
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.error().map(|e| (i, e)))
            .find(|(_, e)| e.code() != Some(ErrorCode::RuntimeInconsistency))
            .or_else(|| results.iter().enumerate().find_map(|(i, r)| r.error().map(|e| (i, e))));
        match failed {
            Some((index, error)) => Settled::Refused {
                error: error.clone(),
                index,
                results: self.client_results(results.clone()),
                marker: self.marker.clone(),
            },
            None => {
                let version = match (&self.marker, results.last()) {
                    (Marker::Kept(_), Some(OpResult::SetData { stat })) => stat.version,
                    _ => 0,
                };
                let mut results = self.client_results(results);
                let marker = self.marker.path().map(|path| {
                    results.pop();
                    KeptMarker {
                        path: path.to_string(),
                        session,
                        version,
                    }
                });
                Settled::Applied(Applied {
                    proof: WriteProof::Reply,
                    zxid,
                    results: Some(results),
                    marker,
                    reads: Vec::new(),
                })
            }
        }
    }

    /// `Refused` on the marker's own op, as the server would answer for a
    /// kept marker that went with its session.
    fn refused_marker_gone(&self) -> Settled {
        let error = Error::NoNode {
            path: self.marker.path().unwrap_or_default().to_string(),
        };
        let mut results = vec![OpResult::RolledBack; self.ops.len()];
        results.push(OpResult::Error(error.clone()));
        Settled::Refused {
            index: self.ops.len(),
            error,
            results,
            marker: self.marker.clone(),
        }
    }

    fn client_results(&self, results: Vec<OpResult>) -> Vec<OpResult> {
        results
            .into_iter()
            .map(|r| match r {
                OpResult::Create { path, stat } => OpResult::Create {
                    path: self.fw.user_path(&path),
                    stat,
                },
                r => r,
            })
            .collect()
    }

    /// Settles the send in doubt, on `c`: `Some` when settled, `None` when
    /// it was certainly not applied (so it may be sent again). Every read
    /// goes out after a `sync` on its connection, so no server that has not
    /// applied the lost write can answer it.
    fn prove(&self, c: &Client, doubt: &Doubt) -> Result<Option<Settled>> {
        let why = match (&self.marker_sp, c.session_id() == doubt.session) {
            (_, false) => Some(Unproven::SessionChanged),
            (None, true) => Some(Unproven::NoMarker),
            (Some(_), true) => None,
        };
        if let Some(why) = why {
            let reads = if self.reads.is_empty() {
                Vec::new()
            } else {
                c.sync_then_read(&self.sync_sp, &self.reads)?
            };
            return Ok(Some(self.read_back(why, reads, doubt)));
        }
        let marker_sp = self.marker_sp.clone().unwrap_or_default();
        let mut all = Vec::with_capacity(1 + self.reads.len());
        all.push(ReadOp::exists(marker_sp.clone()));
        all.extend(self.reads.iter().cloned());
        let mut answers = c.sync_then_read(&self.sync_sp, &all)?;
        let shown = answers.remove(0);
        let kept = |version: i32| {
            Some(KeptMarker {
                path: self.marker.path().unwrap_or_default().to_string(),
                session: doubt.session,
                version,
            })
        };
        let applied = |zxid: i64, version: i32, reads: Vec<ReadResult>| {
            Some(Settled::Applied(Applied {
                proof: WriteProof::Marker,
                zxid,
                results: None,
                marker: kept(version),
                reads,
            }))
        };
        Ok(match (&self.marker, shown.stat()) {
            (Marker::Fresh { .. }, Some(s)) => applied(s.czxid, s.version, answers),
            (Marker::Fresh { .. }, None) => None,
            (Marker::Kept(k), Some(s)) if s.version == k.version.wrapping_add(1) => {
                applied(s.mzxid, s.version, answers)
            }
            (Marker::Kept(k), Some(s)) if s.version == k.version => None,
            (Marker::Kept(_), shown) => {
                if shown.is_some() {
                    // Written by someone else: it proves nothing any more.
                    let _ = c.delete_detached(&marker_sp, None, |_| {});
                }
                Some(self.read_back(Unproven::MarkerChanged, answers, doubt))
            }
            // Settled above.
            (Marker::Unmarked, _) => Some(self.read_back(Unproven::NoMarker, answers, doubt)),
        })
    }

    fn read_back(&self, why: Unproven, reads: Vec<ReadResult>, doubt: &Doubt) -> Settled {
        Settled::ReadBack {
            why,
            reads,
            zxid_before: self.zxid_before,
            error: doubt.error.clone(),
        }
    }
}
