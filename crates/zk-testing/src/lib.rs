//! `zk-testing`: the test harness.
//!
//! * an embedded, in-process ZooKeeper server that speaks the real wire protocol;
//! * real Apache ZooKeeper backends (standalone and ensemble) as child processes;
//! * fault injection and a timing multiplier for tests;
//! * TLS for both ([`tls`]: server settings and a throw-away CA);
//! * a throw-away MIT Kerberos KDC on loopback ([`kdc`]), for SASL GSSAPI on Apache ZooKeeper;
//! * the helpers every crate's integration tests share ([`support`]).

pub mod apache;
pub mod embedded;
pub mod fourlw;
pub mod harness;
pub mod kdc;
pub mod proxy;
pub mod raw;
pub mod support;
pub mod tls;

pub use harness::{wait_until, Backend, TestingServer, Timing};

/// A real Apache ZooKeeper ensemble on loopback (Curator's `TestingCluster`):
/// see [`apache::ApacheCluster`].
pub type TestingCluster = apache::ApacheCluster;
