#![doc = include_str!("../README.md")]
//!
//! ---
//!
//! This package (`zk-curator`, `publish = false`) exports nothing: it holds the
//! examples (`examples/`), the integration tests that cross crates or processes
//! (`tests/it`; each crate's own are in its `tests/it`), the
//! client micro-benchmarks (`benches/`), and runs the README's code above as
//! doctests. A user depends on the published crates (`zk-framework`,
//! `zk-recipes`, and `zk-testing` for tests) and imports from their roots, as
//! the README does.
