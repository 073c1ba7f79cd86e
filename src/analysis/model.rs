//! The Analysis data model: what a template's assistant turns look like,
//! as plain data (serializable, deterministic byte for byte, usable without
//! the template). The pipeline that fills it lives in `analysis/mod.rs`.
//!
//! Invariant: a serialized analysis carries [`FORMAT_VERSION`] and is
//! refused under any other version.

use serde::{Deserialize, Serialize};

/// Version of the [`Analysis`] data layout; bumped on incompatible changes.
pub const FORMAT_VERSION: u32 = 1;

/// A serialized analysis's `format_version`, refused unless it is [`FORMAT_VERSION`].
fn this_format_version<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<u32, D::Error> {
    let version = <u32 as Deserialize>::deserialize(d)?;
    if version != FORMAT_VERSION {
        return Err(serde::de::Error::custom(format!(
            "analysis format_version {version} is not this library's ({FORMAT_VERSION}): analyse the template again"
        )));
    }
    Ok(version)
}

/// Everything the analysis found about a template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    /// [`FORMAT_VERSION`] at the time of analysis. Deserializing an
    /// analysis of another version is refused: its fields may mean other
    /// things (analyse the template again).
    #[serde(deserialize_with = "this_format_version")]
    pub format_version: u32,
    /// How assistant turns begin and end.
    pub turn: TurnFormat,
    /// How reasoning is marked and how the generation prompt affects it.
    pub reasoning: Reasoning,
    /// Markers wrapped around visible content (`<response>`...), if any.
    pub content: ContentFormat,
    /// How tool calls are written, when the template renders them.
    pub tools: Option<ToolFormat>,
    /// Formats output may hold besides the template's own (see
    /// `fallback` and `prose`): when the template's instructions show an
    /// example call ([`Prose::tool_call`]), its format alone if the template
    /// renders no call, or after the template's own when that has other
    /// markers; else every fallback dialect when the template takes `tools`
    /// but renders no call (`tools` is `None`); the Hermes dialect when its
    /// prompt never shows `tools` (not read, or read and not listed),
    /// because a server's prompt for it lists the tools in Hermes style.
    /// Parser and grammar accept them too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallback_tools: Vec<ToolFormat>,
    /// What was read from the template's instruction text rather than from
    /// its renders (see `prose`).
    #[serde(default, skip_serializing_if = "Prose::is_empty")]
    pub prose: Prose,
    /// Marker tokens a tokenizer must keep whole for the parser to see them.
    pub preserved_tokens: Vec<String>,
    /// Every comparison that was run, and whether the template supported it.
    pub comparisons: Vec<Comparison>,
    /// Template variables the template reads (generic inspection).
    pub variables: Vec<String>,
    /// Caller variables the template needs but does not default; the analysis
    /// rendered with them set to empty text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub assumed_empty: Vec<String>,
    /// Special tokens the template's text holds that no learned marker
    /// uses (`<|python_tag|>`): framing a model may write around a call
    /// that has no marker of its own (see `spare`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spare_tokens: Vec<String>,
}

/// Formats the template's instructions name without rendering them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prose {
    /// The example call the instructions show with tools given
    /// (`functools[{"name": [function name], ...}, ...]`), when its format
    /// is read: that format is `fallback_tools[0]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call: Option<String>,
    /// The reasoning markers are what an instruction names (a quoted phrase
    /// pair, an empty tag pair), not what a render writes.
    #[serde(default, skip_serializing_if = "is_false")]
    pub reasoning: bool,
}

impl Prose {
    /// Nothing was read from prose.
    pub fn is_empty(&self) -> bool {
        self.tool_call.is_none() && !self.reasoning
    }
}

/// How an assistant turn is framed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnFormat {
    /// The generation prompt after the user turn, per thinking setting.
    pub generation_prompt: GenerationPrompts,
    /// Text the template writes after an assistant turn's content (`<|im_end|>\n`).
    pub end_of_turn: String,
    /// The first marker of `end_of_turn`: the token a model emits to stop.
    pub stop_marker: String,
    /// Markers a render writes after the end of turn and before its end, with
    /// no text: always (`<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>`
    /// after `<|END_RESPONSE|>`) or when thinking is off (`<think>\n\n</think>`
    /// after `<|eos|>`). A turn cut from such a render ends with them, and
    /// they close nothing the message needs.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tail: String,
    /// Headers naming the sections of a turn (`<|channel|>` LABEL `<|message|>`);
    /// see `sections`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<Header>,
    /// The end of one message of the turn before the next opens (`<|end|>`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message_end: String,
    /// What opens another message of the same turn: the generation prompt
    /// written again (`<|start|>assistant`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message_start: String,
}

impl TurnFormat {
    /// The text of every marker that frames the turn: its generation
    /// prompts, its end and stop marker, the message end and start, and
    /// its headers' opens and closes (not the `tail`, which only ends some
    /// renders). What readers of the template's own markers start from.
    pub(crate) fn marker_texts(&self) -> impl Iterator<Item = &str> {
        let prompts = &self.generation_prompt;
        let fixed = [
            prompts.default.as_str(),
            &self.end_of_turn,
            &self.stop_marker,
            &self.message_end,
            &self.message_start,
        ];
        let optional = [&prompts.thinking_on, &prompts.thinking_off];
        let headers = self.headers.iter();
        fixed
            .into_iter()
            .chain(optional.into_iter().filter_map(|p| p.as_deref()))
            .chain(headers.flat_map(|h| [h.open.as_str(), h.close.as_str()]))
    }
}

/// A section header's shape: `open`, a label naming the section, `close`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// The marker before the label (`<|channel|>`, `<|open|>`).
    pub open: String,
    /// The marker after the label (`<|message|>`, `<|sep|>`).
    pub close: String,
}

/// Generation prompts: the text after the user turn that opens the assistant turn.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GenerationPrompts {
    /// With no thinking switch passed.
    pub default: String,
    /// With `enable_thinking` true, when the template reads the switch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_on: Option<String>,
    /// With `enable_thinking` false, when the template reads the switch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_off: Option<String>,
}

/// How the model marks its reasoning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ReasoningMode {
    /// No reasoning markers found.
    None,
    /// `start ... end` may appear before the content.
    Tag,
    /// No start marker: reasoning runs from the start of the output to `end`.
    Delimiter,
    /// The default generation prompt opens the block; the model writes `... end`.
    ForcedOpen,
    /// The default generation prompt holds an empty, closed block: no reasoning.
    ForcedClosed,
    /// Reasoning is only rendered on turns that call tools.
    ToolsOnly,
}

/// What a generation prompt does to the reasoning block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum PromptEffect {
    /// Nothing: the model may open a block itself.
    None,
    /// The prompt ends inside an opened block.
    Opens,
    /// The prompt contains an empty closed block.
    Closes,
}

/// Reasoning markers and behaviour.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reasoning {
    /// Summary under the default generation prompt.
    pub mode: ReasoningMode,
    /// Opening marker (`<think>`), empty for delimiter-only reasoning.
    pub start: String,
    /// Closing marker (`</think>`).
    pub end: String,
    /// Effect of the default generation prompt.
    pub default_prompt: PromptEffect,
    /// Effect with `enable_thinking` true, when the template reads it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_on: Option<PromptEffect>,
    /// Effect with `enable_thinking` false, when the template reads it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_off: Option<PromptEffect>,
    /// Reasoning is rendered only on turns with tool calls.
    pub only_with_tool_calls: bool,
    /// Turns without reasoning begin with the end marker alone
    /// (`</mm:think>answer`): an empty block written without its start.
    #[serde(default, skip_serializing_if = "is_false")]
    pub bare_end: bool,
    /// The message field the template reads reasoning from (`reasoning_content`,
    /// `reasoning` or `thinking`), or `content:thinking` when reasoning is a
    /// content part `{"type": "thinking", "thinking": ...}`.
    pub field: String,
}

/// Markers around visible content.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContentFormat {
    /// Text before the content (`<response>`, `<|channel|>final<|message|>`), raw.
    pub start: String,
    /// Text after the content, before the end of turn, raw.
    pub end: String,
    /// The wrapper is written only in turns with calls, around the content
    /// before them (Llama 4: `<|python_start|>` + content + `<|python_end|>`
    /// + the calls); a plain answer is bare.
    #[serde(default, skip_serializing_if = "is_false")]
    pub calls_only: bool,
}

/// The family a tool-call format belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ToolClass {
    /// The whole call is JSON: `{"name": "f", "arguments": {...}}`.
    JsonNative,
    /// Name in markers, arguments a JSON object: `<function=f>{...}</function>`.
    TagJson,
    /// Name and each argument in markers: `<function=f><parameter=x>1</parameter>`.
    TagTagged,
    /// A Python call: `f(x=1, y="a")`.
    PythonCall,
}

/// How tool calls are written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolFormat {
    /// The format family.
    pub class: ToolClass,
    /// Before the first call (`[TOOL_CALLS]`, `<tool_calls>`), raw.
    pub section_start: String,
    /// After the last call, raw.
    pub section_end: String,
    /// The template writes `section_end` only after two calls or more
    /// (DeepSeek-R1-Distill-Llama-8B), so after one it may be missing.
    #[serde(default, skip_serializing_if = "is_false")]
    pub section_end_optional: bool,
    /// Before each call (`<tool_call>\n`), raw.
    pub call_start: String,
    /// After each call (`\n</tool_call>`), raw.
    pub call_end: String,
    /// Between two calls, raw.
    pub call_separator: String,
    /// The template renders two calls in one turn.
    pub parallel: bool,
    /// Where the function name is.
    pub name: NameSlot,
    /// When a tagged name is written twice (`to=NAME<|message|><invoke
    /// name="NAME">`): the name's suffix runs up to the repeat, and this is
    /// the text after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_echo: Option<String>,
    /// How the arguments are written.
    pub arguments: ArgumentsSlot,
    /// Where a call id is written, if anywhere.
    pub id: Option<IdSlot>,
    /// Members of a JSON call object that hold none of the slots and render
    /// the same in every call (`"type": "function"` of a call printed with
    /// `tojson` in OpenAI's shape): the model writes them too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub json_constants: Vec<JsonConstant>,
    /// Content written in the same turn appears before the calls.
    pub content_with_calls: bool,
    /// The template writes a turn's content after its calls
    /// (`<|tool_call>…<tool_call|>Let me check.`): a model trained on it
    /// may too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub content_after_calls: bool,
    /// How the template wants tool calls in the conversation it renders.
    pub input: ToolInput,
}

#[cfg(test)]
impl ToolFormat {
    /// A format of `class` with no markers, one call per turn allowed to
    /// repeat, `name` and `arguments`: the start of unit tests' formats.
    pub(crate) fn bare(class: ToolClass, name: NameSlot, arguments: ArgumentsSlot) -> ToolFormat {
        ToolFormat {
            class,
            section_start: String::new(),
            section_end: String::new(),
            section_end_optional: false,
            call_start: String::new(),
            call_end: String::new(),
            call_separator: String::new(),
            parallel: true,
            name,
            name_echo: None,
            arguments,
            id: None,
            json_constants: vec![],
            content_with_calls: true,
            content_after_calls: false,
            input: ToolInput {
                null_content: false,
                object_arguments: true,
                named_ids: false,
            },
        }
    }
}

/// A fixed member of a JSON call object (see [`ToolFormat::json_constants`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JsonConstant {
    /// Keys from the call object down to the member's value.
    pub path: Vec<String>,
    /// The value, as the template renders it.
    pub value: serde_json::Value,
    /// How many of the call's name, arguments and id members the template
    /// writes before it: its place among them.
    pub after: usize,
}

/// How the template wants tool-call history passed to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolInput {
    /// A turn with calls and no text has `content: null` (else `""`).
    pub null_content: bool,
    /// `arguments` is passed as an object (else as JSON text).
    pub object_arguments: bool,
    /// The template writes a call's id where its name goes, so the ids
    /// must name the function as its models write them,
    /// `functions.NAME:N` (N counting the turn's calls): Kimi's convention.
    #[serde(default, skip_serializing_if = "is_false")]
    pub named_ids: bool,
}

/// Where a tool call's name is written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum NameSlot {
    /// A string field of the call's JSON object, by key path (`["function", "name"]`).
    JsonField {
        /// Keys from the call object down to the name's string.
        path: Vec<String>,
    },
    /// The name is the single key of the call's JSON object.
    JsonKey,
    /// Between two markers (`<function=` and `>`).
    Tagged {
        /// The marker before the name.
        prefix: String,
        /// The marker after the name.
        suffix: String,
    },
}

/// How a tool call's arguments are written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ArgumentsSlot {
    /// A JSON object; `path` locates it inside the call's JSON (empty: the
    /// object follows the name's suffix); `as_string`: written as JSON text.
    Json {
        /// Keys from the call object down to the arguments (empty: after the name).
        path: Vec<String>,
        /// The object is written as JSON text inside a JSON string.
        as_string: bool,
        /// The template writes the arguments' member before the name's
        /// (`{"arguments": {...}, "name": "f"}`, as Hermes-2-Pro's
        /// instructions show it), so a grammar keeps that order.
        #[serde(default, skip_serializing_if = "is_false")]
        before_name: bool,
    },
    /// One marker-wrapped pair per argument.
    Tagged(Box<TaggedArguments>),
    /// Python keyword arguments: `f(a="x", b=1)`.
    Python {
        /// String values are written `'` + value + `'` with nothing escaped
        /// (LFM2.5-8B-A1B): a quote or a newline inside is no Python literal.
        #[serde(default, skip_serializing_if = "is_false")]
        raw_strings: bool,
        /// String values are written with no quotes at all, as `str()`
        /// prints them (`city=Paris`: a template formatting values with
        /// `"%s"`); other values are Python literals as ever.
        #[serde(default, skip_serializing_if = "is_false")]
        bare_strings: bool,
    },
}

/// Markers of the tagged-argument format, all raw.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaggedArguments {
    /// Before an argument's name (`<parameter=`, `<arg_key>`).
    pub name_prefix: String,
    /// After an argument's name (`>\n`, `</arg_key>\n`).
    pub name_suffix: String,
    /// Before a string value (`<arg_value>`).
    pub value_prefix: String,
    /// Before a non-string value when it differs from `value_prefix` (typed attributes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub typed_value_prefix: Option<String>,
    /// After a value (`\n</parameter>`, `</arg_value>`); when the closing
    /// marker repeats the argument's name, the part before that name (`</`).
    pub value_suffix: String,
    /// When the closing marker repeats the argument's name (`<first>V</first>`):
    /// the text after that name (`>`). The close is then `value_suffix`, the
    /// name, and this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub named_close: Option<String>,
    /// Between two arguments.
    pub separator: String,
    /// After the last argument, before the call's end (`\n</function>`).
    pub end: String,
    /// String values are written raw (else JSON-quoted).
    pub raw_strings: bool,
    /// Wrapper around values holding `<`, `&` or a newline (`<![CDATA[`, `]]>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escaped_value: Option<(String, String)>,
    /// How an object or a list in a value is written, when as nested
    /// elements rather than as text (A5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elements: Option<Elements>,
    /// An object in a value is written as a Python literal
    /// (`{'k': 'v'}`, as `str()` prints it), not as JSON (A5): the
    /// template prints values with `str()`, so its other non-string values
    /// are Python literals too (`True`, `None`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub python_values: bool,
}

/// Objects and lists written as nested elements: an object as one element
/// per key, named after the key (`<real>1.5</real><imaginary>2</imaginary>`),
/// a list as one element per item, all with the same name (`<item>a</item>`).
/// All markers raw, as rendered.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Elements {
    /// Before the name in an opening tag (`<`).
    pub open_prefix: String,
    /// After the name in an opening tag (`>`).
    pub open_suffix: String,
    /// Before the name in a closing tag (`</`).
    pub close_prefix: String,
    /// After the name in a closing tag (`>`).
    pub close_suffix: String,
    /// The name of a list's item elements (`item`).
    pub item: String,
}

impl TaggedArguments {
    /// The raw text after the value of the argument `key`.
    pub fn close_for(&self, key: &str) -> String {
        crate::markers::value_close(&self.value_suffix, self.named_close.as_deref(), key)
    }

    /// The typed value prefix around its type word, `(before, after)`, when
    /// it differs from the string prefix by that one word (` type="number"<|sep|>`
    /// against ` type="string"<|sep|>`): the word names the value's type, and
    /// the probes only render some types (`type="object"` exists too), so
    /// readers take any word there.
    pub fn typed_word(&self) -> Option<(&str, &str)> {
        let typed = self.typed_value_prefix.as_deref()?;
        crate::markers::typed_word(&self.value_prefix, typed)
    }
}

/// Where a call id is written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum IdSlot {
    /// A field of the call's JSON object; `before_name`: the template writes
    /// it before the name's field (Cohere's `tool_call_id`), so a grammar
    /// keeps that order.
    JsonField {
        /// Keys from the call object down to the id's string.
        path: Vec<String>,
        /// Written before the name's field.
        #[serde(default, skip_serializing_if = "is_false")]
        before_name: bool,
    },
    /// Between markers, before or after the name.
    Tagged {
        /// The marker before the id.
        prefix: String,
        /// The marker after the id.
        suffix: String,
        /// Written before the name.
        before_name: bool,
    },
    /// Built by the template from the name and a call counter, right after
    /// the name: `functions.NAME:0`. The id is the name's prefix, the name,
    /// `separator` and the counter, as the model writes them.
    Counted {
        /// Text between the name and the counter (`:`).
        separator: String,
    },
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Analysis {
    /// The tool formats output may hold: the template's own first, then
    /// the fallback dialects (see `fallback`).
    pub fn tool_formats(&self) -> impl Iterator<Item = &ToolFormat> + Clone {
        self.tools.iter().chain(&self.fallback_tools)
    }
}

/// Outcome of one comparison.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", content = "detail", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ComparisonStatus {
    /// The renders differed and the difference was read.
    Found(String),
    /// The renders were identical: the template ignores this input.
    NoDifference,
    /// A render failed or a needle was missing; the reason says which.
    Unsupported(String),
}

/// One comparison and its outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Comparison {
    /// Short name (`R1`, `T2`, ...).
    pub name: String,
    /// What was compared.
    pub what: String,
    /// What came of it.
    #[serde(flatten)]
    pub status: ComparisonStatus,
}
