//! The set partitioner (kazoo's `SetPartitioner`, which Curator lacks,
//! CURATOR-321): [`partitioner`] (the handle), [`shared`] (the state it
//! shares with its thread and its signals), [`run`] (its thread: join, settle, partition, acquire,
//! hold, release), [`builder`], [`function`] (kazoo's default partition
//! function and the check of a user's, pure and table-tested) and
//! [`state`] (what it tells), [`metrics`] (its figures, with the
//! `metrics` feature). The state machine and how it differs from
//! kazoo are on [`SetPartitioner`](crate::SetPartitioner)'s page.

pub(crate) mod builder;
pub(crate) mod function;
pub(crate) mod metrics;
pub(crate) mod partitioner;
pub(crate) mod run;
pub(crate) mod shared;
pub(crate) mod state;
