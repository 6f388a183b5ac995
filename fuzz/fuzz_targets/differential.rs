//! One body through `FrameParser`, compared with a serde_json reference classifier. See
//! `src/reference.rs` for the rules and the inputs where the two parsers may disagree.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mcpwire_fuzz::checks::skip_known_bugs_from_env();
    mcpwire_fuzz::reference::check_differential(data);
});
