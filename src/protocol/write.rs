//! Writing calls the way the model writes them: an OpenAI `tool_calls`
//! list as text in one [`ToolFormat`], segment by segment from its
//! [`CallLayout`].
//!
//! The front door uses it to replay earlier calls on a template that lists
//! tools but never renders an assistant's calls: the calls are written in the
//! format the analysis found (the template's own, else its first fallback
//! dialect), so the prompt never shows the model two tool formats.
//!
//! Invariants: JSON is written as templates' `tojson` writes it (`", "` and
//! `": "`, non-ASCII kept); a call that cannot be written faithfully
//! (arguments that are not a JSON object) gives `None`, never a guess.

use serde_json::{Map, Value};

use super::layout::{Arguments, CallLayout, IdShape, Segment};
use super::TaggedLayout;
use crate::analysis::ToolFormat;

/// `calls` (OpenAI `tool_calls`) as the model writes them in `format`: the
/// section's markers around the calls, the calls between its separators.
pub fn calls_text(format: &ToolFormat, calls: &[Value]) -> Option<String> {
    let written: Option<Vec<String>> = calls
        .iter()
        .enumerate()
        .map(|(index, call)| call_text(format, call, index))
        .collect();
    let body = written?.join(&format.call_separator);
    Some(format!(
        "{}{body}{}",
        format.section_start, format.section_end
    ))
}

/// One call in `format`; `index` is its place in the turn (for counted ids).
fn call_text(format: &ToolFormat, call: &Value, index: usize) -> Option<String> {
    let function = call.get("function").unwrap_or(call);
    let name = function.get("name")?.as_str()?;
    let arguments = arguments_object(function.get("arguments"))?;
    let id = call.get("id").and_then(Value::as_str);
    let mut out = String::new();
    for segment in CallLayout::new(format, name).flat() {
        match segment {
            Segment::Marker(text) | Segment::Text(text) => out.push_str(&text),
            Segment::Id(shape) => out.push_str(&id_text(&shape, id, index)),
            Segment::Arguments(how) => out.push_str(&arguments_text(&how, &arguments)),
            // None in a flat layout: the call is written whole.
            Segment::Optional(_) => {}
        }
    }
    Some(out)
}

/// The arguments as an object: OpenAI sends JSON text, some clients an object.
fn arguments_object(arguments: Option<&Value>) -> Option<Map<String, Value>> {
    match arguments {
        None | Some(Value::Null) => Some(Map::new()),
        Some(Value::Object(map)) => Some(map.clone()),
        Some(Value::String(text)) => match serde_json::from_str(text) {
            Ok(Value::Object(map)) => Some(map),
            _ => None,
        },
        Some(_) => None,
    }
}

fn id_text(shape: &IdShape, id: Option<&str>, index: usize) -> String {
    match (shape, id) {
        (IdShape::JsonString, _) => dumps(&Value::from(id.unwrap_or_default())),
        (IdShape::Counter, _) => index.to_string(),
        (IdShape::Tagged { prefix, suffix }, Some(id)) => format!("{prefix}{id}{suffix}"),
        (IdShape::Tagged { .. }, None) => String::new(),
    }
}

fn arguments_text(how: &Arguments, arguments: &Map<String, Value>) -> String {
    let object = Value::Object(arguments.clone());
    match how {
        Arguments::Json { as_string: false } => dumps(&object),
        Arguments::Json { as_string: true } => dumps(&Value::String(dumps(&object))),
        Arguments::Python => arguments
            .iter()
            .map(|(k, v)| format!("{k}={}", dumps(v)))
            .collect::<Vec<_>>()
            .join(", "),
        Arguments::Tagged(tags) => tagged_text(tags, arguments),
    }
}

/// Marker-wrapped pairs, as a template with tagged arguments renders them.
fn tagged_text(tags: &TaggedLayout, arguments: &Map<String, Value>) -> String {
    let pairs: Vec<String> = arguments
        .iter()
        .map(|(name, value)| {
            let opener = match (value, &tags.typed_value_prefix) {
                (Value::String(_), _) | (_, None) => &tags.value_prefix,
                (_, Some(typed)) => typed,
            };
            let text = match value {
                Value::String(s) if tags.raw_strings => s.clone(),
                other => dumps(other),
            };
            let text = match &tags.escaped_value {
                Some((open, close)) if text.contains(['<', '&', '\n']) => {
                    format!("{open}{text}{close}")
                }
                _ => text,
            };
            let close = tags.close_for(name);
            format!(
                "{}{name}{}{opener}{text}{close}",
                tags.name_prefix, tags.name_suffix
            )
        })
        .collect();
    format!("{}{}", pairs.join(&tags.separator), tags.end)
}

/// JSON as `tojson` writes it: `", "` between items, `": "` after keys.
fn dumps(value: &Value) -> String {
    match value {
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(dumps).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(map) => {
            let members: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", dumps(&Value::from(k.as_str())), dumps(v)))
                .collect();
            format!("{{{}}}", members.join(", "))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::fallback_dialect_formats;
    use serde_json::json;

    fn call(arguments: Value) -> Value {
        json!({"id": "c1", "type": "function",
               "function": {"name": "get_weather", "arguments": arguments}})
    }

    #[test]
    fn python_list_dialect_writes_keyword_calls_in_brackets() {
        let f = &fallback_dialect_formats()[0];
        let calls = [
            call(json!("{\"city\": \"Paris\", \"days\": 2}")),
            call(json!({})),
        ];
        assert_eq!(
            calls_text(f, &calls).unwrap(),
            "<|tool_call_start|>[get_weather(city=\"Paris\", days=2), \
             get_weather()]<|tool_call_end|>"
        );
    }

    #[test]
    fn hermes_dialect_writes_one_json_object_per_call() {
        let f = &fallback_dialect_formats()[1];
        assert_eq!(
            calls_text(f, &[call(json!({"city": "Zürich"}))]).unwrap(),
            "<tool_call>\n{\"name\": \"get_weather\", \
             \"arguments\": {\"city\": \"Zürich\"}}\n</tool_call>"
        );
    }

    #[test]
    fn arguments_that_are_no_object_are_not_written() {
        let f = &fallback_dialect_formats()[1];
        assert_eq!(calls_text(f, &[call(json!("not json"))]), None);
    }
}
