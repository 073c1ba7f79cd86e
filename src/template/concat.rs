//! The second source rewrite: every `~` chain through a bounded filter, and
//! no large constant made at compile time.
//!
//! minijinja's `~` copies both operands into a fresh string inside one VM
//! instruction, with no code of ours in between: forty-two `('x' * 99000000)`
//! joined by `~` reached 3.2 GB and aborted the process, far from any value
//! bound. So each chain `A ~ B ~ C` is rewritten, on the text, as the filter
//! chain `(A )|F|F( B )|F( C)` (F = [`CONCAT_FILTER`]), which minijinja
//! parses in a loop (no recursion per operand) and evaluates left to right
//! and pairwise, as `~`: [`concat`] refuses a first operand over the
//! per-value bound before the second is made, and a result over it before
//! allocating it, so at most two operands within the bound are alive.
//!
//! minijinja's code generator also folds constant expressions while
//! compiling: `('x' * 99000000) ~ ...` ran entirely at compile time, and each
//! `'x' * 99000000` operand would still be a 99 MB constant of the compiled
//! template. So every `*` whose two operands are constants has its left
//! operand made non-constant (`(X if true) * Y`, the same value), and the
//! product is made at render time, one at a time.
//!
//! Chains are found on minijinja's own syntax tree (its parser, exposed by
//! the `unstable_machinery` feature, pinned in Cargo.toml), and edited on the
//! text, so the rest of the template is kept byte for byte. Only what the
//! tree's spans show reliably is used: where an operand ends, and where the
//! outermost `~` of a chain starts; each `~` is found by scanning from the end
//! of the operand before it, over spaces and `)`. A chain whose text does not
//! read as expected is left as it is.
//!
//! Invariants: the rewritten template computes what the source computes,
//! byte for byte, unless a bound refuses it; a text minijinja cannot parse is
//! left unchanged (the compiler reports it); [`Rewritten::original_offset`]
//! of the result maps back through the first rewrite to the source.

use std::fmt::Write as _;

use minijinja::machinery::ast::{self, BinOpKind, CallArg, Expr, Spanned, Stmt};
use minijinja::{Error, Value};

use super::rewrite::{Edit, Rewritten};
use super::{cpu_budget, limits, syntax};

/// Name of the filter each `~` of the rewritten text calls.
pub(crate) const CONCAT_FILTER: &str = "__chat_autoparser_concat";

/// Rewrites the `~` chains and constant products of `first` (the text of the
/// first rewrite); `first` unchanged if it does not parse.
pub(crate) fn bound_concats(first: Rewritten) -> Rewritten {
    let edits = {
        let Ok(syntax) = syntax::syntax() else {
            return first;
        };
        let Ok(tree) = minijinja::machinery::parse(&first.text, "template", syntax) else {
            return first;
        };
        let mut finder = Finder {
            text: &first.text,
            edits: Vec::new(),
        };
        finder.stmt(&tree, 0);
        finder.edits
    };
    if edits.is_empty() {
        return first;
    }
    first.edited(edits)
}

/// The filter behind [`CONCAT_FILTER`]: `format!("{left}{right}")`, as
/// minijinja's `~`, refused when longer than `limit` bytes; without `right`,
/// `left` itself once checked (a string over `limit` cannot start a chain).
pub(crate) fn concat(left: &Value, right: Option<&Value>, limit: usize) -> Result<Value, Error> {
    cpu_budget::tick()?;
    let Some(right) = right else {
        limits::check("a ~ operand", left, limit)?;
        return Ok(left.clone());
    };
    let known = left.as_str().map_or(0, str::len) + right.as_str().map_or(0, str::len);
    if known > limit {
        return Err(limits::too_large(WHAT, known, limit));
    }
    let mut out = BoundedText {
        text: String::with_capacity(known),
        limit,
        attempted: 0,
    };
    match write!(out, "{left}{right}") {
        Ok(()) => Ok(Value::from(out.text)),
        Err(_) => Err(limits::too_large(WHAT, out.attempted, limit)),
    }
}

/// What a refused [`concat`] names.
const WHAT: &str = "a ~ result";

/// A `fmt::Write` that fails past `limit` bytes (a list's `Display` can be
/// as long as the list).
struct BoundedText {
    text: String,
    limit: usize,
    attempted: usize,
}

impl std::fmt::Write for BoundedText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if self.text.len() + s.len() > self.limit {
            self.attempted = self.text.len() + s.len();
            return Err(std::fmt::Error);
        }
        self.text.push_str(s);
        Ok(())
    }
}

/// Walks a syntax tree, collecting the edits; `depth` is the nesting of the
/// node, which orders edits that fall at one offset.
struct Finder<'t> {
    text: &'t str,
    edits: Vec<Edit>,
}

impl Finder<'_> {
    fn stmts(&mut self, body: &[Stmt<'_>], depth: usize) {
        for s in body {
            self.stmt(s, depth + 1);
        }
    }

    fn stmt(&mut self, stmt: &Stmt<'_>, depth: usize) {
        let d = depth + 1;
        match stmt {
            Stmt::Template(t) => self.stmts(&t.children, depth),
            Stmt::EmitExpr(e) => self.expr(&e.expr, d),
            Stmt::EmitRaw(_) | Stmt::Continue(_) | Stmt::Break(_) => {}
            Stmt::ForLoop(f) => {
                self.expr(&f.target, d);
                self.expr(&f.iter, d);
                self.opt(f.filter_expr.as_ref(), d);
                self.stmts(&f.body, depth);
                self.stmts(&f.else_body, depth);
            }
            Stmt::IfCond(i) => {
                self.expr(&i.expr, d);
                self.stmts(&i.true_body, depth);
                self.stmts(&i.false_body, depth);
            }
            Stmt::WithBlock(w) => {
                for (target, value) in &w.assignments {
                    self.expr(target, d);
                    self.expr(value, d);
                }
                self.stmts(&w.body, depth);
            }
            Stmt::Set(s) => {
                self.expr(&s.target, d);
                self.expr(&s.expr, d);
            }
            Stmt::SetBlock(s) => {
                self.expr(&s.target, d);
                self.opt(s.filter.as_ref(), d);
                self.stmts(&s.body, depth);
            }
            Stmt::AutoEscape(a) => {
                self.expr(&a.enabled, d);
                self.stmts(&a.body, depth);
            }
            Stmt::FilterBlock(f) => {
                self.expr(&f.filter, d);
                self.stmts(&f.body, depth);
            }
            Stmt::Block(b) => self.stmts(&b.body, depth),
            Stmt::Import(i) => {
                self.expr(&i.expr, d);
                self.expr(&i.name, d);
            }
            Stmt::FromImport(f) => {
                self.expr(&f.expr, d);
                for (name, alias) in &f.names {
                    self.expr(name, d);
                    self.opt(alias.as_ref(), d);
                }
            }
            Stmt::Extends(e) => self.expr(&e.name, d),
            Stmt::Include(i) => self.expr(&i.name, d),
            Stmt::Macro(m) => self.macro_decl(m, depth),
            Stmt::CallBlock(c) => {
                self.call(&c.call, d);
                self.macro_decl(&c.macro_decl, depth);
            }
            Stmt::Do(c) => self.call(&c.call, d),
        }
    }

    fn macro_decl(&mut self, m: &ast::Macro<'_>, depth: usize) {
        for e in m.args.iter().chain(&m.defaults) {
            self.expr(e, depth + 1);
        }
        self.stmts(&m.body, depth);
    }

    fn call(&mut self, c: &ast::Call<'_>, depth: usize) {
        self.expr(&c.expr, depth + 1);
        self.args(&c.args, depth + 1);
    }

    fn args(&mut self, args: &[CallArg<'_>], depth: usize) {
        for arg in args {
            match arg {
                CallArg::Pos(e)
                | CallArg::Kwarg(_, e)
                | CallArg::PosSplat(e)
                | CallArg::KwargSplat(e) => self.expr(e, depth),
            }
        }
    }

    fn opt(&mut self, e: Option<&Expr<'_>>, depth: usize) {
        if let Some(e) = e {
            self.expr(e, depth);
        }
    }

    fn expr(&mut self, expr: &Expr<'_>, depth: usize) {
        let d = depth + 1;
        match expr {
            Expr::Var(_) | Expr::Const(_) => {}
            Expr::BinOp(b) if matches!(b.op, BinOpKind::Concat) => self.chain(b, depth),
            Expr::BinOp(b) => {
                if matches!(b.op, BinOpKind::Mul) && is_constant(&b.left) && is_constant(&b.right) {
                    self.unfold(b, depth);
                }
                self.expr(&b.left, d);
                self.expr(&b.right, d);
            }
            Expr::Slice(s) => {
                self.expr(&s.expr, d);
                for e in [&s.start, &s.stop, &s.step] {
                    self.opt(e.as_ref(), d);
                }
            }
            Expr::UnaryOp(u) => self.expr(&u.expr, d),
            Expr::Compare(c) => {
                self.expr(&c.expr, d);
                for op in &c.ops {
                    self.expr(&op.expr, d);
                }
            }
            Expr::IfExpr(i) => {
                self.expr(&i.test_expr, d);
                self.expr(&i.true_expr, d);
                self.opt(i.false_expr.as_ref(), d);
            }
            Expr::Filter(f) => {
                self.opt(f.expr.as_ref(), d);
                self.args(&f.args, d);
            }
            Expr::Test(t) => {
                self.expr(&t.expr, d);
                self.args(&t.args, d);
            }
            Expr::GetAttr(g) => self.expr(&g.expr, d),
            Expr::GetItem(g) => {
                self.expr(&g.expr, d);
                self.expr(&g.subscript_expr, d);
            }
            Expr::Call(c) => self.call(c, depth),
            Expr::List(l) => l.items.iter().for_each(|e| self.expr(e, d)),
            Expr::Tuple(t) => t.items.iter().for_each(|e| self.expr(e, d)),
            Expr::Map(m) => m.keys.iter().chain(&m.values).for_each(|e| self.expr(e, d)),
        }
    }

    /// `A ~ B ~ C` → `(A )|F|F( B )|F( C)`; then the operands' own chains.
    fn chain(&mut self, outer: &Spanned<ast::BinOp<'_>>, depth: usize) {
        // The tree is left-nested: Concat(Concat(A, B), C).
        let mut rights = vec![&outer.right];
        let mut first = &outer.left;
        while let Expr::BinOp(b) = first {
            if !matches!(b.op, BinOpKind::Concat) {
                break;
            }
            rights.push(&b.right);
            first = &b.left;
        }
        rights.reverse();
        let operands: Vec<&Expr<'_>> = std::iter::once(first).chain(rights).collect();
        if let Some(tildes) = self.tildes(&operands) {
            // The chain's own span starts at its first token; the first
            // operand's may not (a filter's starts at the filter's name).
            self.edits.push(Edit::open(start_of(outer), "(", depth));
            // The first operand alone is checked before the second is made
            // (`(A )|F|F( B )...`): later left operands are results of F.
            for (i, at) in tildes.into_iter().enumerate() {
                let call = match i {
                    0 => format!(")|{CONCAT_FILTER}|{CONCAT_FILTER}("),
                    _ => format!(")|{CONCAT_FILTER}("),
                };
                self.edits.push(Edit::replace(at..at + 1, &call));
            }
            self.edits
                .push(Edit::close(end_of(&outer.right), ")", depth));
        }
        for operand in operands {
            self.expr(operand, depth + 1);
        }
    }

    /// The offset of the `~` after each operand but the last, found over
    /// spaces and closing parentheses; `None` if any is not there.
    fn tildes(&self, operands: &[&Expr<'_>]) -> Option<Vec<usize>> {
        let bytes = self.text.as_bytes();
        operands[..operands.len() - 1]
            .iter()
            .map(|e| {
                let from = e.span().end_offset as usize;
                let at = from
                    + bytes
                        .get(from..)?
                        .iter()
                        .position(|b| !(b.is_ascii_whitespace() || *b == b')'))?;
                (bytes[at] == b'~').then_some(at)
            })
            .collect()
    }

    /// `X * Y`, both constant → `(X if true) * Y`: the same product, made
    /// at render time instead of by the compiler's constant folding.
    fn unfold(&mut self, mul: &Spanned<ast::BinOp<'_>>, depth: usize) {
        self.edits.push(Edit::open(start_of(mul), "(", depth));
        self.edits
            .push(Edit::close(end_of(&mul.left), " if true)", depth));
    }
}

/// Where a binary operation's text starts: at its left operand's first
/// token, parentheses included.
fn start_of(node: &Spanned<ast::BinOp<'_>>) -> usize {
    node.span().start_offset as usize
}

/// Where an expression's text ends (before the closing parentheses that
/// group it, if any).
fn end_of(expr: &Expr<'_>) -> usize {
    expr.span().end_offset as usize
}

/// Whether minijinja's constant folding (`Expr::as_const`) would evaluate
/// `expr` at compile time, judged on its shape without evaluating it.
fn is_constant(expr: &Expr<'_>) -> bool {
    let all_const = |items: &[Expr<'_>]| items.iter().all(|e| matches!(e, Expr::Const(_)));
    match expr {
        Expr::Const(_) => true,
        Expr::List(l) => all_const(&l.items),
        Expr::Tuple(t) => all_const(&t.items),
        Expr::Map(m) => all_const(&m.keys) && all_const(&m.values),
        Expr::UnaryOp(u) => is_constant(&u.expr),
        Expr::BinOp(b) => is_constant(&b.left) && is_constant(&b.right),
        Expr::Compare(c) => is_constant(&c.expr) && c.ops.iter().all(|op| is_constant(&op.expr)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::super::rewrite::rewrite;
    use super::*;

    fn text(source: &str) -> String {
        bound_concats(rewrite(source))
            .text
            .replace(CONCAT_FILTER, "F")
    }

    #[test]
    fn a_chain_becomes_a_filter_chain() {
        assert_eq!(text("{{ a ~ b ~ c }}"), "{{ (a )|F|F( b )|F( c) }}");
        assert_eq!(text("{{a~b}}"), "{{(a)|F|F(b)}}");
        assert_eq!(
            text("{{ x + a ~ b|upper if c }}"),
            "{{ x + (a )|F|F( b|upper) if c }}"
        );
        assert_eq!(text("{{ m.x|trim ~ 'a' }}"), "{{ (m.x|trim )|F|F( 'a') }}");
    }

    #[test]
    fn parenthesised_operands_keep_their_parentheses() {
        assert_eq!(text("{{ (a + b) ~ c }}"), "{{ ((a + b) )|F|F( c) }}");
        assert_eq!(text("{{ (a ~ b) ~ (c) }}"), "{{ ((a )|F|F( b) )|F( (c)) }}");
    }

    #[test]
    fn nested_chains_are_rewritten_inside_out() {
        assert_eq!(text("{{ a ~ (b ~ c) }}"), "{{ (a )|F|F( ((b )|F|F( c))) }}");
        assert_eq!(
            text("{{ f(a ~ b) ~ c }}"),
            "{{ (f((a )|F|F( b)) )|F|F( c) }}"
        );
    }

    #[test]
    fn chains_in_statements_are_rewritten() {
        assert_eq!(
            text("{% set x = a ~ b %}"),
            "{% set x = __chat_autoparser_bound(((a )|F|F( b))) %}"
        );
        assert_eq!(
            text("{% macro g(s, t=s ~ s) %}{% endmacro %}"),
            "{% macro g(s, t=(s )|F|F( s)) %}{% if __chat_autoparser_bound(s, t) %}{% endif %}\
             {% if __chat_autoparser_release(s, t) %}{% endif %}{% endmacro %}"
        );
        assert_eq!(
            text("{% for m in l if m ~ 'a' %}{% endfor %}"),
            "{% for m in __chat_autoparser_loop((l)) if (m )|F|F( 'a') %}{% endfor %}"
        );
    }

    #[test]
    fn text_and_strings_are_kept() {
        assert_eq!(
            text("a ~ b {{ 'x ~ y' ~ \"~\" }}"),
            "a ~ b {{ ('x ~ y' )|F|F( \"~\") }}"
        );
        assert_eq!(
            text("{{- a ~ b -}}\n{%- if a ~ b -%}{% endif %}"),
            "{{- (a )|F|F( b) -}}\n{%- if (a )|F|F( b) -%}{% endif %}"
        );
        assert_eq!(text("{{ a ~ }}"), "{{ a ~ }}");
    }

    #[test]
    fn constant_products_are_made_at_render_time() {
        assert_eq!(text("{{ 'x' * 3 }}"), "{{ ('x' if true) * 3 }}");
        assert_eq!(
            text("{{ ('x' * 9) ~ a }}"),
            "{{ ((('x' if true) * 9) )|F|F( a) }}"
        );
        assert_eq!(text("{{ 2 * 'x' * n }}"), "{{ (2 if true) * 'x' * n }}");
        assert_eq!(text("{{ a * 3 }}"), "{{ a * 3 }}");
    }

    #[test]
    fn offsets_map_back_through_both_rewrites() {
        let source = "{% set ns.x = a ~ b ~ %}{{ a ~ b ~ c.d }}";
        let out = bound_concats(rewrite(source));
        let d = out.text.rfind(".d").unwrap();
        assert_eq!(out.original_offset(d), source.rfind(".d").unwrap());
        let c = out.text.rfind('c').unwrap();
        assert_eq!(out.original_offset(c), source.rfind('c').unwrap());
        assert_eq!(out.original_offset(out.text.len()), source.len());
    }

    #[test]
    fn concat_is_display_of_both_within_the_limit() {
        assert_eq!(
            concat(&Value::from(vec![1]), None, 1).unwrap(),
            Value::from(vec![1])
        );
        let err = concat(&Value::from("abc"), None, 2).unwrap_err();
        assert!(err
            .detail()
            .unwrap()
            .ends_with("a ~ operand would hold 3 bytes or items, over the limit of 2"));
        let ok = |l: Value, r: Value| concat(&l, Some(&r), 10).unwrap().to_string();
        assert_eq!(ok(Value::from("ab"), Value::from(1)), "ab1");
        assert_eq!(ok(Value::UNDEFINED, Value::from(vec![1, 2])), "[1, 2]");
        let err = concat(&Value::from("abcdef"), Some(&Value::from("ghijk")), 10).unwrap_err();
        assert!(err
            .detail()
            .unwrap()
            .ends_with("a ~ result would hold 11 bytes or items, over the limit of 10"));
        let err = concat(
            &Value::from("abcdef"),
            Some(&Value::from(vec![1, 2, 3])),
            10,
        )
        .unwrap_err();
        assert!(err
            .detail()
            .unwrap()
            .ends_with("a ~ result would hold 11 bytes or items, over the limit of 10"));
    }
}
