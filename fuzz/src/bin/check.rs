//! Runs a target's check on files, without AFL: `zk-fuzz-check NAME FILE...`
//! prints each file's outcome (the property that failed, or a panic's
//! message) and exits 1 if any failed. For a crash afl-fuzz saved:
//! `cargo run -p zk-fuzz --bin zk-fuzz-check -- acl target/afl/acl/default/crashes/id:000000*`.

#[global_allocator]
static ALLOCATOR: zk_fuzz::alloc::Probe = zk_fuzz::alloc::Probe;

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_default();
    let Some(target) = zk_fuzz::target(&name) else {
        let names: Vec<&str> = zk_fuzz::TARGETS.iter().map(|t| t.name).collect();
        eprintln!("usage: zk-fuzz-check NAME FILE... (NAME one of {})", names.join(", "));
        std::process::exit(2);
    };
    let mut failed = 0;
    for file in args {
        let bytes = match std::fs::read(&file) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("{file}: {e}");
                failed += 1;
                continue;
            }
        };
        match std::panic::catch_unwind(|| zk_fuzz::check(target, &bytes)) {
            Ok(Ok(())) => println!("{file}: ok"),
            Ok(Err(e)) => {
                println!("{file}: FAILED: {e}");
                failed += 1;
            }
            Err(_) => {
                println!("{file}: PANICKED (message above)");
                failed += 1;
            }
        }
    }
    std::process::exit(i32::from(failed > 0));
}
