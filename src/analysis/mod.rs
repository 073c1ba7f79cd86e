//! placeholder
pub struct Analysis;
