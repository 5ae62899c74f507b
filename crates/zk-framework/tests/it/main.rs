//! zk-framework's integration tests, one binary with one module per suite, on
//! the backend `ZK_TEST_SERVER` selects (embedded by default) unless a suite
//! says otherwise. Run one suite with a module filter, e.g.
//! `cargo test -p zk-framework --test it client_faults::`.
//!
//! The helpers are in [`support`]: the workspace's shared test support
//! (`zk_test_support`, which zk-recipes' and the root package's tests use too)
//! and the ones only these suites use. Tests that need a process of their own
//! (the fuzz suite's panic counter) re-run this binary with an exact test
//! filter.

mod support;

// The plain client (`zk_framework::client`).
mod client_embedded_faults;
mod client_faults;
mod client_inputs;
mod client_ops;
mod persistent_watches;

// The managed client (`zk_framework::framework`).
mod connect;
mod epoch;
mod executor;
mod framework_inputs;
mod framework_namespace;
mod framework_protection;
mod framework_retry;
mod framework_states;
mod listeners;
mod marked_write;

// Authentication, ACLs and TLS (the locks' halves of these suites are zk-recipes').
mod acl;
mod sasl;
mod sasl_apache_digest;
// Kerberos against real ZooKeeper and a local MIT KDC (the system's krb5).
#[cfg(feature = "gssapi")]
mod sasl_kerberos;
mod tls;
mod x509;

// A lost reply proven on a follower that lags its leader (3-node Apache ensemble).
mod lagging;

// Dynamic reconfiguration (get_config, reconfig): both backends, and Apache ensembles.
mod reconfig;

// A server list that changes (update_server_list): embedded, and a 3-node Apache ensemble.
mod server_list;

// Following the ensemble's config (ensemble_tracker) while every server is replaced.
mod ensemble_tracker;

// Bad bytes over TCP (proptest): the client against a lying server, the
// embedded server against hostile connections (the decoders themselves are
// zk-proto's `fuzz_decoders`).
mod fuzz_wire;
