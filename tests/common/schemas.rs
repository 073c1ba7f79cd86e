//! JSON Schema features as answers: each schema with texts valid under it
//! and texts that are not. The grammar tests run them through our own
//! recognizer, the engine tests through llama.cpp's GBNF matcher and
//! llguidance, so every engine is held to the same table.

use serde_json::{json, Value};

/// A schema, answers it accepts and answers it rejects.
pub struct SchemaCase {
    pub schema: Value,
    pub good: Vec<&'static str>,
    pub bad: Vec<&'static str>,
}

impl SchemaCase {
    /// Every answer, with whether the schema accepts it.
    pub fn answers(&self) -> impl Iterator<Item = (&'static str, bool)> + '_ {
        let good = self.good.iter().map(|t| (*t, true));
        good.chain(self.bad.iter().map(|t| (*t, false)))
    }
}

/// Every schema feature, with answers valid under it and answers that are
/// not.
pub fn schema_features() -> Vec<SchemaCase> {
    [
        (
            json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}, "c": {"type": "boolean"}}, "required": ["b"]}),
            vec![
                r#"{"b": 1}"#,
                r#"{"a": "x", "b": -2}"#,
                r#"{"a":"x","b":0,"c":true}"#,
                "{\n  \"b\": 3,\n  \"c\": false\n}",
            ],
            vec![
                r#"{"a": "x"}"#,
                r#"{"b": 1.5}"#,
                r#"{"b": 1, "d": 2}"#,
                r#"{"c": true, "b": 1}"#,
            ],
        ),
        (
            json!({"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 3}),
            vec!["[1]", "[1, 2.5e3, -0.1]"],
            vec!["[]", "[1,2,3,4]", "[\"1\"]"],
        ),
        (
            json!({"enum": ["red", "green", 3, null]}),
            vec![r#""red""#, "3", "null"],
            vec![r#""blue""#, "4"],
        ),
        (
            json!({"const": {"k": [1, true]}}),
            vec![r#"{"k":[1,true]}"#],
            vec![r#"{"k":[1,false]}"#],
        ),
        (
            json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
            vec![r#""a\"b\\c\n\u00e9""#, "null"],
            vec!["1", r#""a"b""#],
        ),
        (
            json!({"oneOf": [{"type": "integer"}, {"type": "boolean"}]}),
            vec!["12", "false"],
            vec!["\"12\""],
        ),
        (
            json!({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"}, "next": {"$ref": "#/$defs/node"}}, "required": ["v"]}}, "$ref": "#/$defs/node"}),
            vec![r#"{"v": 1, "next": {"v": 2, "next": {"v": 3}}}"#],
            vec![r#"{"v": 1, "next": {}}"#],
        ),
        (
            json!({"type": "object", "properties": {"名前": {"type": "string"}, "住所": {"type": "string"}, "a b": {"type": "number"}}}),
            vec![r#"{"名前": "太郎", "住所": "東京", "a b": 1}"#, "{}"],
            vec![r#"{"名前": 1}"#],
        ),
        (
            json!({"type": "string", "minLength": 2, "maxLength": 3}),
            vec![r#""ab""#, r#""abc""#],
            vec![r#""a""#, r#""abcd""#],
        ),
        (
            json!({"type": "object", "additionalProperties": {"type": "integer"}}),
            vec![r#"{"x": 1, "y": 2}"#, "{}"],
            vec![r#"{"x": "1"}"#],
        ),
        (
            json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}),
            vec![r#"["a", 1]"#],
            vec![r#"[1, "a"]"#],
        ),
        (
            json!({"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}, {"properties": {"b": {"type": "string"}}}]}),
            vec![r#"{"a": 1, "b": "x"}"#, r#"{"a": 1}"#],
            vec![r#"{"b": "x"}"#],
        ),
        (
            json!({"type": ["integer", "null"]}),
            vec!["5", "null"],
            vec!["true"],
        ),
        (
            json!(true),
            vec!["{\"any\": [1, {\"thing\": null}]}"],
            vec!["{"],
        ),
        (
            json!({"type": "integer", "minimum": 1, "maximum": 31}),
            vec!["1", "15", "31"],
            vec!["0", "32", "-1", "01"],
        ),
        (
            json!({"type": "integer", "exclusiveMinimum": 0}),
            vec!["1", "1000"],
            vec!["0", "-5"],
        ),
        (
            json!({"type": "number", "minimum": 0}),
            vec!["0.5", "3", "0"],
            vec!["-1", "-0.5"],
        ),
        (
            json!({"type": "string", "nullable": true}),
            vec![r#""x""#, "null"],
            vec!["1"],
        ),
        (
            json!({"type": "string", "pattern": "^[A-Z]{3}-\\d{2}$"}),
            vec![r#""ABC-12""#],
            vec![r#""abc-12""#, r#""ABC-123""#],
        ),
        (
            json!({"type": "string", "pattern": "@"}),
            vec![r#""a@b""#, r#""@""#],
            vec![r#""ab""#],
        ),
        (
            json!({"type": "string", "pattern": "^say \"hi\"$"}),
            vec![r#""say \"hi\"""#],
            vec![r#""say hi""#],
        ),
        (
            json!({"type": "string", "format": "date"}),
            vec![r#""2026-11-25""#],
            vec![r#""2026-13-01""#, r#""25/11/2026""#],
        ),
        (
            json!({"type": "string", "format": "date-time"}),
            vec![r#""2026-11-25T04:58:00Z""#, r#""2026-11-25T04:58:00.5+01:00""#],
            vec![r#""2026-11-25""#],
        ),
        (
            json!({"type": "string", "format": "uuid"}),
            vec![r#""123e4567-e89b-12d3-a456-426614174000""#],
            vec![r#""123e4567""#],
        ),
        (
            json!({"$defs": {"t": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/t"}}}}}, "$ref": "#/$defs/t"}),
            vec![r#"{"kids": [{"kids": []}, {}]}"#],
            vec![r#"{"kids": [1]}"#],
        ),
    ]
    .into_iter()
    .map(|(schema, good, bad)| SchemaCase { schema, good, bad })
    .collect()
}
