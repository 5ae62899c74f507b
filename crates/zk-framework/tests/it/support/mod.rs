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

/// One Apache ensemble at a time in this binary (each is 3 or more JVMs on
/// 2 cores): the lagging, reconfig and ensemble-tracker suites take it, so
/// that their ensembles never run side by side.
pub fn one_ensemble_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ENSEMBLES: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ENSEMBLES.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
