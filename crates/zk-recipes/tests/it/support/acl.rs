//! The ACL suite's settings: the shared `zk_test_support::acl` (Alice's
//! credentials, clients with credentials and an ACL provider), re-exported,
//! and what only the locks' half uses: a second user's credentials and a
//! subtree listing.

use zk_framework::Client;

pub use zk_test_support::acl::*;

/// Mallory's digest credentials (a user no ACL here names).
pub const MALLORY: &[u8] = b"mallory:guess";

/// Every node under `path` (itself included), by a client that can read them.
pub fn subtree(c: &Client, path: &str) -> Vec<String> {
    let mut out = vec![path.to_string()];
    if let Ok(kids) = c.get_children(path) {
        for k in kids {
            out.extend(subtree(c, &format!("{}/{k}", path.trim_end_matches('/'))));
        }
    }
    out
}
