//! Small self-contained helpers: Java's `Random` (for session passwords) and IPv4
//! matching for `ip` ACLs (`digest` ids come from [`zk_proto::digest`]).

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

/// `IPAuthenticationProvider.v4addr2Bytes`: four dot-separated `Integer.parseInt`
/// values in 0..=255 (so `010.0.0.1` and `+1.2.3.4` are accepted, as in Java).
fn parse_v4(s: &str) -> Option<u32> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut v = 0u32;
    for p in parts {
        match p.parse::<i32>() {
            Ok(n) if (0..=255).contains(&n) => v = (v << 8) | n as u32,
            _ => return None,
        }
    }
    Some(v)
}

/// Whether `expr` (`a.b.c.d` or `a.b.c.d/bits`) is a valid `ip` ACL id, as
/// ZooKeeper 3.8's `IPAuthenticationProvider.isValid` decides: IPv4 only, with
/// at most 32 prefix bits.
pub(crate) fn valid_ip_expr(expr: &str) -> bool {
    let (addr, bits) = match expr.split_once('/') {
        Some((a, b)) => (a, Some(b)),
        None => (expr, None),
    };
    parse_v4(addr).is_some()
        && match bits {
            None => true,
            Some(b) => matches!(b.parse::<i32>(), Ok(n) if (0..=32).contains(&n)),
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
