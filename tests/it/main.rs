//! The root package's integration tests, one binary with one module per suite
//! (linking one binary instead of one per file keeps an edit-to-test cycle
//! short). Run one suite with a module filter, e.g. `cargo test --test it
//! mutex::` or `cargo test --test it ensemble::`.
//!
//! Every suite runs on the backend `ZK_TEST_SERVER` selects (embedded by
//! default); the helpers they share are in [`support`]. Tests that need a
//! process of their own (re-executed contenders, the fuzz suite's panic
//! counter) re-run this binary with an exact test filter.

mod support;

// The plain client (`zk_framework::client`).
mod client_cost;
mod client_embedded_faults;
mod client_faults;
mod client_inputs;
mod client_ops;

// The managed client (`zk_framework::framework`).
mod framework_inputs;
mod framework_namespace;
mod framework_protection;
mod framework_retry;
mod framework_states;

// Authentication and ACLs (the managed client, the locks, the embedded server).
mod acl;
mod acl_conformance;

// The locks (`zk_recipes`).
mod clients;
mod leader;
mod lock_contract;
mod multilock;
mod mutex;
mod operations;
mod processes;
mod rwlock;
mod semaphore;
mod uncertainty;

// Servers and protocol: foreign clients, a real ensemble, bad bytes and bad input.
mod bad_input;
mod conformance;
mod ensemble;
mod fuzz_decoders;

// TLS (rustls) against the embedded server or Apache's secureClientPort.
mod tls;
mod x509;
