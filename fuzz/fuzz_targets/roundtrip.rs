//! Arbitrary outgoing messages encoded, decoded and compared. See `src/generate.rs`.

#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mcpwire_fuzz::checks::skip_known_bugs_from_env();
    let mut u = Unstructured::new(data);
    if let Ok(msgs) = mcpwire_fuzz::generate::messages(&mut u) {
        mcpwire_fuzz::generate::check_roundtrip(&msgs);
    }
});
