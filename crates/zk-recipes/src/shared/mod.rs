//! [`SharedValue`] and [`SharedCount`]: a value every client sees, in one
//! persistent node, with versioned writes whose outcome is told as a value
//! and listeners on a channel.
//!
//! Curator's layout (`recipes/shared`): one PERSISTENT node at the path,
//! created by `start()` with the seed (container parents; an existing node
//! is kept). A [`SharedValue`] stores raw bytes; a [`SharedCount`] a 4-byte
//! big-endian two's-complement `i32`, so Java's `SharedCount` and this one
//! share a node.
//!
//! Unlike Curator's `trySetCount`, which returns `false` for a write that was
//! applied when its reply was lost (its retry then meets `BadVersion`), a
//! [`SharedValue::try_set_value`] whose reply was lost reports what its
//! proof shows (see [`TrySet`] and [`crate::atomic`]): applied (by the
//! write's own marker, [`Proof::Marker`], or after a new session by a
//! read-back with the bound in [`Proof::ReadBack`]), not applied and
//! re-sent, or [`TrySet::Unknown`]. The marker is kept between writes (an
//! ephemeral child of the node while the value lives, deleted at
//! [`SharedValue::close`]); see [`crate::atomic`].
//!
//! The watch that keeps the value current signals a background thread with a
//! `try_send`; the thread re-reads and tells the listeners. Every wait of it
//! ends with [`SharedValue::close`] or the client's close.

pub(crate) mod count;
pub(crate) mod value;
