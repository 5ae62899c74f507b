//! ZooKeeper's `digest` authentication scheme: the id a `user:password` pair
//! maps to (`DigestAuthenticationProvider.generateDigest`).
//!
//! The SHA-1 is `ring`'s and the base64 is the `base64` crate's, not written
//! here. Both were already built by everything that uses this crate (`ring`
//! through rustls, which `zk-framework` and `zk-testing` always depend on; `base64`
//! through rcgen in `zk-testing`), so they add no crate to the workspace's lock
//! file; they cost this crate's own clean build `ring`'s C and assembly.
//!
//! The password itself never leaves the caller: ACLs carry only the hash, and
//! the credentials go to the server in an [`crate::AuthPacket`], whose `Debug`
//! output hides them.

use base64::Engine as _;

/// SHA-1 of `data` (only for `digest` ids: SHA-1 is what ZooKeeper uses there),
/// by `ring`.
pub(crate) fn sha1(data: &[u8]) -> [u8; 20] {
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, data);
    let mut out = [0u8; 20];
    out.copy_from_slice(digest.as_ref());
    out
}

/// Standard base64 with padding (RFC 4648, Java's `Base64.getEncoder()`), by
/// the `base64` crate.
pub(crate) fn base64(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// `DigestAuthenticationProvider.generateDigest("user:password")`: the id
/// `user:base64(sha1("user:password"))` that a `digest` ACL names and that a
/// session authenticated with `addauth digest user:password` holds. The user is
/// everything before the first `:`; the hash covers the whole text, as
/// ZooKeeper's does.
///
/// # Examples
///
/// ```
/// // The value ZooKeeper 3.8's generateDigest("alice:secret") prints.
/// assert_eq!(zk_proto::digest::digest_id("alice:secret"), "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E=");
/// ```
pub fn digest_id(user_password: &str) -> String {
    let user = user_password.split(':').next().unwrap_or("");
    format!("{user}:{}", base64(&sha1(user_password.as_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha1_and_base64_vectors() {
        assert_eq!(sha1(b"abc")[0], 0xa9);
        assert_eq!(base64(&sha1(b"abc")), "qZk+NkcGgWq6PiVxeFDCbJzQ2J0=");
        assert_eq!(base64(&sha1(b"")), "2jmj7l5rSw0yVb/vlWAYkK/YBwk=");
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        // Two padding blocks: 55 and 56 bytes straddle the length field.
        assert_eq!(base64(&sha1(&[b'a'; 55])), "wci73CJ5bijA4VFj0giZtlYh1lo=");
        assert_eq!(base64(&sha1(&[b'a'; 56])), "wtszD2CDhUyZ1LW/tujynyAb5pk=");
        assert_eq!(sha1(&[b'a'; 1000]).len(), 20);
    }

    #[test]
    fn digest_ids_match_zookeeper() {
        // DigestAuthenticationProvider.generateDigest on ZooKeeper 3.8.0.
        assert_eq!(digest_id("super:test"), "super:D/InIHSb7yEEbrWz8b9l71RjZJU=");
        assert_eq!(digest_id("alice:secret"), "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E=");
        assert_eq!(digest_id("bob:p:w:d"), "bob:2UnuH+bp69hG2FoBV6V8FktCb5A=");
        assert_eq!(digest_id("üser:pässwörd"), "üser:4e06bn6Nn+1Kqz6xfwELO4h23TI=");
    }
}
