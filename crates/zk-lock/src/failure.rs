//! How zk-lock reports a failure and which exit status it gives, the same in
//! every mode (a run under the lock and the `status`, `break` and `wait`
//! subcommands): ZooKeeper refusing access (NoAuth, AuthFailed, InvalidACL)
//! is 77 with a hint that fits the way this client authenticates; anything
//! else is 69 with the real reason. A connection that never came up is 69
//! and names why (a TLS refusal says which).

use zk_framework::proto::path::parent;
use zk_framework::CuratorFramework;
use zk_framework::Error as ZkError;

use crate::args::human;
use crate::args::{AclChoice, Connection};
use crate::exit;

/// How this client proves who it is, as the hints need to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Identity {
    /// No credentials at all.
    Anonymous,
    /// `--auth` credentials of this scheme (`digest`, ...), perhaps with a
    /// client certificate too.
    Credentials(String),
    /// Only a TLS client certificate: ZooKeeper's `x509` identity, when it
    /// could be read from the certificate.
    Certificate(Option<String>),
}

impl Identity {
    pub(crate) fn of(conn: &Connection) -> Identity {
        if let Some(c) = &conn.auth {
            return Identity::Credentials(c.scheme.clone());
        }
        match &conn.tls {
            Some(files) if files.client.is_some() => Identity::Certificate(
                crate::client::tls_config(files)
                    .ok()
                    .and_then(|t| t.client_x509_id().map(str::to_string)),
            ),
            _ => Identity::Anonymous,
        }
    }
}

/// What was being done when ZooKeeper refused, for naming the node that refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Doing {
    /// Taking the lock: nodes (and missing parents) are created, the lock's
    /// nodes are listed and read.
    Locking,
    /// Reading the lock (`status`, `wait`).
    Reading,
    /// Deleting a lock node (`break`): its parent's ACL decides.
    Deleting,
}

/// Reports that no connection was made within `--connect-timeout` (`e` is
/// what `block_until_connected` said) and returns the exit status (69).
pub(crate) fn not_connected(e: &ZkError, connect: &str, conn: &Connection) -> i32 {
    if let ZkError::Sasl(s) = e {
        // A refusal or credentials that cannot be used: permission denied; a
        // KDC that did not answer: unavailable.
        if s.kind() == zk_framework::SaslErrorKind::KdcUnreachable {
            eprintln!("zk-lock: ZooKeeper unavailable: connecting to {connect}: {e}");
            return exit::UNAVAILABLE;
        }
        eprintln!("zk-lock: permission denied: connecting to {connect}: {e}");
        return exit::NO_PERMISSION;
    }
    if let ZkError::AuthFailed = e {
        // Refused, not unreachable: the same words and status as a refusal
        // met later.
        eprintln!(
            "zk-lock: permission denied: connecting to {connect}: {e} ({})",
            auth_failed_hint(&Identity::of(conn))
        );
        return exit::NO_PERMISSION;
    }
    match e {
        ZkError::Tls(tls) => eprintln!("zk-lock: ZooKeeper unavailable: TLS with {connect} failed: {tls}"),
        ZkError::ConnectTimeout { .. } => eprintln!(
            "zk-lock: ZooKeeper unavailable: could not connect to {connect} within {}",
            human(conn.connect_timeout)
        ),
        other => eprintln!(
            "zk-lock: ZooKeeper unavailable: could not connect to {connect} within {}: {other}",
            human(conn.connect_timeout)
        ),
    }
    exit::UNAVAILABLE
}

/// Reports `e`, which ended `what` (e.g. "could not take the lock on /a"),
/// and returns the exit status: 77 for a refusal, 69 otherwise.
pub(crate) fn report(
    client: &CuratorFramework,
    conn: &Connection,
    lock_path: &str,
    doing: Doing,
    what: &str,
    e: &zk_recipes::Error,
) -> i32 {
    match e {
        zk_recipes::Error::ZooKeeper(z) => report_zk(client, conn, lock_path, doing, what, z),
        other => {
            eprintln!("zk-lock: {what}: {other}");
            exit::UNAVAILABLE
        }
    }
}

/// [`report`] for an error of the ZooKeeper client itself.
pub(crate) fn report_zk(
    client: &CuratorFramework,
    conn: &Connection,
    lock_path: &str,
    doing: Doing,
    what: &str,
    e: &ZkError,
) -> i32 {
    match refusal_hint(client, conn, lock_path, doing, e) {
        Some(hint) => {
            eprintln!("zk-lock: permission denied: {what}: {e} ({hint})");
            exit::NO_PERMISSION
        }
        None => {
            eprintln!("zk-lock: {what}: {e}");
            exit::UNAVAILABLE
        }
    }
}

/// Whether `e` is ZooKeeper refusing access (exit 77).
pub(crate) fn is_refusal(e: &ZkError) -> bool {
    match e {
        ZkError::NoAuth { .. } | ZkError::AuthFailed | ZkError::InvalidAcl { .. } => true,
        ZkError::Sasl(s) => s.kind() != zk_framework::SaslErrorKind::KdcUnreachable,
        _ => false,
    }
}

/// The hint printed with a refusal; `None` when `e` is not one.
fn refusal_hint(
    client: &CuratorFramework,
    conn: &Connection,
    lock_path: &str,
    doing: Doing,
    e: &ZkError,
) -> Option<String> {
    if !is_refusal(e) {
        return None;
    }
    let identity = Identity::of(conn);
    Some(match e {
        ZkError::NoAuth { path } => {
            let (node, action) = refusing_node(client, path, doing);
            let mut hint = format!("{node} refused {action}: {}", no_auth_advice(&identity));
            let lock = client.recipe().fix_path(lock_path);
            if is_strict_ancestor(&node, &lock) {
                hint.push_str(&format!(
                    "; {node} is a parent of the lock's path, not one of the lock's nodes: its ACL was chosen by \
                     whoever created it (zk-lock --acl creator makes missing parents creator-only; --acl \
                     creator-nodes leaves them open to others)"
                ));
            }
            hint
        }
        ZkError::AuthFailed => auth_failed_hint(&identity),
        ZkError::Sasl(s) => format!(
            "ZooKeeper refused the SASL {} authentication, or the credentials could not be used",
            s.mechanism()
        ),
        _ => match (conn.acl, &identity) {
            (AclChoice::Open, _) => "the server refused the ACL of a new lock node".to_string(),
            (_, Identity::Anonymous) => {
                "a creator ACL needs credentials: give --auth-file, ZK_LOCK_AUTH or --auth, or a TLS \
                 client certificate"
                    .to_string()
            }
            _ => "the server refused the creator ACL of a new lock node with these credentials".to_string(),
        },
    })
}

/// What an AuthFailed means, for this way of authenticating.
fn auth_failed_hint(identity: &Identity) -> String {
    match identity {
        Identity::Credentials(scheme) => format!(
            "ZooKeeper refused the {scheme} credentials and closed the session (is {scheme} a scheme \
             the server enables?)"
        ),
        Identity::Certificate(_) => {
            "ZooKeeper refused the client certificate's x509 authentication and closed the session".to_string()
        }
        Identity::Anonymous => "ZooKeeper refused the session's authentication".to_string(),
    }
}

/// What to do about a NoAuth, for this way of authenticating.
fn no_auth_advice(identity: &Identity) -> String {
    match identity {
        Identity::Anonymous => "its ACL admits only certain users, and this session has no credentials; give \
                                credentials with --auth-file, ZK_LOCK_AUTH or --auth, or connect with a TLS \
                                client certificate its ACL names (--tls-cert, --tls-key)"
            .to_string(),
        Identity::Credentials(scheme) => format!(
            "its ACL does not admit these {scheme} credentials; use the credentials its ACL names (those of \
             whoever created it)"
        ),
        Identity::Certificate(id) => format!(
            "its ACL does not admit this client certificate's identity ({}); connect with the certificate its \
             ACL names (--tls-cert, --tls-key)",
            id.as_deref()
                .map_or_else(|| "x509".to_string(), |id| format!("x509 {id}"))
        ),
    }
}

/// The node whose ACL refused a request about `path`, and what it refused.
/// A create is refused by the parent (its CREATE permission): when `path`
/// does not exist, the deepest existing ancestor refused. A delete is
/// refused by the parent. Otherwise `path` itself refused. A few `exists`
/// calls (which no ACL guards), only after a refusal.
fn refusing_node(client: &CuratorFramework, path: &str, doing: Doing) -> (String, &'static str) {
    if path.is_empty() {
        return ("a node".to_string(), "access");
    }
    let zk = client.zookeeper_client();
    if doing == Doing::Deleting {
        return (parent(path).unwrap_or("/").to_string(), "the delete of a child");
    }
    match zk.exists(path) {
        Ok(Some(_)) | Err(_) => (path.to_string(), "access"),
        Ok(None) => {
            let mut p = path;
            while let Some(up) = parent(p) {
                if up == "/" || matches!(zk.exists(up), Ok(Some(_)) | Err(_)) {
                    return (up.to_string(), "the creation of a child");
                }
                p = up;
            }
            ("/".to_string(), "the creation of a child")
        }
    }
}

/// Whether `node` is a strict ancestor of `path`.
fn is_strict_ancestor(node: &str, path: &str) -> bool {
    node != path && (node == "/" || path.strip_prefix(node).is_some_and(|rest| rest.starts_with('/')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ancestors() {
        assert!(is_strict_ancestor("/team", "/team/deploy"));
        assert!(is_strict_ancestor("/", "/team/deploy"));
        assert!(!is_strict_ancestor("/team/deploy", "/team/deploy"));
        assert!(!is_strict_ancestor("/tea", "/team/deploy"));
        assert!(!is_strict_ancestor("/team/deploy/_c_x-lock-", "/team/deploy"));
    }

    #[test]
    fn three_identities_three_hints() {
        let none = no_auth_advice(&Identity::Anonymous);
        let digest = no_auth_advice(&Identity::Credentials("digest".into()));
        let cert = no_auth_advice(&Identity::Certificate(Some("CN=app".into())));
        assert!(none.contains("--auth") && none.contains("--tls-cert"), "{none}");
        assert!(
            digest.contains("digest credentials") && !digest.contains("--auth"),
            "{digest}"
        );
        assert!(cert.contains("x509 CN=app") && !cert.contains("--auth"), "{cert}");
    }
}
