//! One body through `FrameParser` under several limits (batches on and off); every accessor,
//! error reply and re-encoding checked, and the parse repeated. See `check_body` in
//! `src/body.rs`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mcpwire_fuzz::checks::skip_known_bugs_from_env();
    mcpwire_fuzz::body::check_body(data);
});
