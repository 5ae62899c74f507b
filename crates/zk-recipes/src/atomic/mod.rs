//! Distributed atomic counters that never count twice:
//! [`DistributedAtomicLong`], [`DistributedAtomicInteger`] and
//! [`DistributedAtomicValue`] (Curator's `recipes/atomic`).
//!
//! **Layout**, Curator's: one PERSISTENT node at the counter's path. A long
//! is 8 bytes big-endian, an integer 4 (the same bytes as a
//! [`SharedCount`](crate::SharedCount)), a value raw bytes. Reading: a
//! missing node or empty data is 0 (empty bytes for a value); data shorter
//! than the width is [`Error::CorruptValue`](crate::Error::CorruptValue) with the bytes; longer data is
//! read from its first 8 or 4 bytes, as Curator does. The node is created on
//! the first write (container parents), never empty.
//!
//! **Updates** are optimistic: read the node and its stat, compute the new
//! value, write it conditional on the version read (or create it when
//! missing). A write that lost the race (`BadVersion`, `NodeExists`,
//! `NoNode`) is tried again after the recipe's [`RetryPolicy`](zk_framework::RetryPolicy)'s pause; when
//! the policy gives up, the update is [`Outcome::NotApplied`], unless a
//! [`PromotedToLock`] was given: then the same loop runs once more under an
//! [`InterProcessMutex`](crate::InterProcessMutex) on the separate lock path, with the promotion's own
//! policy (one try by default) and a timeout. The lock orders promoted
//! writers only; every write stays versioned.
//!
//! **At most once.** Curator 5.4 applies an increment twice when the reply
//! to its versioned `setData` (or first `create`) is lost: its client
//! re-sends the write, meets `BadVersion` (`NodeExists`), takes that for a
//! lost race, re-reads the value it has just written and adds again; and it
//! reports failure for a `compareAndSet` or `initialize` that was applied.
//! Here a write whose reply may have been lost is never sent again blindly,
//! and its outcome is proven, not guessed.
//!
//! Overflow is checked: an increment of `i64::MAX` is
//! [`Error::Overflow`](crate::Error::Overflow), and nothing is written.
//!
//! # The proof after a lost reply: the write's marker
//!
//! Each write (a versioned `setData`, or the first `create`) goes out as one
//! transaction with a marker: an EPHEMERAL child `<path>/_c_<uuid>-once`,
//! written with the write or not at all. The counter's first write creates
//! it; the counter keeps it, and each later write sets it again (at its
//! version) in its transaction: a read and a transaction per update, two
//! requests, as Curator's read and write. The node's data stays Curator's
//! bare bytes, so Java and Rust share it (no Curator recipe lists a
//! counter's children). This is zk-framework's marked write
//! ([`zk_framework::recipe::Recipe::marked_write`]). After a lost reply the
//! client's retry loop does not write again: on the same session it looks
//! at the marker, after a `sync` on the connection it looks on, so that a
//! server that has not yet applied the lost write (a follower the client
//! reconnected to, behind the leader) cannot answer. Created, or
//! one version on: **applied**, by this writer ([`Proof::Marker`](crate::Proof::Marker), as
//! certain as a reply, whatever other writers did meanwhile; each kept
//! marker serves one write at a time). Missing, or unchanged: **not
//! applied**, and the write is sent again (still conditional on the version
//! read, so it cannot land twice).
//!
//! Three cases leave the marker unable to tell, and the node's data is read
//! back instead: the session changed before the proof (the marker went with
//! it), someone deleted or wrote the kept marker meanwhile, or the node's
//! ACL refuses the marker's create (the write then goes out alone). The
//! read-back, after a `sync` too, finds data `d`, stat `s`, against the
//! base the writer read (version `v`, `czxid` `c`, `mzxid` `m`):
//!
//! * `s.czxid == c` and `s.mzxid == m`: nothing happened to the node since
//!   the read: not applied, sent again.
//! * `s.czxid == c`, `s.version == v + 1`, `d == bytes`, `s.mzxid > m`:
//!   exactly one write took the node from our base to our bytes: applied
//!   ([`Proof::ReadBack`](crate::Proof::ReadBack)), with a bound: the read cannot tell *whose*
//!   write it was. Another client adding the same delta from the same base
//!   while this one was away makes both callers hear "applied" for one
//!   increment (the value on the server is right, never counted twice). A
//!   caller who cannot accept that (ids handed out from a counter) treats
//!   [`Proof::ReadBack`](crate::Proof::ReadBack) as unknown.
//! * anything else: [`Outcome::Unknown`] with what was read.
//!
//! A first create read back: a persistent node with a `czxid` past the
//! client's last seen zxid before the create, version 0 and our bytes is
//! ours (same bound); no node means not applied; anything else is unknown.
//!
//! When no proof can be made in time (the `sync` or the read fails until
//! the retry policy or the caller's deadline gives up), the outcome is
//! [`Outcome::Unknown`] with nothing read: never a guess.
//!
//! The marker costs a transaction (two operations) instead of a plain
//! write. One consequence: while a counter that has written lives, its
//! node has a child (one per write the counter had in flight at once, at
//! most 16), deleted without waiting when the counter is dropped (and
//! gone with its session otherwise); another client deleting the counter
//! node meanwhile meets `NotEmpty` unless it deletes the children too
//! (`deleting_children_if_needed`). A counter whose marker was deleted
//! under it makes a new one at its next write.

mod core;
mod metrics;
pub(crate) mod number;
pub(crate) mod outcome;
pub(crate) mod value;

// The earlier paths of this family's items, as deprecated aliases of the
// crate root's (one path per item).

/// The earlier path of [`crate::DistributedAtomicLong`].
#[deprecated(
    since = "0.1.0",
    note = "import it from the crate root: `zk_recipes::DistributedAtomicLong`"
)]
pub type DistributedAtomicLong = crate::atomic::number::DistributedAtomicLong;
/// The earlier path of [`crate::DistributedAtomicInteger`].
#[deprecated(
    since = "0.1.0",
    note = "import it from the crate root: `zk_recipes::DistributedAtomicInteger`"
)]
pub type DistributedAtomicInteger = crate::atomic::number::DistributedAtomicInteger;
/// The earlier path of [`crate::DistributedAtomicNumber`].
#[deprecated(
    since = "0.1.0",
    note = "import it from the crate root: `zk_recipes::DistributedAtomicNumber`"
)]
pub type DistributedAtomicNumber<T> = crate::atomic::number::DistributedAtomicNumber<T>;
/// The earlier path of [`crate::DistributedAtomicValue`].
#[deprecated(
    since = "0.1.0",
    note = "import it from the crate root: `zk_recipes::DistributedAtomicValue`"
)]
pub type DistributedAtomicValue = crate::atomic::value::DistributedAtomicValue;
/// The earlier path of [`crate::Outcome`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::Outcome`")]
pub type Outcome<T> = crate::atomic::outcome::Outcome<T>;
/// The earlier path of [`crate::AtomicValue`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::AtomicValue`")]
pub type AtomicValue<T> = crate::atomic::outcome::AtomicValue<T>;
/// The earlier path of [`crate::AtomicStats`].
#[deprecated(since = "0.1.0", note = "import it from the crate root: `zk_recipes::AtomicStats`")]
pub type AtomicStats = crate::atomic::outcome::AtomicStats;
/// The earlier path of [`crate::PromotedToLock`].
#[deprecated(
    since = "0.1.0",
    note = "import it from the crate root: `zk_recipes::PromotedToLock`"
)]
pub type PromotedToLock = crate::atomic::outcome::PromotedToLock;

#[cfg(test)]
mod tests {
    use super::core::Codec;
    use crate::error::Error;

    #[test]
    fn numbers_read_as_curator_reads_them() {
        assert_eq!(<i64 as Codec>::decode("/c", &[]).unwrap(), 0);
        assert_eq!(<i64 as Codec>::decode("/c", &[0, 0, 0, 0, 0, 0, 1, 0]).unwrap(), 256);
        assert_eq!(
            <i64 as Codec>::decode("/c", &[0, 0, 0, 0, 0, 0, 0, 1, 9]).unwrap(),
            1,
            "longer: the first 8"
        );
        assert_eq!(
            <i64 as Codec>::decode("/c", &[0, 0, 0, 1]),
            Err(Error::CorruptValue {
                path: "/c".into(),
                expected: 8,
                bytes: vec![0, 0, 0, 1]
            })
        );
        assert_eq!(<i32 as Codec>::decode("/c", &[0xff, 0xff, 0xff, 0xff]).unwrap(), -1);
        assert!(<i32 as Codec>::decode("/c", &[0, 1]).is_err());
        assert_eq!(Codec::encode(&1i64), vec![0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(Codec::encode(&-2i32), vec![0xff, 0xff, 0xff, 0xfe]);
    }
}
