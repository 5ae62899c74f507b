//! The ACL suites' settings (zk-framework's `acl` and its half in zk-recipes,
//! locks under digest ACLs): digest credentials, managed clients with
//! credentials and an ACL provider, and a plain client with credentials.

use std::time::Duration;

use zk_framework::{perms, Acl, AclProvider, Client, ClientConfig, CuratorFramework, ExponentialBackoffRetry};
use zk_testing::{wait_until, TestingServer};

use super::{timing, Client as Closing};

/// Alice's digest credentials (`user:password`).
pub const ALICE: &[u8] = b"alice:alice-secret";

/// A connected managed client with `auth` credentials (if any) and `provider`.
pub fn secure_client(s: &TestingServer, auth: Option<&[u8]>, provider: impl AclProvider + 'static) -> Closing {
    secure_client_to(&s.connect_string(), auth, provider)
}

/// As [`secure_client`], to `connect_string`.
pub fn secure_client_to(connect_string: &str, auth: Option<&[u8]>, provider: impl AclProvider + 'static) -> Closing {
    let t = timing();
    let mut b = CuratorFramework::builder()
        .connect_string(connect_string)
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .acl_provider(provider);
    if let Some(a) = auth {
        b = b.authorization("digest", a);
    }
    let c = b.build().expect("build client");
    c.block_until_connected(t.wait()).expect("client connects");
    Closing(c)
}

/// A plain client with `auth` credentials (if any).
pub fn raw(s: &TestingServer, auth: Option<&[u8]>) -> Client {
    let mut cfg = ClientConfig::default().with_session_timeout(timing().session());
    if let Some(a) = auth {
        cfg = cfg.with_auth("digest", a);
    }
    let c = Client::connect(&s.connect_string(), cfg).expect("connect");
    assert!(
        wait_until(timing().wait(), || c.state().is_connected()),
        "the plain client never connected"
    );
    c
}

/// An ACL that gives Alice (and no one else) every permission.
pub fn alice_only() -> Vec<Acl> {
    vec![Acl::digest("alice", "alice-secret", perms::ALL)]
}
