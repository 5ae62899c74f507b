//! The corpus' regression test: every file of `fuzz/corpus/<target>/` (the
//! seeds and the inputs the fuzzer found interesting, minimised) and of
//! `fuzz/regressions/<target>/` (the inputs of crashes found and fixed)
//! through every target's check, as an ordinary test that needs no AFL. The
//! checks are the fuzz targets' bodies (`zk_fuzz::TARGETS`), so what the
//! fuzzer checks, this test checks, on the inputs that reached the most code.

use std::path::{Path, PathBuf};

#[global_allocator]
static ALLOCATOR: zk_fuzz::alloc::Probe = zk_fuzz::alloc::Probe;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The files of `dir`'s subdirectories (one per target), sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(targets) = std::fs::read_dir(dir) else {
        return out;
    };
    for t in targets.flatten() {
        if let Ok(entries) = std::fs::read_dir(t.path()) {
            out.extend(entries.flatten().map(|e| e.path()).filter(|p| p.is_file()));
        }
    }
    out.sort();
    out
}

/// Runs every file through every target; returns the failures (a property
/// or a panic), each with the file and the target.
fn replay(paths: &[PathBuf]) -> Vec<String> {
    let mut failures = Vec::new();
    for p in paths {
        let bytes = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        for t in zk_fuzz::TARGETS {
            let r = std::panic::catch_unwind(|| zk_fuzz::check(*t, &bytes));
            match r {
                Ok(Ok(())) => {}
                Ok(Err(e)) => failures.push(format!("{} through {}: {e}", p.display(), t.name)),
                Err(_) => failures.push(format!("{} through {}: panicked", p.display(), t.name)),
            }
        }
    }
    failures
}

/// Every corpus file (seeds and the fuzzer's finds) passes every target's
/// check.
#[test]
fn the_corpus_passes_every_check() {
    let paths = files(&root().join("corpus"));
    assert!(
        paths.len() >= zk_fuzz::seeds::all().len(),
        "the corpus has {} files, fewer than the seeds",
        paths.len()
    );
    let failures = replay(&paths);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!(
        "{} corpus files through {} targets",
        paths.len(),
        zk_fuzz::TARGETS.len()
    );
}

/// Every input of a crash found and fixed passes every target's check.
#[test]
fn every_fixed_crash_stays_fixed() {
    let paths = files(&root().join("regressions"));
    let failures = replay(&paths);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!(
        "{} regression inputs through {} targets",
        paths.len(),
        zk_fuzz::TARGETS.len()
    );
}

/// The corpus holds every seed (`zk_fuzz::seeds::all`) byte for byte: an
/// encoding that changed asks for the seeds to be written again
/// (`cargo run -p zk-fuzz --bin zk-fuzz-seeds`).
#[test]
fn the_corpus_holds_every_seed() {
    let mut stale = Vec::new();
    for (target, name, bytes) in zk_fuzz::seeds::all() {
        let p = root().join("corpus").join(target).join(format!("seed-{name}"));
        if std::fs::read(&p).ok().as_deref() != Some(bytes.as_slice()) {
            stale.push(p.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "missing or stale seeds (run `cargo run -p zk-fuzz --bin zk-fuzz-seeds`): {stale:?}"
    );
}

/// Every valid encoding of every record decodes whole and re-encodes byte
/// for byte (the seeds of the `records` target).
#[test]
fn every_valid_record_re_encodes_to_its_bytes() {
    for (name, bytes) in zk_fuzz::seeds::records() {
        let check = zk_fuzz::decode::RECORDS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, c)| *c)
            .expect("a decoder of every sample");
        match check(&bytes) {
            Ok(Some((again, used))) => {
                assert_eq!(
                    (used, &again),
                    (bytes.len(), &bytes),
                    "{name}: a valid encoding re-encodes to other bytes"
                );
            }
            other => panic!("{name}: a valid encoding gives {other:?}"),
        }
    }
}

/// A check run without the allocation probe fails rather than pass
/// unmeasured; with it (this binary), a valid input passes.
#[test]
fn checks_need_the_allocation_probe() {
    assert!(zk_fuzz::alloc::installed());
    let t = zk_fuzz::target("frame").expect("the frame target");
    assert_eq!(zk_fuzz::check(t, &[3, 1, 0, 0, 0, 0]), Ok(()));
}
