//! The support module of zk-proto's integration tests: what the fuzz suites
//! share ([`fuzz`], included by zk-framework's suite too) and a test in a
//! process of its own (from `zk_testing::support`).

pub mod fuzz;

pub use zk_testing::support::in_own_process;
