//! Writes the corpus' seeds (`zk_fuzz::seeds::all`) to
//! `fuzz/corpus/<target>/seed-<name>` (or under the directory given as the
//! first argument), and says how many.

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let root = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus"));
    let seeds = zk_fuzz::seeds::all();
    for (target, name, bytes) in &seeds {
        let dir = root.join(target);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join(format!("seed-{name}")), bytes)?;
    }
    println!("{} seeds written under {}", seeds.len(), root.display());
    Ok(())
}
