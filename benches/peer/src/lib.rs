//! Nothing to use: this package only holds `benches/peer.rs`, the
//! side-by-side bench of chat-autoparser's output parser and SMG's
//! `tool-parser` crate on the same outputs (see `docs/parser.md`,
//! "Against tool-parser"). It is a workspace member outside
//! `default-members`, so the peer is compiled only by
//! `cargo bench -p chat-autoparser-peer-bench`.
