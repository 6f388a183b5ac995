//! Count mode for the benches of one routine at a time: `MCPWIRE_ITERS=N bench-binary NAME` runs
//! the routine NAME `N` times on fresh inputs and nothing else, with no criterion, so
//! `valgrind --tool=callgrind` can count its instructions: the difference between two run
//! lengths, divided by the difference in `N`, is the count of one call, start-up excluded.
//! `NAME/setup` runs only the making of the inputs, to subtract.

/// In count mode, runs `routine` on `setup()`'s inputs `N` times when `name` is the one asked
/// for (or only `setup` for `NAME/setup`), and returns `true` so the caller skips criterion.
pub fn counted<I, O>(
    name: &str,
    mut setup: impl FnMut() -> I,
    mut routine: impl FnMut(I) -> O,
) -> bool {
    let Ok(n) = std::env::var("MCPWIRE_ITERS") else { return false };
    let n: usize = n.parse().expect("MCPWIRE_ITERS=N");
    let asked = std::env::args().skip(1).find(|a| !a.starts_with('-')).unwrap_or_default();
    if asked == name {
        for _ in 0..n {
            std::hint::black_box(routine(setup()));
        }
        println!("{name}: {n} calls");
    } else if asked.strip_suffix("/setup") == Some(name) {
        for _ in 0..n {
            std::hint::black_box(setup());
        }
        println!("{name}/setup: {n} inputs");
    }
    true
}
