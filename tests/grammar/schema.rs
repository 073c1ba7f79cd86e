//! The schema compiler through the public API (a response schema on a
//! template without reasoning): each supported feature accepts valid JSON and
//! rejects invalid JSON; unsupported schemas give warnings and still a valid
//! grammar; random schemas never panic and always give text pest parses.

use chat_autoparser::grammar::{syntax, Recognizer};
use chat_autoparser::{
    Analysis, ChatTemplate, Gbnf, Options, TemplateConfig, TemplateSource, ToolChoice,
};
use proptest::prelude::*;

use crate::common::schemas::schema_features;
use serde_json::{json, Value};

fn analysis() -> Analysis {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("templates/bare-json.jinja");
    let source = TemplateSource::load(&path).unwrap();
    ChatTemplate::from_source(&source, &TemplateConfig::default())
        .unwrap()
        .analyze()
        .unwrap()
}

fn answer(a: &Analysis, schema: Value) -> Gbnf {
    let config = Options::default()
        .with_response_schema(Some(schema))
        .with_tool_choice(ToolChoice::None);
    a.grammar(&config).unwrap()
}

#[test]
fn schema_features_accept_and_reject() {
    let a = analysis();
    let (mut accepted, mut rejected) = (0, 0);
    for case in schema_features() {
        let schema = &case.schema;
        let g = answer(&a, schema.clone());
        assert!(g.warnings.is_empty(), "{schema}: {:?}", g.warnings);
        assert!(!g.lazy);
        syntax::parse(&g.gbnf).unwrap_or_else(|e| panic!("{schema}: {e}\n{}", g.gbnf));
        let r = Recognizer::new(&g.gbnf).unwrap();
        for (text, valid) in case.answers() {
            assert_eq!(r.accepts(text), valid, "{schema}: {text}\n{}", g.gbnf);
            *(if valid { &mut accepted } else { &mut rejected }) += 1;
        }
    }
    println!("schema features: {} schemas, {accepted} valid texts accepted, {rejected} invalid texts rejected", schema_features().len());
}

#[test]
fn unsupported_schemas_warn_and_fall_back() {
    let a = analysis();
    for (schema, loose_accepts) in [
        (json!({"type": "string", "pattern": "(?<=a)b"}), "\"ABC\""),
        (json!({"not": {"type": "string"}}), "\"x\""),
        (json!({"$ref": "https://example.com/schema.json"}), "42"),
        (json!({"type": "tensor"}), "[1]"),
        (json!(false), "null"),
        (json!(7), "null"),
    ] {
        let g = answer(&a, schema.clone());
        assert!(!g.warnings.is_empty(), "{schema}: expected a warning");
        syntax::parse(&g.gbnf).unwrap();
        assert!(
            Recognizer::new(&g.gbnf).unwrap().accepts(loose_accepts),
            "{schema}: looser rule should accept {loose_accepts}"
        );
    }
}

#[test]
fn deep_nesting_is_bounded() {
    let mut schema = json!({"type": "integer"});
    for _ in 0..200 {
        schema = json!({"type": "array", "items": schema});
    }
    let g = answer(&analysis(), schema);
    assert!(g.warnings.iter().any(|w| w.contains("deeper")));
    syntax::parse(&g.gbnf).unwrap();
}

/// A definition whose members merge the definition itself (`allOf`) is one
/// recursive rule, walked once: the same values as the definition
/// referenced directly, to any depth, and nothing else.
#[test]
fn all_of_naming_its_own_definition_is_a_recursive_rule() {
    let node = json!({"$ref": "#/$defs/node"});
    let schema = json!({"$ref": "#/$defs/node", "$defs": {"node": {"type": "object", "properties": {
        "label": {"type": "string"}, "left": {"allOf": [node]}, "right": {"allOf": [node]}}}}});
    let g = answer(&analysis(), schema);
    assert!(g.warnings.is_empty(), "{:?}", g.warnings);
    let r = Recognizer::new(&g.gbnf).unwrap();
    for (text, valid) in [
        (
            r#"{"label": "a", "left": {"right": {"left": {"label": "d"}}}}"#,
            true,
        ),
        (r#"{"left": {}, "right": {"left": {}, "right": {}}}"#, true),
        (r#"{"left": {"right": {"label": 1}}}"#, false),
        (r#"{"left": {"other": {}}}"#, false),
    ] {
        assert_eq!(r.accepts(text), valid, "{text}\n{}", g.gbnf);
    }
}

/// An object with many optional members names the members after each one
/// as a rule (spelled out, 200 optional members would be 20 100
/// references): the same texts as the spelled-out form, members in schema
/// order, any of them left out, required ones present.
#[test]
fn long_member_lists_name_their_tails() {
    let properties: serde_json::Map<String, Value> = (0..200)
        .map(|i| (format!("p{i}"), json!({"type": "integer"})))
        .collect();
    for required in [json!([]), json!(["p150"])] {
        let schema = json!({"type": "object", "properties": properties, "required": required});
        let g = answer(&analysis(), schema);
        assert!(g.gbnf.contains("answer-value-tail"), "{}", g.gbnf);
        // Spelled out, about 500 kB.
        assert!(g.gbnf.len() < 100_000, "{} bytes", g.gbnf.len());
        let r = Recognizer::new(&g.gbnf).unwrap();
        let optional = required == json!([]);
        for (text, valid) in [
            ("{}", optional),
            (r#"{"p150": 1}"#, true),
            (r#"{"p0": 1, "p150": 2, "p199": 3}"#, true),
            (r#"{"p3": 1, "p50": 2, "p199": 3}"#, optional),
            (r#"{"p150": 2, "p3": 1}"#, false),
            (r#"{"p3": 1, "p3": 1, "p150": 1}"#, false),
            (r#"{"p3": 1 "p150": 1}"#, false),
            (r#"{"p150": 1, }"#, false),
            (r#"{"p200": 1}"#, false),
        ] {
            assert_eq!(r.accepts(text), valid, "required {required}: {text}");
        }
    }
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        prop::sample::select(vec![
            "type",
            "object",
            "string",
            "integer",
            "array",
            "number",
            "boolean",
            "null",
            "#/$defs/a",
            "properties",
            "x",
            "é名",
            "\"\\\n"
        ])
        .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop::sample::select(vec![
                        "type",
                        "properties",
                        "required",
                        "items",
                        "enum",
                        "const",
                        "anyOf",
                        "oneOf",
                        "allOf",
                        "$ref",
                        "$defs",
                        "additionalProperties",
                        "minItems",
                        "maxItems",
                        "minLength",
                        "maxLength",
                        "prefixItems",
                        "pattern",
                        "a",
                        "名前",
                    ]),
                    inner
                ),
                0..5
            )
            .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_schemas_never_panic_and_always_parse(schema in arb_json(), tool_params in arb_json()) {
        let a = analysis();
        let g = answer(&a, schema);
        prop_assert!(syntax::parse(&g.gbnf).is_ok(), "{}", g.gbnf);
        let tools = vec![json!({"type": "function", "function": {"name": "f", "parameters": tool_params}})];
        for template in ["qwen-coder-xml.jinja", "python-calls.jinja", "hermes-think.jinja"] {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("templates").join(template);
            let source = TemplateSource::load(&path).unwrap();
            let analysis = ChatTemplate::from_source(&source, &TemplateConfig::default()).unwrap().analyze().unwrap();
            let config = Options::default().with_tools(tools.clone()).with_tool_choice(ToolChoice::Required);
            let g = analysis.grammar(&config).unwrap();
            prop_assert!(syntax::parse(&g.gbnf).is_ok(), "{}", g.gbnf);
        }
    }
}
