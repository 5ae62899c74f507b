//! The AFL++ harness: `zk-fuzz-target NAME` runs target NAME's check
//! (`zk_fuzz::TARGETS`) on every input afl-fuzz gives it (persistent mode); a
//! failed property is a panic, which AFL++ records as a crash. Built with
//! `cargo afl build --features afl` (scripts/fuzz.sh).

#[global_allocator]
static ALLOCATOR: zk_fuzz::alloc::Probe = zk_fuzz::alloc::Probe;

fn main() {
    let name = std::env::args().nth(1).unwrap_or_default();
    let Some(target) = zk_fuzz::target(&name) else {
        let names: Vec<&str> = zk_fuzz::TARGETS.iter().map(|t| t.name).collect();
        eprintln!("usage: zk-fuzz-target NAME (one of {})", names.join(", "));
        std::process::exit(2);
    };
    afl::fuzz!(|data: &[u8]| {
        if let Err(e) = zk_fuzz::check(target, data) {
            panic!("{}: {e}", target.name);
        }
    });
}
