//! Grammar export: exact GBNF per format family, schemas, and every corpus grammar parsed back by the GBNF grammar and the Earley recognizer.
//!
//! One test binary per concern (`cargo test --test grammar`); each module below
//! was a binary of its own. Shared fixtures live in `tests/common/`.

#[path = "../common/mod.rs"]
mod common;

mod corpus;
mod elements;
mod golden;
mod headers;
mod hostile_schemas;
mod json_field_order;
mod python_values;
mod request_options;
mod response_template_fields;
mod schema;
mod special_tokens;
