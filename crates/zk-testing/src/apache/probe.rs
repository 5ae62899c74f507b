//! Readiness: the `srvr` four-letter word that tells a server's mode, and how long and how
//! often it is polled.

use std::time::Duration;

use crate::fourlw::four_letter_word;

/// How long [`ApacheServer::start`], [`ApacheServer::restart`], [`ApacheCluster::start`] and
/// [`ApacheCluster::restart`] wait for the server(s) to serve clients.
///
/// [`ApacheServer::start`]: super::ApacheServer::start
/// [`ApacheServer::restart`]: super::ApacheServer::restart
/// [`ApacheCluster::start`]: super::ApacheCluster::start
/// [`ApacheCluster::restart`]: super::ApacheCluster::restart
pub(super) const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// Timeout of a single `srvr` probe.
const PROBE_TIMEOUT: Duration = Duration::from_millis(1500);
/// Pause between two readiness probes.
pub(super) const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// The `Mode:` value of a `srvr` answer from `addr`, if any.
pub(super) fn srvr_mode(addr: &str) -> Option<String> {
    let answer = four_letter_word(addr, "srvr", PROBE_TIMEOUT).ok()?;
    answer
        .lines()
        .find_map(|l| l.strip_prefix("Mode:"))
        .map(|m| m.trim().to_string())
}
