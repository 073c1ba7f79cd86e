//! Chained setters for the option structs.
//!
//! The structs a caller fills in (`ChatRequest`, `Options`, `ParserConfig`,
//! `RenderRequest`, `TemplateConfig`, `Limits`, `LarkOptions`) are
//! `#[non_exhaustive]`, so a new option never breaks a caller: outside the
//! crate they are built from `Default` and these setters,
//! `Options::default().with_tools(tools).with_prompt(prompt)`, or changed
//! field by field.
//!
//! Invariant: a setter sets its one field and nothing else. An optional
//! field's setter takes the value or an `Option` (`with_prompt(p)`,
//! `with_prompt(Some(p))`, `with_prompt(None)` all work).

/// `setters!(Type { /// doc
/// with_x => x: T; optional: /// doc
/// with_y => y: U })`: `with_x(T)` sets `x`; `with_y(impl Into<Option<U>>)`
/// sets the optional `y`.
macro_rules! setters {
    ($ty:ty {
        $($(#[$doc:meta])* $setter:ident => $field:ident: $t:ty),* $(,)?
        $(; optional: $($(#[$odoc:meta])* $osetter:ident => $ofield:ident: $ot:ty),* $(,)?)?
    }) => {
        impl $ty {
            $(
                $(#[$doc])*
                #[must_use]
                pub fn $setter(mut self, value: $t) -> Self {
                    self.$field = value;
                    self
                }
            )*
            $($(
                $(#[$odoc])*
                #[must_use]
                pub fn $osetter(mut self, value: impl Into<Option<$ot>>) -> Self {
                    self.$ofield = value.into();
                    self
                }
            )*)?
        }
    };
}
