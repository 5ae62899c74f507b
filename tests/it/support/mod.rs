//! The support module of the root package's integration tests: zk-framework's
//! test support (managed clients, tree listings, and everything of
//! `zk_testing::support`), included from its file so that each helper is
//! written once.

#[path = "../../../crates/zk-framework/tests/it/support/mod.rs"]
mod framework_support;

pub use framework_support::*;
