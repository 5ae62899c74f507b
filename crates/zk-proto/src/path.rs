//! ZooKeeper's path rules (`PathUtils.validatePath`), checked before any request.

use std::fmt;

/// Why a path is not a valid ZooKeeper path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidPath {
    /// The offending path.
    pub path: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl fmt::Display for InvalidPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid path {:?}: {}", self.path, self.reason)
    }
}

impl std::error::Error for InvalidPath {}

fn invalid_char(c: char) -> bool {
    let u = c as u32;
    (0x0001..=0x001f).contains(&u)
        || (0x007f..=0x009f).contains(&u)
        || (0xd800..=0xf8ff).contains(&u)
        || (0xfff0..=0xffff).contains(&u)
        || u > 0xffff
}

/// Checks `path` against ZooKeeper's rules. With `sequential`, the path is a
/// prefix to which the server appends a suffix, so a trailing `/` is allowed.
///
/// Rules: non-empty; starts with `/`; `/` alone is valid; no trailing `/`; no
/// empty segment; no `.` or `..` segment; no NUL; no characters in
/// U+0001–U+001F, U+007F–U+009F, U+D800–U+F8FF, U+FFF0–U+FFFF or beyond the BMP.
///
/// # Errors
///
/// [`InvalidPath`] with the reason.
///
/// # Examples
///
/// ```
/// use zk_proto::path::validate_path;
/// assert!(validate_path("/locks/a", false).is_ok());
/// assert!(validate_path("/locks/", true).is_ok());
/// assert!(validate_path("/locks/", false).is_err());
/// assert!(validate_path("relative", false).is_err());
/// assert!(validate_path("/a/../b", false).is_err());
/// ```
pub fn validate_path(path: &str, sequential: bool) -> Result<(), InvalidPath> {
    let err = |reason| {
        Err(InvalidPath {
            path: path.to_string(),
            reason,
        })
    };
    if path.is_empty() {
        return err("path must not be empty");
    }
    if !path.starts_with('/') {
        return err("path must start with /");
    }
    if path == "/" {
        return Ok(());
    }
    if path.ends_with('/') && !sequential {
        return err("path must not end with /");
    }
    // A sequential prefix ending in `/` gets its last segment from the
    // server's suffix: that one segment may be empty, no other ("//" is an
    // empty segment and then the suffix, as ZooKeeper's check of "//1" says).
    let checked = if sequential && path.ends_with('/') {
        &path[..path.len() - 1]
    } else {
        path
    };
    if checked.len() > 1 {
        for seg in checked[1..].split('/') {
            match seg {
                "" => return err("empty segment (//) in path"),
                "." => return err("relative segment . in path"),
                ".." => return err("relative segment .. in path"),
                _ => {}
            }
        }
    } else if checked.len() < path.len() {
        // "//": the root, an empty segment, then the suffix.
        return err("empty segment (//) in path");
    }
    if path.contains('\0') {
        return err("null character in path");
    }
    if path.chars().any(invalid_char) {
        return err("invalid character in path");
    }
    Ok(())
}

/// The parent of an absolute path: `/a/b` → `/a`, `/a` → `/`, `/` → `None`.
///
/// # Examples
///
/// ```
/// use zk_proto::path::parent;
/// assert_eq!(parent("/a/b"), Some("/a"));
/// assert_eq!(parent("/a"), Some("/"));
/// assert_eq!(parent("/"), None);
/// ```
pub fn parent(path: &str) -> Option<&str> {
    if path == "/" || !path.starts_with('/') {
        return None;
    }
    match path.rfind('/') {
        Some(0) => Some("/"),
        Some(i) => Some(&path[..i]),
        None => None,
    }
}

/// The last segment of a path: `/a/b` → `b`.
///
/// # Examples
///
/// ```
/// assert_eq!(zk_proto::path::basename("/a/b"), "b");
/// ```
pub fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Joins a parent and a child name: (`/`, `a`) → `/a`, (`/a`, `b`) → `/a/b`.
///
/// # Examples
///
/// ```
/// assert_eq!(zk_proto::path::join("/", "a"), "/a");
/// assert_eq!(zk_proto::path::join("/a", "b"), "/a/b");
/// ```
pub fn join(parent: &str, child: &str) -> String {
    if parent.ends_with('/') {
        format!("{parent}{child}")
    } else {
        format!("{parent}/{child}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_table() {
        let table: &[(&str, bool, bool)] = &[
            ("/", false, true),
            ("/a", false, true),
            ("/a/b/c", false, true),
            ("/a..b", false, true),
            ("/...", false, true),
            ("/a/.b", false, true),
            ("/ü/日本", false, true),
            ("", false, false),
            ("a", false, false),
            ("/a/", false, false),
            ("/a/", true, true),
            ("/", true, true),
            ("//a", false, false),
            ("/a//b", false, false),
            ("/.", false, false),
            ("/..", false, false),
            ("/a/./b", false, false),
            ("/a/../b", false, false),
            ("/a\0b", false, false),
            ("/a\u{1}", false, false),
            ("/a\u{1f}", false, false),
            ("/a\u{7f}", false, false),
            ("/a\u{9f}", false, false),
            ("/a\u{e000}", false, false),
            ("/a\u{fff0}", false, false),
            ("/a\u{1f600}", false, false),
            ("/a//", true, false),
            // Found by the fuzzer (fuzz/regressions/path/): an empty segment
            // before the sequential suffix.
            ("//", true, false),
            ("//a/", true, false),
        ];
        for &(p, seq, ok) in table {
            assert_eq!(validate_path(p, seq).is_ok(), ok, "path {p:?} sequential={seq}");
        }
    }

    #[test]
    fn parents_and_names() {
        assert_eq!(parent("/a/b/c"), Some("/a/b"));
        assert_eq!(parent("a"), None);
        assert_eq!(basename("/"), "");
        assert_eq!(basename("/x"), "x");
    }
}
