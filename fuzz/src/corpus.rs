//! The corpus in the repository: `fuzz/corpus/<target>/` (the seeds and the
//! inputs the fuzzer found that reach new code, minimised) and
//! `fuzz/regressions/<target>/` (the inputs of failures found and fixed).
//! The regression test runs them all through every target; the wire suites
//! of zk-framework (`fuzz_wire`) send them over TCP.

use std::path::PathBuf;

/// The `fuzz/` directory of the workspace (where this crate is).
///
/// # Examples
///
/// ```
/// assert!(zk_fuzz::corpus::root().join("corpus").is_dir());
/// ```
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The files of a target's corpus and regressions, sorted by path, with
/// their bytes (unreadable files are left out).
///
/// # Examples
///
/// ```
/// let inputs = zk_fuzz::corpus::inputs("path");
/// assert!(inputs.iter().any(|(_, bytes)| bytes == b"/a/b/c"));
/// ```
pub fn inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let mut paths = Vec::new();
    for kind in ["corpus", "regressions"] {
        if let Ok(entries) = std::fs::read_dir(root().join(kind).join(target)) {
            paths.extend(entries.flatten().map(|e| e.path()).filter(|p| p.is_file()));
        }
    }
    paths.sort();
    paths
        .into_iter()
        .filter_map(|p| std::fs::read(&p).ok().map(|b| (p, b)))
        .collect()
}
