//! GSSAPI (Kerberos) for SASL: the client side of RFC 4752 over the system's
//! MIT krb5. The mechanism itself lands with the `gssapi` feature's
//! dependency; until then a connection with it is refused as unsupported.

use super::{GssapiConfig, Mechanism, GSSAPI};
use crate::error::{SaslError, SaslErrorKind};

pub(super) fn start(_config: &GssapiConfig, _host: &str) -> Result<Box<dyn Mechanism>, SaslError> {
    Err(SaslError::new(
        SaslErrorKind::Unsupported,
        GSSAPI,
        "GSSAPI is not built into this zk-framework yet",
    ))
}
