//! The output parser: round trip, llama.cpp's vectors, the deviation corpus, bytes, fuzz regressions, and one small written template per tool-call dialect.
//!
//! One test binary per concern (`cargo test --test parser`); each module below
//! was a binary of its own. Shared fixtures live in `tests/common/`.

mod call_forms;
mod call_names;
mod call_wrappers;
mod channels;
mod check_verdicts;
#[path = "../common/mod.rs"]
mod common;
mod coverage_blocks;
mod delimiter_reasoning;
mod deviations;
mod dialects;
mod dropped_openers;
mod fallback_dialects;
mod fenced_calls;
mod fuzz_regressions;
mod joins;
mod json_call_members;
mod late_section_end;
mod long_calls;
mod losses;
mod name_echo;
mod named_close_tags;
mod nested_elements;
mod part_opener;
mod policies;
mod prose_formats;
mod push_bytes;
mod python_values;
mod round_trip;
mod special_tokens;
mod stray_markers;
mod token_spans;
mod turn_end;
mod typed_attributes;
mod unclosed_values;
mod unconditional_prompt;
mod vectors;
