//! The client's figures through the `metrics` facade, with the `metrics`
//! feature; nothing without it:
//!
//! | metric | kind | what |
//! |---|---|---|
//! | `zk_client_server_list_updates_total{moved}` | counter | server lists handed to a client (`update_server_list`, the ensemble tracker), `moved` = `true` when its connection moved |
//! | `zk_client_servers` | gauge | servers in the list last handed to a client |
//! | `zk_ensemble_config_version` | gauge | the ensemble config version the tracker applied last |
//! | `zk_client_sasl_failures_total{kind}` | counter | SASL failures of connection attempts, by kind (`rejected`, `required`, `not_offered`, `protocol`, `unsupported`, `invalid_config`, `credentials`, `kdc_unreachable`) |

use crate::error::SaslErrorKind;

/// A server list was handed to a client (`servers` long; `moved`: its
/// connection moves).
pub(crate) fn server_list_updated(servers: usize, moved: bool) {
    #[cfg(feature = "metrics")]
    {
        metrics::counter!("zk_client_server_list_updates_total", "moved" => if moved { "true" } else { "false" })
            .increment(1);
        metrics::gauge!("zk_client_servers").set(servers as f64);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (servers, moved);
}

/// The ensemble tracker applied config `version`.
pub(crate) fn ensemble_config_applied(version: u64) {
    #[cfg(feature = "metrics")]
    metrics::gauge!("zk_ensemble_config_version").set(version as f64);
    #[cfg(not(feature = "metrics"))]
    let _ = version;
}

/// A connection attempt failed in SASL.
pub(crate) fn sasl_failed(kind: SaslErrorKind) {
    #[cfg(feature = "metrics")]
    metrics::counter!("zk_client_sasl_failures_total", "kind" => kind_label(kind)).increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = kind;
}

/// The label of a SASL failure's kind.
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) fn kind_label(kind: SaslErrorKind) -> &'static str {
    match kind {
        SaslErrorKind::Rejected => "rejected",
        SaslErrorKind::Required => "required",
        SaslErrorKind::NotOffered => "not_offered",
        SaslErrorKind::Protocol => "protocol",
        SaslErrorKind::Unsupported => "unsupported",
        SaslErrorKind::InvalidConfig => "invalid_config",
        SaslErrorKind::Credentials => "credentials",
        SaslErrorKind::KdcUnreachable => "kdc_unreachable",
    }
}
