//! The checks of text a user or a peer gives: paths (`path`), connect
//! strings (`connect_string`), and the subject of a client certificate
//! (`x509`, bytes in DER).

use zk_framework::{ConnectString, Error};
use zk_proto::jute::{Decode, Encode};
use zk_proto::path::{basename, join, parent, validate_path};
use zk_proto::PathRecord;

use crate::Outcome;

/// ZooKeeper's path rules as `zk_proto::path::validate_path` documents them,
/// written again from that text alone, for a differential check.
fn spec_valid(path: &str, sequential: bool) -> bool {
    if !path.starts_with('/') {
        return false;
    }
    if path == "/" {
        return true;
    }
    let body = match path.strip_suffix('/') {
        Some(b) if sequential => b,
        Some(_) => return false,
        None => path,
    };
    let segments_ok = body[1..].split('/').all(|s| !s.is_empty() && s != "." && s != "..");
    let chars_ok = path.chars().all(|c| {
        let u = c as u32;
        u != 0
            && !(0x01..=0x1f).contains(&u)
            && !(0x7f..=0x9f).contains(&u)
            && !(0xd800..=0xf8ff).contains(&u)
            && !(0xfff0..=0xffff).contains(&u)
            && u <= 0xffff
    });
    segments_ok && chars_ok
}

/// The `path` target: the input as text (invalid UTF-8 read lossily).
/// Checked, for a node path and a sequential prefix: `validate_path` agrees
/// with the documented rules written again (`spec_valid`); an error names
/// the path; a valid path's parent is valid and joined with its basename
/// gives the path back; it travels as a jute string byte for byte.
///
/// # Errors
///
/// The property that failed.
///
/// # Examples
///
/// ```
/// assert!(zk_fuzz::text::path(b"/a/b").is_ok());
/// assert!(zk_fuzz::text::path(b"/a/../b").is_ok());
/// ```
pub fn path(input: &[u8]) -> Outcome {
    let p = String::from_utf8_lossy(input);
    for sequential in [false, true] {
        let got = validate_path(&p, sequential);
        if got.is_ok() != spec_valid(&p, sequential) {
            return Err(format!(
                "validate_path({p:?}, {sequential}) = {got:?}, the documented rules say {}",
                spec_valid(&p, sequential)
            ));
        }
        if let Err(e) = &got {
            if e.path != p || !e.to_string().contains(&format!("{p:?}")) {
                return Err(format!("the error for {p:?} names another path: {e}"));
            }
        }
    }
    if validate_path(&p, false).is_ok() && p != "/" {
        let Some(up) = parent(&p) else {
            return Err(format!("the valid path {p:?} has no parent"));
        };
        if validate_path(up, false).is_err() {
            return Err(format!("the parent {up:?} of {p:?} is not valid"));
        }
        if join(up, basename(&p)) != p {
            return Err(format!(
                "join(parent, basename) of {p:?} is {:?}",
                join(up, basename(&p))
            ));
        }
        let rec = PathRecord { path: p.to_string() };
        let bytes = rec.to_bytes();
        if bytes.len() != 4 + p.len() || PathRecord::from_bytes(&bytes).as_ref() != Ok(&rec) {
            return Err(format!("{p:?} does not travel as a jute string"));
        }
    }
    Ok(())
}

/// The `connect_string` target: the input as text (lossily). Checked: the
/// parser returns a connect string or `InvalidConnectString` naming the
/// input; a parsed one has a host, no port 0, a chroot only when it is a
/// valid path other than `/`; its display (the canonical form) has no
/// whitespace among the hosts (a chroot may hold spaces: a node's name may)
/// and parses back to the same value, and each host alone parses to that
/// host.
///
/// # Errors
///
/// The property that failed.
///
/// # Examples
///
/// ```
/// assert!(zk_fuzz::text::connect_string(b"a:1,[::1]:2/app").is_ok());
/// assert!(zk_fuzz::text::connect_string(b"a:0").is_ok());
/// ```
pub fn connect_string(input: &[u8]) -> Outcome {
    let s = String::from_utf8_lossy(input);
    let cs = match ConnectString::parse(&s) {
        Ok(cs) => cs,
        Err(Error::InvalidConnectString { input, reason }) => {
            if input != s || reason.is_empty() {
                return Err(format!("the error for {s:?} names {input:?}: {reason:?}"));
            }
            return Ok(());
        }
        Err(e) => return Err(format!("{s:?}: not an InvalidConnectString error: {e}")),
    };
    if cs.hosts.is_empty() || cs.hosts.iter().any(|h| h.port == 0 || h.host.is_empty()) {
        return Err(format!("{s:?} parsed to {cs:?}"));
    }
    if let Some(c) = &cs.chroot {
        if c == "/" || validate_path(c, false).is_err() {
            return Err(format!("{s:?} has the chroot {c:?}"));
        }
    }
    let shown = cs.to_string();
    let hosts_shown = shown.find('/').map_or(shown.as_str(), |i| &shown[..i]);
    if hosts_shown.contains(char::is_whitespace) {
        return Err(format!("{s:?} displays as {shown:?}, with whitespace among the hosts"));
    }
    match ConnectString::parse(&shown) {
        Ok(again) if again == cs => {}
        other => return Err(format!("{s:?} displays as {shown:?}, which parses to {other:?}")),
    }
    for h in &cs.hosts {
        match ConnectString::parse(&h.to_string()) {
            Ok(one) if one.hosts == [h.clone()] && one.chroot.is_none() => {}
            other => return Err(format!("the host {h} of {s:?} alone parses to {other:?}")),
        }
    }
    Ok(())
}

/// The `x509` target: the input as a client certificate (DER), whose
/// subject the embedded server takes as the connection's `x509` identity.
/// Checked: reading it never panics, and a subject read is a valid `x509`
/// ACL id (`zk_proto::x509::valid_id`), so a client can name itself in an
/// ACL; except, as in Java, a value with a leading or trailing carriage
/// return: Java's `X500Principal.getName()` escapes it as `\<CR>`, which
/// `new X500Principal(name)` (ZooKeeper's test of an id) refuses (seen with
/// Java 17 on the input the fuzzer found, `fuzz/regressions/x509/`).
///
/// # Errors
///
/// The property that failed.
///
/// # Examples
///
/// ```
/// assert!(zk_fuzz::text::x509(b"not a certificate").is_ok());
/// ```
pub fn x509(input: &[u8]) -> Outcome {
    if let Some(id) = zk_proto::x509::subject_id(input) {
        if !zk_proto::x509::valid_id(&id) && !id.contains("\\\r") {
            return Err(format!(
                "the subject {id:?} read from a certificate is not a valid x509 id"
            ));
        }
    }
    Ok(())
}

/// The `config` target: the input as the data of `/zookeeper/config`
/// (`zk_proto::config::EnsembleConfig::parse`, what the client's ensemble
/// tracker reads from a server). Checked: parsing never panics, no
/// allocation exceeds a bound in the input's size (8 bytes per input byte
/// and 2 KiB), and a configuration that parses is written back
/// (`to_string`) as text that parses to the same configuration and is
/// written the same way again.
///
/// # Errors
///
/// The property that failed.
///
/// # Examples
///
/// ```
/// # #[global_allocator] static A: zk_fuzz::alloc::Probe = zk_fuzz::alloc::Probe;
/// # fn main() {
/// assert!(zk_fuzz::text::ensemble_config(b"server.1=a:1:2;3\nversion=1").is_ok());
/// assert!(zk_fuzz::text::ensemble_config(b"garbage").is_ok());
/// # }
/// ```
pub fn ensemble_config(input: &[u8]) -> Outcome {
    use zk_proto::config::EnsembleConfig;
    let (parsed, largest) = crate::alloc::largest_during(|| EnsembleConfig::parse(input));
    let bound = 8 * input.len() + 2048;
    if largest > bound {
        return Err(format!(
            "one allocation of {largest} bytes for {} input bytes",
            input.len()
        ));
    }
    let Ok(c) = parsed else { return Ok(()) };
    let text = c.to_string();
    match EnsembleConfig::parse(text.as_bytes()) {
        Ok(again) if again == c && again.to_string() == text => Ok(()),
        other => Err(format!("{c:?} is written as {text:?}, which parses to {other:?}")),
    }
}
