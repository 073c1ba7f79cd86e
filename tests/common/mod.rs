//! Helpers shared by the integration tests (each test crate includes this module).

pub mod reference;
