//! Curator's path utilities: namespaces, protected (`_c_<uuid>-`) names, and
//! sorting lock nodes by their sequence suffix.

use crate::error::Error;
use zk_proto::path::validate_path;

/// Curator's protected-name prefix.
pub const PROTECTED_PREFIX: &str = "_c_";

/// Length of `_c_<36-char uuid>-`.
pub const PROTECTED_PREFIX_LEN: usize = 40;

/// Checks a namespace: one non-empty path segment, no `/`, valid as `/<ns>`.
///
/// # Errors
///
/// [`Error::InvalidArgument`] when it contains `/` or is empty, and
/// [`Error::InvalidPath`] when `/<ns>` breaks ZooKeeper's rules.
///
/// # Examples
///
/// ```
/// use zk_framework::paths::validate_namespace;
/// assert!(validate_namespace("app").is_ok());
/// assert!(validate_namespace("a/b").is_err());
/// assert!(validate_namespace("").is_err());
/// assert!(validate_namespace("..").is_err());
/// ```
pub fn validate_namespace(ns: &str) -> Result<(), Error> {
    if ns.is_empty() {
        return Err(Error::InvalidArgument("namespace must not be empty".into()));
    }
    if ns.contains('/') {
        return Err(Error::InvalidArgument(format!(
            "namespace {ns:?} must be a single path segment without '/'"
        )));
    }
    validate_path(&format!("/{ns}"), false)?;
    Ok(())
}

/// Prefixes `path` with `/<namespace>` (`/` maps to `/<namespace>`).
///
/// # Examples
///
/// ```
/// use zk_framework::paths::fix_for_namespace;
/// assert_eq!(fix_for_namespace(Some("ns"), "/a"), "/ns/a");
/// assert_eq!(fix_for_namespace(Some("ns"), "/"), "/ns");
/// assert_eq!(fix_for_namespace(None, "/a"), "/a");
/// ```
pub fn fix_for_namespace(namespace: Option<&str>, path: &str) -> String {
    match namespace {
        None => path.to_string(),
        Some(ns) if path == "/" => format!("/{ns}"),
        Some(ns) => format!("/{ns}{path}"),
    }
}

/// Removes the `/<namespace>` prefix from a server path, if present.
///
/// # Examples
///
/// ```
/// use zk_framework::paths::unfix_for_namespace;
/// assert_eq!(unfix_for_namespace(Some("ns"), "/ns/a"), "/a");
/// assert_eq!(unfix_for_namespace(Some("ns"), "/ns"), "/");
/// assert_eq!(unfix_for_namespace(Some("ns"), "/other"), "/other");
/// ```
pub fn unfix_for_namespace(namespace: Option<&str>, path: &str) -> String {
    if let Some(ns) = namespace {
        let prefix = format!("/{ns}");
        if path == prefix {
            return "/".into();
        }
        if let Some(rest) = path.strip_prefix(&prefix) {
            if rest.starts_with('/') {
                return rest.to_string();
            }
        }
    }
    path.to_string()
}

/// The ancestors of `path` from the top down, excluding `/` and `path` itself:
/// `/a/b/c` → `[/a, /a/b]`.
///
/// # Examples
///
/// ```
/// assert_eq!(zk_framework::paths::ancestors("/a/b/c"), vec!["/a", "/a/b"]);
/// assert!(zk_framework::paths::ancestors("/a").is_empty());
/// ```
pub fn ancestors(path: &str) -> Vec<&str> {
    path.match_indices('/')
        .map(|(i, _)| &path[..i])
        .filter(|p| !p.is_empty())
        .collect()
}

/// Curator's protected name for the last segment: `_c_<id>-<name>`.
///
/// # Examples
///
/// ```
/// let n = zk_framework::paths::protected_name("9518667b-083a-4c97-beb4-c8ec4f480c2d", "lock-");
/// assert_eq!(n, "_c_9518667b-083a-4c97-beb4-c8ec4f480c2d-lock-");
/// ```
pub fn protected_name(id: &str, name: &str) -> String {
    format!("{PROTECTED_PREFIX}{id}-{name}")
}

/// A fresh protected id: a random, lower-case canonical UUID v4.
///
/// # Examples
///
/// ```
/// let id = zk_framework::paths::new_protected_id();
/// assert_eq!(id.len(), 36);
/// assert_eq!(id, id.to_lowercase());
/// ```
pub fn new_protected_id() -> String {
    uuid::Uuid::new_v4().hyphenated().to_string()
}

/// Whether `name` is a Curator protected name: longer than 40 characters,
/// starts with `_c_`, has `-` at index 39, and a UUID between.
///
/// # Examples
///
/// ```
/// use zk_framework::paths::is_protected;
/// assert!(is_protected("_c_9518667b-083a-4c97-beb4-c8ec4f480c2d-lock-0000000000"));
/// assert!(!is_protected("lock-0000000000"));
/// ```
pub fn is_protected(name: &str) -> bool {
    name.len() > PROTECTED_PREFIX_LEN
        && name.starts_with(PROTECTED_PREFIX)
        && name.as_bytes()[PROTECTED_PREFIX_LEN - 1] == b'-'
        && uuid::Uuid::try_parse(&name[3..PROTECTED_PREFIX_LEN - 1]).is_ok()
}

/// The protected id inside a protected name.
///
/// # Examples
///
/// ```
/// let id = zk_framework::paths::protected_id("_c_9518667b-083a-4c97-beb4-c8ec4f480c2d-lock-0000000000");
/// assert_eq!(id, Some("9518667b-083a-4c97-beb4-c8ec4f480c2d"));
/// ```
pub fn protected_id(name: &str) -> Option<&str> {
    is_protected(name).then(|| &name[3..PROTECTED_PREFIX_LEN - 1])
}

/// The name without its protected prefix (unchanged if it has none).
///
/// # Examples
///
/// ```
/// let n = zk_framework::paths::normalize("_c_9518667b-083a-4c97-beb4-c8ec4f480c2d-lock-0000000000");
/// assert_eq!(n, "lock-0000000000");
/// ```
pub fn normalize(name: &str) -> &str {
    if is_protected(name) {
        &name[PROTECTED_PREFIX_LEN..]
    } else {
        name
    }
}

/// Curator's sort key: the part after the last occurrence of `lock_name`, or the
/// whole name when it does not occur.
///
/// # Examples
///
/// ```
/// use zk_framework::paths::fix_for_sorting;
/// assert_eq!(fix_for_sorting("_c_x-lock-0000000007", "lock-"), "0000000007");
/// assert_eq!(fix_for_sorting("foreign", "lock-"), "foreign");
/// ```
pub fn fix_for_sorting<'a>(name: &'a str, lock_name: &str) -> &'a str {
    match name.rfind(lock_name) {
        Some(i) => &name[i + lock_name.len()..],
        None => name,
    }
}

/// Sorts child names the way Curator does: a stable sort by
/// [`fix_for_sorting`], compared byte-wise.
///
/// # Examples
///
/// ```
/// let mut v = vec!["_c_b-lock-0000000002".to_string(), "_c_a-lock-0000000001".to_string()];
/// zk_framework::paths::sort_by_sequence(&mut v, "lock-");
/// assert_eq!(v[0], "_c_a-lock-0000000001");
/// ```
pub fn sort_by_sequence(children: &mut [String], lock_name: &str) {
    // Each key once, not twice per comparison (long listings).
    let mut keyed: Vec<(usize, String)> = children
        .iter_mut()
        .map(|c| (c.len() - fix_for_sorting(c, lock_name).len(), std::mem::take(c)))
        .collect();
    keyed.sort_by(|(i, a), (j, b)| a[*i..].cmp(&b[*j..]));
    for (slot, (_, name)) in children.iter_mut().zip(keyed) {
        *slot = name;
    }
}

/// The first-child rule: the listing of a parent right after a sequential
/// create under it, when it is known without a read. A sequential node's
/// suffix is its parent's creation counter, which starts at 0 with the
/// parent and counts every create under it; so when the same round trip made
/// the parent (`parent_made`) and the node got suffix `0000000000`, the node
/// is the first child the parent ever had, and the only one at its create.
/// Otherwise the listing must be read (`None`).
pub(crate) fn first_child_listing(parent_made: bool, created: &str) -> Option<Vec<String>> {
    const FIRST_SEQUENCE: &str = "0000000000";
    (parent_made && created.ends_with(FIRST_SEQUENCE)).then(|| vec![zk_proto::path::basename(created).to_string()])
}

#[cfg(test)]
mod tests {
    #[test]
    fn first_child_rule_table() {
        let table: &[(bool, &str, Option<&[&str]>)] = &[
            // Made the parent, first sequence: the node alone.
            (true, "/l/_c_a-lock-0000000000", Some(&["_c_a-lock-0000000000"])),
            // The parent was there already: someone may be queued.
            (false, "/l/_c_a-lock-0000000000", None),
            // Made the parent, but another create came first.
            (true, "/l/_c_a-lock-0000000001", None),
            (true, "/l/_c_a-lock-0000000010", None),
        ];
        for (made, created, want) in table {
            let want = want.map(|w| w.iter().map(|s| s.to_string()).collect::<Vec<_>>());
            assert_eq!(super::first_child_listing(*made, created), want, "{made} {created}");
        }
    }

    use super::*;

    #[test]
    fn protected_names_round_trip() {
        for _ in 0..20 {
            let id = new_protected_id();
            let n = format!("{}0000000042", protected_name(&id, "lock-"));
            assert!(is_protected(&n), "{n}");
            assert_eq!(protected_id(&n), Some(id.as_str()));
            assert_eq!(normalize(&n), "lock-0000000042");
        }
        // Exactly 40 characters is not protected (Curator requires more).
        let id = new_protected_id();
        assert!(!is_protected(&protected_name(&id, "")));
        assert!(!is_protected("_c_not-a-uuid-at-all-but-forty-chars-long-x"));
    }

    #[test]
    fn sorting_matches_curator_rules() {
        let mut v: Vec<String> = [
            "_c_ffffffff-0000-4000-8000-000000000000-lock-0000000010",
            "foreign",
            "_c_00000000-0000-4000-8000-000000000000-lock-0000000002",
            "lock-0000000005",
            "_c_11111111-0000-4000-8000-000000000000-lock-0000000002",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        sort_by_sequence(&mut v, "lock-");
        assert_eq!(
            v,
            [
                "_c_00000000-0000-4000-8000-000000000000-lock-0000000002",
                "_c_11111111-0000-4000-8000-000000000000-lock-0000000002",
                "lock-0000000005",
                "_c_ffffffff-0000-4000-8000-000000000000-lock-0000000010",
                "foreign",
            ],
            "stable for equal keys; foreign names sort after numeric keys"
        );
    }

    #[test]
    fn namespace_table() {
        for (ns, ok) in [
            ("a", true),
            ("app-1", true),
            ("", false),
            ("/a", false),
            ("a/", false),
            ("a/b", false),
            (".", false),
            ("a\u{0}", false),
        ] {
            assert_eq!(validate_namespace(ns).is_ok(), ok, "{ns:?}");
        }
        assert_eq!(ancestors("/"), Vec::<&str>::new());
    }
}
