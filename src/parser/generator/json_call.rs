//! JSON call objects: the name, arguments and id at the format's JSON
//! paths, read with their members in any order, and OpenAI's wrapper
//! around a call object.
//!
//! What a model writes beyond the template's format is read so nothing is
//! lost: `parameters` for `arguments` and back, arguments as an object or a
//! string holding one, OpenAI's call fields skipped (its `id` read as the
//! call's where the format has no id of its own), and any other scalar
//! member kept as content (`EXTRA`).
//!
//! A model may write the whole call object as a Python dict (`{'name':
//! 'f', 'arguments': {...}}`): the same reader in [`Notation::Python`],
//! its keys single-quoted and its values Python literals (converted by the
//! decoder, as Python-dict arguments are), with the same forms: arguments
//! as a string holding JSON, OpenAI's wrapper, a list of calls.
//!
//! Invariant: before the name a member only settles its alternatives
//! (`cut`); after it a known key commits, so the arguments stream.

use super::tool_section::ToolGrammar;
use crate::parser::tags::*;
use crate::protocol::Naming;
use chat_autoparser_peg::{
    and, cap, choice, class, commit, cut, empty, json, json_string, lit, literals, not, opt,
    python, seq, star, ws, ByteSet, Expr,
};
use std::collections::HashMap;
use std::fmt::Write;
use std::sync::{LazyLock, Mutex};

/// Where arguments and id sit in a JSON call object.
pub(super) struct JsonPaths {
    args: Option<Vec<String>>,
    id: Option<Vec<String>>,
}

/// How a call object is written: JSON, or a Python dict literal.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Notation {
    Json,
    Python,
}

impl Notation {
    /// `key` quoted as this notation writes a dict key.
    fn key(self, key: &str) -> String {
        match self {
            Notation::Json => json_key(key),
            Notation::Python => format!("'{key}'"),
        }
    }

    /// Any value.
    fn value(self) -> Expr {
        match self {
            Notation::Json => json(),
            Notation::Python => python(),
        }
    }

    /// Arguments: an object, or a string holding one (decoded). A Python
    /// dict or string is converted when whole (the decoder reads a string
    /// it converts to as a JSON one).
    fn arguments(self) -> Expr {
        match self {
            Notation::Json => choice([cap(ARGS_STRING, json_string()), json_arguments()]),
            Notation::Python => seq([and(class(ByteSet::of(b"{'\""))), cap(ARGS_PYTHON, python())]),
        }
    }

    /// A string (a Python one is a literal that starts as one).
    fn string(self) -> Expr {
        match self {
            Notation::Json => json_string(),
            Notation::Python => seq([and(class(ByteSet::of(b"'\""))), python()]),
        }
    }
}

/// `{ other-member* "key": <deeper head or NAME>` for the name path
/// `path[level..]`. `known` checks the name where its quote starts.
pub(super) fn json_head(
    path: &[String],
    paths: &JsonPaths,
    level: usize,
    known: &Expr,
    notation: Notation,
) -> Expr {
    let Some(key) = path.get(level) else {
        return empty();
    };
    let value = match level + 1 == path.len() {
        true => seq([known.clone(), cap(NAME, notation.string())]),
        false => json_head(path, paths, level + 1, known, notation),
    };
    seq([
        lit("{"),
        ws(),
        star(seq([
            member(path, paths, level, false, notation),
            ws(),
            lit(","),
            ws(),
        ])),
        lit(notation.key(key)),
        ws(),
        lit(":"),
        ws(),
        value,
    ])
}

/// OpenAI's wrapper around a call object (`{"type": "function", "function":
/// {...}}`), as its opening (up to the inner object) and its close, when the
/// format names the function at the call object's top level: models trained
/// on OpenAI's form write it in any JSON format. The wrapper's other members
/// are OpenAI's scalars: `"type"`, and `"id"`, read as the call's id. Its close
/// cannot fail (the call committed before it): a missing `}` is forgiven.
pub(super) fn openai_wrapper(naming: &Naming, notation: Notation) -> Option<(Expr, Expr)> {
    let Naming::JsonMember { name: path, .. } = naming else {
        return None;
    };
    if path.len() != 1 || path[0] == "function" {
        return None;
    }
    // The same for every format: built once, each use a reference count
    // (the generator asks for it several times per call rule).
    static JSON: LazyLock<(Expr, Expr)> = LazyLock::new(|| openai_wrapper_parts(Notation::Json));
    static PYTHON: LazyLock<(Expr, Expr)> =
        LazyLock::new(|| openai_wrapper_parts(Notation::Python));
    Some(match notation {
        Notation::Json => JSON.clone(),
        Notation::Python => PYTHON.clone(),
    })
}

/// The opening and close of OpenAI's wrapper in `notation` (see
/// [`openai_wrapper`]).
fn openai_wrapper_parts(notation: Notation) -> (Expr, Expr) {
    let key = lit(notation.key("function"));
    // Only OpenAI's own members: another first key tells a plain call at
    // once, even in a cut output.
    let member =
        |key: &str, value: Expr| seq([lit(notation.key(key)), ws(), lit(":"), ws(), value]);
    let scalar = seq([not(class(ByteSet::of(b"{["))), notation.value()]);
    let scalar = choice([
        member("type", scalar.clone()),
        member("id", choice([cap(ID, notation.string()), scalar])),
    ]);
    let open = seq([
        lit("{"),
        ws(),
        star(seq([scalar.clone(), ws(), lit(","), ws()])),
        key,
        ws(),
        lit(":"),
        ws(),
    ]);
    let close = seq([
        star(seq([ws(), lit(","), ws(), scalar])),
        opt(seq([ws(), lit("}")])),
    ]);
    (open, close)
}

/// Closes the objects [`json_head`] opened, innermost first.
pub(super) fn json_tail(path: &[String], paths: &JsonPaths, notation: Notation) -> Expr {
    let levels = path.len();
    seq((0..levels).rev().map(|level| {
        seq([
            star(seq([
                ws(),
                lit(","),
                ws(),
                member(path, paths, level, true, notation),
            ])),
            ws(),
            lit("}"),
        ])
    }))
}

/// One member of the object at `level` other than the name path's key:
/// the arguments, the id, or anything else. After the name (`streaming`),
/// a known key commits so the value streams; before it, a key only settles
/// the member's alternatives.
///
/// What a model writes beyond the template's format, read so nothing is
/// lost: arguments as a JSON object or as a string holding one (whichever
/// the template writes; a string is decoded), under the template's key or
/// the other common one ([`argument_keys`]). Any other member may hold a
/// scalar: OpenAI's own call fields (`"type": "function"`, `"index": 0`)
/// carry no data of the call and are skipped, and its `"id"` is the call's
/// id where the format has none of its own; any other (`"note": "..."`)
/// is text the model wrote, so it is kept: as content, with a diagnostic
/// (`EXTRA`). An object or a list under an unknown key is malformed there
/// and the rest of the call stays content. In Python notation arguments
/// are a dict, converted when whole.
///
/// A member reads the format's JSON paths, never the request's names, and
/// a grammar reads the same member in several places (a call's head and
/// tail, a Python dict call, an unknown tool's head): each is built once
/// per process and shared (see [`shared_member`]).
fn member(
    path: &[String],
    paths: &JsonPaths,
    level: usize,
    streaming: bool,
    notation: Notation,
) -> Expr {
    let key = member_key(path, paths, level, streaming, notation);
    shared_member(key, || {
        build_member(path, paths, level, streaming, notation)
    })
}

/// What [`build_member`] builds from, as one string: the flags, then each
/// path's keys, each key prefixed by its length so that any key text, a
/// NUL included, keeps two different inputs apart (absent paths marked
/// apart from empty ones).
fn member_key(
    path: &[String],
    paths: &JsonPaths,
    level: usize,
    streaming: bool,
    notation: Notation,
) -> String {
    let mut key = String::with_capacity(64);
    key.push(if notation == Notation::Python {
        'p'
    } else {
        'j'
    });
    key.push(if streaming { 's' } else { 'h' });
    let _ = write!(key, "{level}");
    for part in [Some(path), paths.args.as_deref(), paths.id.as_deref()] {
        key.push(if part.is_some() { '\u{1}' } else { '\u{2}' });
        for k in part.into_iter().flatten() {
            let _ = write!(key, "{}:", k.len());
            key.push_str(k);
        }
    }
    key
}

/// Most members kept (a few per tool format; a process analysing many
/// templates starts over when full).
const SHARED_MEMBERS: usize = 512;

/// The member built before under `key`, or `build`'s, kept for the next grammar.
fn shared_member(key: String, build: impl FnOnce() -> Expr) -> Expr {
    static BUILT: LazyLock<Mutex<HashMap<String, Expr>>> = LazyLock::new(Mutex::default);
    // A panic elsewhere while the lock was held leaves a consistent map.
    let built = || BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(e) = built().get(&key) {
        return e.clone();
    }
    // Built outside the lock: another thread building the same member
    // meanwhile builds the same expression.
    let e = build();
    let mut map = built();
    if map.len() >= SHARED_MEMBERS {
        map.clear();
    }
    map.insert(key, e.clone());
    e
}

/// Builds [`member`].
fn build_member(
    path: &[String],
    paths: &JsonPaths,
    level: usize,
    streaming: bool,
    notation: Notation,
) -> Expr {
    let prefix = &path[..level];
    let settle = || if streaming { commit() } else { cut() };
    let mut alts = Vec::new();
    if let Some(args) = &paths.args {
        if args.len() == level + 1 && args[..level] == *prefix {
            let keys = choice(
                argument_keys(&args[level])
                    .into_iter()
                    .map(|k| lit(notation.key(&k))),
            );
            alts.push(seq([
                keys,
                settle(),
                ws(),
                lit(":"),
                ws(),
                notation.arguments(),
            ]));
        }
    }
    if let Some(id) = &paths.id {
        if id.len() == level + 1 && id[..level] == *prefix {
            alts.push(seq([
                lit(notation.key(&id[level])),
                settle(),
                ws(),
                lit(":"),
                ws(),
                cap(ID, notation.value()),
            ]));
        }
    }
    // A format with no id of its own: OpenAI's call id at the call
    // object's top level (`"id": "a1b2c3d4e"`, Mistral's older JSON call
    // list writes it) is the call's id, not text of the model's. Not
    // settled by its key: an id that is no string is an unknown member.
    if paths.id.is_none() && level == 0 && path[0] != OPENAI_ID {
        alts.push(seq([
            lit(notation.key(OPENAI_ID)),
            ws(),
            lit(":"),
            ws(),
            cap(ID, notation.string()),
        ]));
    }
    let own_key = lit(notation.key(&path[level]));
    let container = || class(ByteSet::of(b"{["));
    let scalar = || seq([ws(), lit(":"), ws(), not(container()), notation.value()]);
    let openai_fields = OPENAI_CALL_FIELDS.map(|k| notation.key(k));
    alts.push(seq([literals(openai_fields), scalar()]));
    alts.push(seq([
        not(own_key),
        cap(EXTRA, seq([notation.string(), scalar()])),
    ]));
    choice(alts)
}

/// Members of OpenAI's tool-call object that say nothing of the call
/// (its kind and position).
const OPENAI_CALL_FIELDS: [&str; 2] = ["type", "index"];

/// The member of OpenAI's tool-call object that holds the call's id.
const OPENAI_ID: &str = "id";

/// The keys arguments are read under: the template's, and for the two
/// common ones (`arguments`, OpenAI's; `parameters`, Llama 3's and
/// Cohere's) the other too, as models trained on one format write the
/// other's key (vLLM's Llama parser takes both for the same reason).
fn argument_keys(key: &str) -> Vec<String> {
    match key {
        "arguments" => vec![key.to_owned(), "parameters".to_owned()],
        "parameters" => vec![key.to_owned(), "arguments".to_owned()],
        _ => vec![key.to_owned()],
    }
}

fn json_key(key: &str) -> String {
    serde_json::Value::String(key.to_string()).to_string()
}

/// A JSON arguments object, streamed as written; or one a model wrote as
/// a Python dict (its first key single-quoted), converted when whole. The
/// JSON reading comes last so that its text streams.
pub(super) fn json_arguments() -> Expr {
    static ARGUMENTS: LazyLock<Expr> = LazyLock::new(|| {
        let python_dict = seq([lit("{"), ws(), lit("'")]);
        choice([
            seq([and(python_dict), cap(ARGS_PYTHON, python())]),
            cap(ARGS, json()),
        ])
    });
    ARGUMENTS.clone()
}

impl<'a> ToolGrammar<'a> {
    pub(super) fn json_paths(&self) -> JsonPaths {
        match &self.layout.naming {
            Naming::JsonMember { arguments, id, .. } => JsonPaths {
                args: arguments.clone(),
                id: id.clone(),
            },
            _ => JsonPaths {
                args: None,
                id: None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys are length-prefixed: a NUL inside a key (a hostile template's
    /// JSON) cannot make two different paths share a member.
    #[test]
    fn member_keys_keep_paths_with_nuls_apart() {
        let paths = JsonPaths {
            args: None,
            id: None,
        };
        let path = |keys: &[&str]| keys.iter().map(|k| k.to_string()).collect::<Vec<_>>();
        let a = member_key(&path(&["a\0", "b"]), &paths, 0, false, Notation::Json);
        let b = member_key(&path(&["a", "\0b"]), &paths, 0, false, Notation::Json);
        assert_ne!(a, b);
    }
}
