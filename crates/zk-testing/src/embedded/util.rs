//! Small self-contained helpers: Java's `Random` (for session passwords), SHA-1 and
//! base64 (for `digest` ids), and IPv4 matching for `ip` ACLs.

/// The first `n` bytes of `java.util.Random(seed).nextBytes`, as the real server derives
/// a session password from `sessionId ^ 0xB3415C00`.
pub(crate) fn java_random_bytes(seed: i64, n: usize) -> Vec<u8> {
    const MULT: u64 = 0x5_DEEC_E66D;
    const MASK: u64 = (1 << 48) - 1;
    let mut s = (seed as u64 ^ MULT) & MASK;
    let mut next_int = || {
        s = (s.wrapping_mul(MULT).wrapping_add(0xB)) & MASK;
        (s >> 16) as u32 as i32
    };
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let mut rnd = next_int();
        for _ in 0..(n - out.len()).min(4) {
            out.push(rnd as u8);
            rnd >>= 8;
        }
    }
    out
}

/// SHA-1 of `data`.
pub(crate) fn sha1(data: &[u8]) -> [u8; 20] {
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
pub(crate) fn base64(data: &[u8]) -> String {
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

/// `DigestAuthenticationProvider.generateDigest("user:password")`: `user:base64(sha1(all))`.
pub(crate) fn digest_id(user_password: &str) -> String {
    let user = user_password.split(':').next().unwrap_or("");
    format!("{user}:{}", base64(&sha1(user_password.as_bytes())))
}

fn parse_v4(s: &str) -> Option<u32> {
    s.parse::<std::net::Ipv4Addr>().ok().map(u32::from)
}

/// Whether `expr` (`a.b.c.d` or `a.b.c.d/bits`) is a valid `ip` ACL id.
pub(crate) fn valid_ip_expr(expr: &str) -> bool {
    let (addr, bits) = match expr.split_once('/') {
        Some((a, b)) => (a, Some(b)),
        None => (expr, None),
    };
    let addr_ok = parse_v4(addr).is_some() || addr.parse::<std::net::Ipv6Addr>().is_ok();
    addr_ok
        && match bits {
            None => true,
            Some(b) => matches!(b.parse::<u8>(), Ok(n) if n <= 128),
        }
}

/// Whether the client address `ip` matches the ACL expression `expr`.
pub(crate) fn ip_matches(ip: &str, expr: &str) -> bool {
    let (addr, bits) = match expr.split_once('/') {
        Some((a, b)) => (a, b.parse::<u32>().ok()),
        None => (expr, None),
    };
    match (parse_v4(ip), parse_v4(addr)) {
        (Some(i), Some(a)) => {
            let bits = bits.unwrap_or(32).min(32);
            let mask = if bits == 0 { 0 } else { u32::MAX << (32 - bits) };
            i & mask == a & mask
        }
        _ => ip == addr,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha1_and_base64_vectors() {
        assert_eq!(base64(&sha1(b"abc")), "qZk+NkcGgWq6PiVxeFDCbJzQ2J0=");
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        let long = vec![b'a'; 1000];
        assert_eq!(sha1(&long).len(), 20);
        // ZooKeeper's documented example: super:test.
        assert_eq!(digest_id("super:test"), "super:D/InIHSb7yEEbrWz8b9l71RjZJU=");
    }

    #[test]
    fn java_random_matches_java() {
        // new java.util.Random(0).nextInt() == -1155484576 (0xbb20b460): bytes little-endian first.
        let b = java_random_bytes(0, 4);
        assert_eq!(i32::from_le_bytes([b[0], b[1], b[2], b[3]]), -1155484576);
        assert_eq!(java_random_bytes(42, 16).len(), 16);
    }

    #[test]
    fn ip_rules() {
        assert!(ip_matches("127.0.0.1", "127.0.0.1"));
        assert!(ip_matches("127.0.0.1", "127.0.0.0/8"));
        assert!(!ip_matches("10.0.0.1", "127.0.0.0/8"));
        assert!(valid_ip_expr("10.1.2.3/24"));
        assert!(!valid_ip_expr("nope"));
    }
}
