//! The GBNF language (`grammars/gbnf.pest`): parsing grammar text into rules.
//!
//! The pest grammar is the written definition of the dialect we export and
//! accept (llama.cpp's); [`parse`] turns text into [`Gbnf`], the plain syntax
//! tree the [`Recognizer`](super::Recognizer) compiles.
//!
//! Invariants: [`parse`] never panics; it fails (with a one-line message) on
//! text pest rejects, on a reference to an undefined rule, on a rule defined
//! twice, on a missing `root`, and on a `{m,n}` with `m > n`.

// Test machinery behind `gbnf-check`: pest derives the `Rule` enum, whose
// variants are the grammar file's rule names and cannot carry doc comments.
#![allow(missing_docs)]

use pest::iterators::Pair;
use pest::Parser;
use pest_derive::Parser;

use crate::error::{Error, ErrorKind, Result};

/// The pest parser generated from `grammars/gbnf.pest`.
#[derive(Parser)]
#[grammar = "../grammars/gbnf.pest"]
pub struct GbnfParser;

/// A parsed grammar: rules in source order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gbnf {
    pub rules: Vec<(String, Alternatives)>,
}

/// Alternatives, each a sequence.
pub type Alternatives = Vec<Vec<Item>>;

/// One element of a sequence with its repetitions (applied in order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub atom: Atom,
    pub repeats: Vec<(u32, Option<u32>)>,
}

/// What an item matches once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Atom {
    Literal(Vec<char>),
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
    Any,
    Reference(String),
    Group(Alternatives),
}

/// Upper bound on `{m,n}` counts: a grammar is expanded in memory.
const MAX_COUNT: u32 = 10_000;

/// Parses GBNF text.
pub fn parse(text: &str) -> Result<Gbnf> {
    let mut pairs = GbnfParser::parse(Rule::grammar, text)
        .map_err(|e| syntax(format!("{}", e.renamed_rules(|r| format!("{r:?}")))))?;
    let grammar = pairs.next().ok_or_else(|| syntax("empty parse".into()))?;
    let mut rules: Vec<(String, Alternatives)> = Vec::new();
    for pair in grammar.into_inner().filter(|p| p.as_rule() == Rule::rule) {
        let mut inner = pair.into_inner();
        let name = inner
            .next()
            .map(|p| p.as_str().to_owned())
            .unwrap_or_default();
        let alts = alternatives(
            inner
                .next()
                .ok_or_else(|| syntax("rule without body".into()))?,
        )?;
        if rules.iter().any(|(n, _)| *n == name) {
            return Err(syntax(format!("rule {name} is defined twice")));
        }
        rules.push((name, alts));
    }
    let g = Gbnf { rules };
    check_references(&g)?;
    Ok(g)
}

fn syntax(message: String) -> Error {
    Error::new(ErrorKind::Input, format!("GBNF: {message}"))
}

fn alternatives(pair: Pair<'_, Rule>) -> Result<Alternatives> {
    pair.into_inner().map(sequence).collect()
}

fn sequence(pair: Pair<'_, Rule>) -> Result<Vec<Item>> {
    pair.into_inner().map(item).collect()
}

fn item(pair: Pair<'_, Rule>) -> Result<Item> {
    let mut inner = pair.into_inner();
    let primary = inner.next().ok_or_else(|| syntax("empty item".into()))?;
    let atom = match primary.as_rule() {
        Rule::literal => Atom::Literal(
            primary
                .into_inner()
                .map(|c| char_of(c.into_inner().next()))
                .collect::<Result<_>>()?,
        ),
        Rule::class => class(primary)?,
        Rule::any => Atom::Any,
        // Text is all a recognizer of text sees: a token is its text (the
        // engine alone knows whether the model sampled it as the token).
        Rule::token => Atom::Literal(primary.as_str().chars().collect()),
        Rule::reference => Atom::Reference(primary.as_str().to_owned()),
        Rule::group => Atom::Group(alternatives(
            primary
                .into_inner()
                .next()
                .ok_or_else(|| syntax("empty group".into()))?,
        )?),
        other => return Err(syntax(format!("unexpected {other:?}"))),
    };
    let repeats = inner.map(repeat).collect::<Result<_>>()?;
    Ok(Item { atom, repeats })
}

fn class(pair: Pair<'_, Rule>) -> Result<Atom> {
    let mut negated = false;
    let mut ranges = Vec::new();
    for part in pair.into_inner() {
        match part.as_rule() {
            Rule::negated => negated = true,
            Rule::range => {
                let mut ends = part.into_inner();
                let lo = char_of(ends.next().and_then(|c| c.into_inner().next()))?;
                let hi = char_of(ends.next().and_then(|c| c.into_inner().next()))?;
                ranges.push((lo, hi));
            }
            _ => {
                let c = char_of(part.into_inner().next())?;
                ranges.push((c, c));
            }
        }
    }
    Ok(Atom::Class { negated, ranges })
}

/// The character an `escape`, `plain` or `cplain` pair stands for.
fn char_of(pair: Option<Pair<'_, Rule>>) -> Result<char> {
    let pair = pair.ok_or_else(|| syntax("missing character".into()))?;
    let text = pair.as_str();
    if pair.as_rule() != Rule::escape {
        return text
            .chars()
            .next()
            .ok_or_else(|| syntax("missing character".into()));
    }
    let body = &text[1..];
    let c = match body.chars().next() {
        Some('x' | 'u' | 'U') => {
            let code = u32::from_str_radix(&body[1..], 16).map_err(|e| syntax(e.to_string()))?;
            char::from_u32(code).ok_or_else(|| syntax(format!("{text} is not a character")))?
        }
        Some('t') => '\t',
        Some('r') => '\r',
        Some('n') => '\n',
        Some(c) => c,
        None => return Err(syntax("empty escape".into())),
    };
    Ok(c)
}

fn repeat(pair: Pair<'_, Rule>) -> Result<(u32, Option<u32>)> {
    let op = pair
        .into_inner()
        .next()
        .ok_or_else(|| syntax("empty repetition".into()))?;
    Ok(match op.as_rule() {
        Rule::star => (0, None),
        Rule::plus => (1, None),
        Rule::optional => (0, Some(1)),
        _ => {
            let mut min = 0;
            let mut max = None;
            let mut comma = false;
            for part in op.into_inner() {
                match part.as_rule() {
                    Rule::comma => comma = true,
                    _ => {
                        let n: u32 = part
                            .as_str()
                            .parse()
                            .map_err(|_| syntax(format!("count {} too large", part.as_str())))?;
                        if n > MAX_COUNT {
                            return Err(syntax(format!("count {n} above {MAX_COUNT}")));
                        }
                        if comma {
                            max = Some(n);
                        } else {
                            min = n;
                        }
                    }
                }
            }
            let max = if comma { max } else { Some(min) };
            if max.is_some_and(|m| m < min) {
                return Err(syntax(format!(
                    "repetition {{{min},{}}} has max below min",
                    max.unwrap_or(0)
                )));
            }
            (min, max)
        }
    })
}

fn check_references(g: &Gbnf) -> Result<()> {
    if !g.rules.iter().any(|(n, _)| n == "root") {
        return Err(syntax("no root rule".into()));
    }
    fn walk(alts: &Alternatives, g: &Gbnf) -> Result<()> {
        for item in alts.iter().flatten() {
            match &item.atom {
                Atom::Reference(r) if !g.rules.iter().any(|(n, _)| n == r) => {
                    return Err(syntax(format!("reference to undefined rule {r}")));
                }
                Atom::Group(inner) => walk(inner, g)?,
                _ => {}
            }
        }
        Ok(())
    }
    for (_, alts) in &g.rules {
        walk(alts, g)?;
    }
    Ok(())
}

/// A left-recursive cycle of rules (`a -> b -> a`), which llama.cpp's
/// grammar loader refuses ("left recursion detected"), or `None`. A rule
/// reaches another on its left when the reference can be the first thing it
/// matches: every item before it can match the empty text.
pub fn left_recursion(g: &Gbnf) -> Option<String> {
    let nullable = nullable_rules(g);
    let index: std::collections::HashMap<&str, usize> = g
        .rules
        .iter()
        .enumerate()
        .map(|(i, (n, _))| (n.as_str(), i))
        .collect();
    let edges: Vec<Vec<usize>> = g
        .rules
        .iter()
        .map(|(_, alts)| {
            let mut out = Vec::new();
            left_references(alts, &nullable, &mut out);
            out.iter()
                .filter_map(|r| index.get(r.as_str()).copied())
                .collect()
        })
        .collect();
    // Depth-first search with an explicit stack: 0 unseen, 1 on the path, 2 done.
    let mut state = vec![0u8; g.rules.len()];
    for start in 0..g.rules.len() {
        if state[start] != 0 {
            continue;
        }
        state[start] = 1;
        let mut path: Vec<(usize, usize)> = vec![(start, 0)];
        while let Some(top) = path.len().checked_sub(1) {
            let (rule, next) = path[top];
            let Some(&to) = edges[rule].get(next) else {
                state[rule] = 2;
                path.pop();
                continue;
            };
            path[top].1 += 1;
            if state[to] == 1 {
                let from = path.iter().position(|&(r, _)| r == to).unwrap_or(0);
                let names: Vec<&str> = path[from..]
                    .iter()
                    .chain([&(to, 0)])
                    .map(|&(r, _)| g.rules[r].0.as_str())
                    .collect();
                return Some(names.join(" -> "));
            }
            if state[to] == 0 {
                state[to] = 1;
                path.push((to, 0));
            }
        }
    }
    None
}

/// Names of the rules that can match the empty text (a fixpoint).
fn nullable_rules(g: &Gbnf) -> std::collections::HashSet<String> {
    let mut nullable = std::collections::HashSet::new();
    loop {
        let before = nullable.len();
        for (name, alts) in &g.rules {
            if alts_nullable(alts, &nullable) {
                nullable.insert(name.clone());
            }
        }
        if nullable.len() == before {
            return nullable;
        }
    }
}

fn alts_nullable(alts: &Alternatives, nullable: &std::collections::HashSet<String>) -> bool {
    alts.iter()
        .any(|seq| seq.iter().all(|item| item_nullable(item, nullable)))
}

fn item_nullable(item: &Item, nullable: &std::collections::HashSet<String>) -> bool {
    if item.repeats.iter().any(|&(min, _)| min == 0) {
        return true;
    }
    match &item.atom {
        Atom::Literal(chars) => chars.is_empty(),
        Atom::Class { .. } | Atom::Any => false,
        Atom::Reference(r) => nullable.contains(r),
        Atom::Group(inner) => alts_nullable(inner, nullable),
    }
}

/// The references each alternative of `alts` can begin with.
fn left_references(
    alts: &Alternatives,
    nullable: &std::collections::HashSet<String>,
    out: &mut Vec<String>,
) {
    for seq in alts {
        for item in seq {
            match &item.atom {
                Atom::Reference(r) => out.push(r.clone()),
                Atom::Group(inner) => left_references(inner, nullable, out),
                _ => {}
            }
            if !item_nullable(item, nullable) {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_dialect() {
        let text = "# comment\nroot ::= \"a\\n\\x41\\u00e9\" [^a-z\\]\\x2D] . ( x |\n  y )* x{2,3} y{1,} | \n\"\"\nx ::= [a]? # trailing\ny ::= x+\n";
        let g = parse(text).unwrap();
        assert_eq!(g.rules.len(), 3);
        let (_, root) = &g.rules[0];
        assert_eq!(root.len(), 2);
        assert_eq!(root[0][0].atom, Atom::Literal(vec!['a', '\n', 'A', 'é']));
        assert_eq!(
            root[0][1].atom,
            Atom::Class {
                negated: true,
                ranges: vec![('a', 'z'), (']', ']'), ('-', '-')]
            }
        );
        assert_eq!(root[0][4].repeats, vec![(2, Some(3))]);
        assert_eq!(root[0][5].repeats, vec![(1, None)]);
        assert!(root[1].len() == 1);
    }

    #[test]
    fn rejects_bad_text() {
        for bad in [
            "root ::= undefined\n",
            "x ::= \"a\"\n",
            "root ::= \"\\q\"\n",
            "root ::= a_b\na_b ::= \"\"\n",
            "root ::= \"a\"{3,2}\n",
            "root ::= (\"a\"\n",
            "root ::= \"a\"\nroot ::= \"b\"\n",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn finds_left_recursion_through_nullable_prefixes() {
        let cycle = |text: &str| left_recursion(&parse(text).unwrap());
        assert_eq!(
            cycle("root ::= a\na ::= b \"x\"\nb ::= a | \"y\"\n"),
            Some("a -> b -> a".into())
        );
        assert_eq!(
            cycle("root ::= \"\" ( e )? root\ne ::= \"e\"\n"),
            Some("root -> root".into())
        );
        assert_eq!(
            cycle("root ::= \"(\" root \")\" | x*\nx ::= \"x\" x?\n"),
            None
        );
    }
}
