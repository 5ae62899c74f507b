//! Connecting: the managed client built from the connection options (ACL
//! provider, credentials, TLS), and the embedded server of `--embedded`.

use std::time::Duration;

use zk_framework::CuratorFramework;
use zk_framework::ExponentialBackoffRetry;
use zk_framework::{FixedAclProvider, OpenAclProvider, ScopedAclProvider};

use crate::args::{AclChoice, Connection};
use crate::exit;

/// Builds the managed client from the connection options (not connected
/// yet) for the lock at `path` (`--acl creator-nodes` scopes its ACL to it);
/// on failure, prints why and returns the exit status.
pub(crate) fn build_client(conn: &Connection, connect: &str, path: &str) -> Result<CuratorFramework, i32> {
    let mut builder = CuratorFramework::builder()
        .connect_string(connect.to_string())
        .session_timeout(conn.session_timeout)
        .connection_timeout(conn.connect_timeout)
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(500), 3));
    if let Some(ns) = &conn.namespace {
        builder = builder.namespace(ns.clone());
    }
    if let Some(c) = &conn.auth {
        builder = builder.authorization(&c.scheme, &c.secret);
    }
    if let Some(s) = &conn.sasl {
        builder = builder.sasl(s.clone());
    }
    builder = match conn.acl {
        AclChoice::Open => builder.acl_provider(OpenAclProvider),
        AclChoice::Creator => builder.acl_provider(FixedAclProvider::creator_all()),
        AclChoice::CreatorRead => builder.acl_provider(FixedAclProvider::creator_all_read_others()),
        AclChoice::CreatorNodes => {
            // The provider sees server paths: the namespace included.
            let root = match &conn.namespace {
                Some(ns) => format!("/{ns}{path}"),
                None => path.to_string(),
            };
            match ScopedAclProvider::creator_nodes(&root) {
                Ok(p) => builder.acl_provider(p),
                Err(e) => {
                    eprintln!("zk-lock: {e}");
                    return Err(exit::USAGE);
                }
            }
        }
    };
    if let Some(files) = &conn.tls {
        match tls_config(files) {
            Ok(tls) => builder = builder.tls(tls),
            Err(e) => {
                eprintln!("zk-lock: {e}");
                return Err(exit::USAGE);
            }
        }
    }
    match builder.build() {
        Ok(c) => Ok(c),
        Err(zk_framework::Error::InvalidConnectString { input, reason }) if reason.contains("resolve") => {
            eprintln!("zk-lock: ZooKeeper unavailable: no host of {input:?} resolves to an address");
            Err(exit::UNAVAILABLE)
        }
        Err(e @ (zk_framework::Error::InvalidConnectString { .. } | zk_framework::Error::InvalidArgument(_))) => {
            eprintln!("zk-lock: {e}");
            eprintln!("Try 'zk-lock --help' for more information.");
            Err(exit::USAGE)
        }
        Err(e) => {
            eprintln!("zk-lock: cannot start the ZooKeeper client: {e}");
            Err(exit::UNAVAILABLE)
        }
    }
}

/// The embedded server's handle (or nothing).
#[cfg(feature = "embedded")]
pub(crate) type ServerHandle = Option<zk_testing::embedded::EmbeddedServer>;
/// The embedded server's handle (or nothing).
#[cfg(not(feature = "embedded"))]
pub(crate) type ServerHandle = Option<()>;

/// The client's TLS configuration from the `--tls-*` files.
pub(crate) fn tls_config(files: &crate::args::TlsFiles) -> zk_framework::Result<zk_framework::TlsConfig> {
    let mut b = zk_framework::TlsConfig::builder()
        .ca_pem_file(&files.ca)
        .verify_hostname(files.verify_hostname);
    if let Some((cert, key)) = &files.client {
        b = b.client_cert_pem_files(cert, key);
    }
    b.build()
}

/// The embedded server (with `--embedded`) and the connect string to use.
#[cfg(feature = "embedded")]
pub(crate) fn start_embedded(conn: &Connection) -> Result<(ServerHandle, String), i32> {
    if !conn.embedded {
        return Ok((None, conn.connect.clone()));
    }
    match zk_testing::embedded::EmbeddedServer::start(Default::default()) {
        Ok(s) => {
            let cs = s.connect_string();
            log::info!("started an embedded ZooKeeper at {cs} (private to this process)");
            Ok((Some(s), cs))
        }
        Err(e) => {
            eprintln!("zk-lock: cannot start the embedded ZooKeeper: {e}");
            Err(exit::UNAVAILABLE)
        }
    }
}

/// Without the `embedded` feature `--embedded` is refused while parsing (this
/// is a second guard, with the same message).
#[cfg(not(feature = "embedded"))]
pub(crate) fn start_embedded(conn: &Connection) -> Result<(ServerHandle, String), i32> {
    if conn.embedded {
        eprintln!("zk-lock: {}", crate::args::EMBEDDED_NOT_BUILT);
        return Err(exit::USAGE);
    }
    Ok((None, conn.connect.clone()))
}
