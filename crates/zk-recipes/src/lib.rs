//! Curator-compatible lock recipes on top of `zk-framework`.
//!
//! The recipes land in later steps; this crate currently only fixes the layering
//! (`zk-recipes` depends on `zk-framework`, and tests with `zk-testing`).
