//! zk-lock's integration tests, one binary with one module per subject:
//! `zk-lock`, the distributed flock(1), as real processes: exclusion between
//! runs, timeouts, exit statuses, a lost session killing COMMAND, signal
//! forwarding, usage errors, an unreachable server, read/write sharing, and
//! exclusion with a Curator (Java) client when Debian's Curator jars exist,
//! and credentials with a creator-only ACL (exit 77 for the others; Curator with
//! the same digest credentials interoperates).
//!
//! Cargo builds the binary for this test (`CARGO_BIN_EXE_zk-lock`); set
//! `ZK_LOCK_BIN` to test another build. Runs on the embedded server by
//! default and on Apache ZooKeeper with `ZK_TEST_SERVER=apache`.

mod support;

mod acl;
mod curator;
mod exclusion;
mod loss;
mod operate;
mod partition;
mod processes;
mod registry;
mod sasl;
mod tls;
mod usage;
