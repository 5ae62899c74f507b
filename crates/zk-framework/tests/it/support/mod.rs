//! The support module of zk-framework's integration tests: the workspace's
//! shared test support, re-exported whole (`zk_test_support`: managed clients,
//! tree listings, recorded states, the TLS, `x509` and ACL suites' settings,
//! and everything of `zk_testing::support`), and what only these suites use:
//!
//! * [`framework`]: the shared `zk_test_support::framework`, and the expiry
//!   and quiet-state expectations of the `framework_*` suites.
//! * [`plain`]: the plain client (`zk_framework::client`) over both backends,
//!   with the faults only the embedded server can inject.

pub mod framework;
pub mod plain;

pub use zk_test_support::*;
