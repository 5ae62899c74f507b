//! The root package's integration tests: only what crosses crates or
//! processes, one binary with one module per suite. Each crate's own suites
//! are in that crate's `tests/it` (see `docs/testing.md`, "Where does my test
//! go"). Run one suite with a module filter, e.g. `cargo test --test it
//! processes::`.
//!
//! Every suite runs on the backend `ZK_TEST_SERVER` selects (embedded by
//! default); the helpers are the workspace's shared test support
//! (`zk_test_support`, a dev-dependency).

// Several OS processes (this binary, re-executed as contenders) on one lock.
mod processes;

// The server driven by a client we did not write (the `zookeeper` crate) and raw frames.
mod conformance;

// Curator (Java) with Kerberos and our InterProcessMutex on one lock under a sasl ACL
// (Apache ZooKeeper with a local MIT KDC; the gssapi feature).
#[cfg(feature = "gssapi")]
mod curator_kerberos;
