//! ZooKeeper's `digest` authentication scheme: the id a `user:password` pair
//! maps to (`DigestAuthenticationProvider.generateDigest`), with the SHA-1 and
//! base64 it needs (written here so that this crate keeps no dependencies).
//!
//! The password itself never leaves the caller: ACLs carry only the hash, and
//! the credentials go to the server in an [`crate::AuthPacket`], whose `Debug`
//! output hides them.

/// SHA-1 of `data` (only for `digest` ids: SHA-1 is what ZooKeeper uses there).
///
/// # Examples
///
/// ```
/// assert_eq!(zk_proto::digest::sha1(b"abc")[0], 0xa9);
/// ```
pub fn sha1(data: &[u8]) -> [u8; 20] {
    let mut h: [u32; 5] = [0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0];
    let mut msg = data.to_vec();
    let bit_len = (data.len() as u64).wrapping_mul(8);
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&bit_len.to_be_bytes());
    for chunk in msg.chunks(64) {
        let mut w = [0u32; 80];
        for (i, word) in chunk.chunks(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..80 {
            w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = h;
        for (i, wi) in w.iter().enumerate() {
            let (f, k) = match i {
                0..=19 => ((b & c) | (!b & d), 0x5A82_7999),
                20..=39 => (b ^ c ^ d, 0x6ED9_EBA1),
                40..=59 => ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC),
                _ => (b ^ c ^ d, 0xCA62_C1D6),
            };
            let t = a
                .rotate_left(5)
                .wrapping_add(f)
                .wrapping_add(e)
                .wrapping_add(k)
                .wrapping_add(*wi);
            e = d;
            d = c;
            c = b.rotate_left(30);
            b = a;
            a = t;
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e]) {
            *x = x.wrapping_add(y);
        }
    }
    let mut out = [0u8; 20];
    for (i, x) in h.iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&x.to_be_bytes());
    }
    out
}

/// Standard base64 with padding.
///
/// # Examples
///
/// ```
/// assert_eq!(zk_proto::digest::base64(b"fo"), "Zm8=");
/// ```
pub fn base64(data: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let b = [c[0], *c.get(1).unwrap_or(&0), *c.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= c.len() {
                s.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
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
