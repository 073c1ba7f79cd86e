//! The chat template and special tokens of a GGUF model file, read from its
//! metadata alone.
//!
//! A GGUF file starts with `GGUF`, a version (2 or 3), the tensor count, the
//! metadata count, then the metadata: key (a length-prefixed string), a type
//! tag and a value (numbers, bool, string, or an array of one type, arrays
//! included). The tensors come after; they are never read. Little-endian
//! files only.
//!
//! Invariants: any bytes give a clean `Input` error or the metadata, bounded
//! in time, memory and stack:
//! - reading never panics and never allocates a declared size before the
//!   bytes are there: every length is checked against what the file has
//!   left before a buffer is made;
//! - at most [`MAX_FILE_BYTES`] are read (numbers, lengths, the strings
//!   kept); what is skipped is seeked over, not read. Every key, value and
//!   array item costs some bytes read (at least its length or type), so the
//!   bound also bounds the work, whatever counts the file declares;
//! - arrays of arrays are skipped with a count per open array, not by
//!   recursion: the nesting depth is the file's to choose;
//! - the token list is not kept: its place in the file is, and the few
//!   tokens named by id (bos, eos, eot, eom, and the control and
//!   user-defined ones `tokenizer.ggml.token_type` marks, at most
//!   `MAX_SINGLE_TOKENS`) are read from there at the end.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use super::files::{io_error, MAX_FILE_BYTES};
use super::model_json::MAX_SINGLE_TOKENS;
use crate::error::{Error, ErrorKind, Result};

/// What a GGUF file says about its chat template.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct GgufChat {
    /// `tokenizer.chat_template`.
    pub template: Option<String>,
    /// `tokenizer.chat_template.NAME` entries, by name.
    pub named: BTreeMap<String, String>,
    /// The text of `tokenizer.ggml.tokens[tokenizer.ggml.bos_token_id]`.
    pub bos_token: Option<String>,
    /// The text of `tokenizer.ggml.tokens[tokenizer.ggml.eos_token_id]`.
    pub eos_token: Option<String>,
    /// The texts of `tokenizer.ggml.eot_token_id` and `eom_token_id`.
    pub end_tokens: Vec<String>,
    /// The texts of the tokens `tokenizer.ggml.token_type` marks control
    /// (3) or user-defined (4), without whitespace, in id order: texts a
    /// model writes as one token (`model_json::single_tokens`).
    pub single_tokens: Vec<String>,
}

/// Whether an opened file starts with the GGUF magic; the file is left at
/// its start.
pub(crate) fn has_magic(file: &mut File, shown: &Path) -> Result<bool> {
    let mut magic = [0u8; 4];
    let read = file.read_exact(&mut magic).is_ok();
    file.rewind().map_err(|e| io_error(shown, e))?;
    Ok(read && &magic == b"GGUF")
}

/// Reads the chat metadata of an opened GGUF file; errors name `shown`.
pub(crate) fn read(file: File, shown: &Path) -> Result<GgufChat> {
    let size = file.metadata().map_err(|e| io_error(shown, e))?.len();
    let mut reader = Reader {
        inner: BufReader::new(file),
        size,
        left: size,
        budget: MAX_FILE_BYTES,
    };
    read_metadata(&mut reader)
        .map_err(|m| Error::new(ErrorKind::Input, format!("{}: GGUF {m}", shown.display())))
}

// Value type tags of the GGUF format.
const STRING: u32 = 8;
const ARRAY: u32 = 9;

const TRUNCATED: &str = "file: truncated metadata";

type Parsed<T> = std::result::Result<T, String>;

/// Where the token list is: the offset of its first string, and its length.
#[derive(Clone, Copy)]
struct TokenList {
    at: u64,
    len: u64,
}

/// What is gathered while reading; resolved at the end, since the ids may
/// come before or after the token list.
#[derive(Default)]
struct Found {
    chat: GgufChat,
    tokens: Option<TokenList>,
    bos: Option<u64>,
    eos: Option<u64>,
    ends: Vec<u64>,
    singles: BTreeSet<u64>,
}

fn read_metadata(r: &mut Reader) -> Parsed<GgufChat> {
    let mut magic = [0u8; 4];
    r.fill(&mut magic)?;
    if &magic != b"GGUF" {
        return Err("file: no GGUF magic".into());
    }
    let version = r.u32()?;
    if !(2..=3).contains(&version) {
        return Err(format!("version {version} is not supported (2 or 3)"));
    }
    let _tensors = r.u64()?;
    let count = r.u64()?;
    let mut found = Found::default();
    for _ in 0..count {
        let key = r.string()?;
        let kind = r.u32()?;
        read_entry(r, &key, kind, &mut found)?;
    }
    let named = found.bos.iter().chain(&found.eos).chain(&found.ends);
    let wanted = named.chain(&found.singles);
    let texts = match found.tokens {
        Some(list) => r.token_texts(list, wanted.copied().collect())?,
        None => BTreeMap::new(),
    };
    let text = |id: &u64| texts.get(id).cloned();
    let mut chat = found.chat;
    chat.bos_token = found.bos.as_ref().and_then(text);
    chat.eos_token = found.eos.as_ref().and_then(text);
    chat.end_tokens = found.ends.iter().filter_map(text).collect();
    chat.single_tokens = found
        .singles
        .iter()
        .filter_map(text)
        .filter(|t| !t.is_empty() && !t.chars().any(char::is_whitespace))
        .collect();
    Ok(chat)
}

/// Reads one metadata value, keeping what the chat needs.
fn read_entry(r: &mut Reader, key: &str, kind: u32, found: &mut Found) -> Parsed<()> {
    match (key, kind) {
        ("tokenizer.chat_template", STRING) => found.chat.template = Some(r.string()?),
        (k, STRING) if k.starts_with("tokenizer.chat_template.") => {
            let name = k["tokenizer.chat_template.".len()..].to_owned();
            found.chat.named.insert(name, r.string()?);
        }
        ("tokenizer.ggml.tokens", ARRAY) => found.tokens = r.token_list()?,
        ("tokenizer.ggml.token_type", ARRAY) => found.singles = r.single_ids()?,
        ("tokenizer.ggml.bos_token_id", _) => found.bos = r.integer(kind)?,
        ("tokenizer.ggml.eos_token_id", _) => found.eos = r.integer(kind)?,
        ("tokenizer.ggml.eot_token_id" | "tokenizer.ggml.eom_token_id", _) => {
            found.ends.extend(r.integer(kind)?)
        }
        _ => r.skip_value(kind)?,
    }
    Ok(())
}

/// A little-endian reader that knows how many bytes the file has left and
/// how many more it may read.
struct Reader {
    inner: BufReader<File>,
    size: u64,
    left: u64,
    budget: u64,
}

impl Reader {
    /// Reads exactly `buf.len()` bytes, within the file and the budget.
    fn fill(&mut self, buf: &mut [u8]) -> Parsed<()> {
        let n = buf.len() as u64;
        self.take(n)?;
        self.inner.read_exact(buf).map_err(|e| format!("file: {e}"))
    }

    /// Accounts for `n` bytes about to be read.
    fn take(&mut self, n: u64) -> Parsed<()> {
        if n > self.left {
            return Err(TRUNCATED.into());
        }
        if n > self.budget {
            return Err(format!(
                "metadata: more than {} MiB to read",
                MAX_FILE_BYTES >> 20
            ));
        }
        self.left -= n;
        self.budget -= n;
        Ok(())
    }

    /// Passes over `n` bytes without reading them.
    fn skip(&mut self, n: u64) -> Parsed<()> {
        if n > self.left {
            return Err(TRUNCATED.into());
        }
        // Within the file, hence within i64; relative, so the buffer stays.
        let step = i64::try_from(n).map_err(|_| TRUNCATED.to_owned())?;
        self.inner
            .seek_relative(step)
            .map_err(|e| format!("file: {e}"))?;
        self.left -= n;
        Ok(())
    }

    fn u32(&mut self) -> Parsed<u32> {
        let mut buf = [0u8; 4];
        self.fill(&mut buf)?;
        Ok(u32::from_le_bytes(buf))
    }

    fn u64(&mut self) -> Parsed<u64> {
        let mut buf = [0u8; 8];
        self.fill(&mut buf)?;
        Ok(u64::from_le_bytes(buf))
    }

    fn string(&mut self) -> Parsed<String> {
        let len = self.u64()?;
        self.take(len)?;
        // Only now, with the bytes known to be there, the buffer.
        let mut buf = vec![0u8; len as usize];
        self.inner
            .read_exact(&mut buf)
            .map_err(|e| format!("file: {e}"))?;
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }

    /// An integer value of any integer type (`None` for other types, skipped).
    fn integer(&mut self, kind: u32) -> Parsed<Option<u64>> {
        let value = match kind {
            0 | 1 => {
                let mut buf = [0u8; 1];
                self.fill(&mut buf)?;
                u64::from(buf[0])
            }
            2 | 3 => {
                let mut buf = [0u8; 2];
                self.fill(&mut buf)?;
                u64::from(u16::from_le_bytes(buf))
            }
            4 | 5 => u64::from(self.u32()?),
            10 | 11 => self.u64()?,
            other => {
                self.skip_value(other)?;
                return Ok(None);
            }
        };
        Ok(Some(value))
    }

    /// Passes over the token list, keeping its place (none when it is not
    /// a list of strings).
    fn token_list(&mut self) -> Parsed<Option<TokenList>> {
        let item = self.u32()?;
        let len = self.u64()?;
        let at = self.size - self.left;
        self.skip_items(item, len)?;
        Ok((item == STRING).then_some(TokenList { at, len }))
    }

    /// The ids a `tokenizer.ggml.token_type` array (of 32-bit integers)
    /// marks control or user-defined, at most `MAX_SINGLE_TOKENS` (the
    /// lowest); none for an array of another type, skipped. Every type read
    /// costs its 4 bytes of the budget.
    fn single_ids(&mut self) -> Parsed<BTreeSet<u64>> {
        const CONTROL: u32 = 3;
        const USER_DEFINED: u32 = 4;
        let item = self.u32()?;
        let len = self.u64()?;
        let mut ids = BTreeSet::new();
        if !matches!(item, 4 | 5) {
            self.skip_items(item, len)?;
            return Ok(ids);
        }
        for id in 0..len {
            let kind = self.u32()?;
            if matches!(kind, CONTROL | USER_DEFINED) && ids.len() < MAX_SINGLE_TOKENS {
                ids.insert(id);
            }
        }
        Ok(ids)
    }

    /// The texts of the tokens `wanted` of the list, by id.
    fn token_texts(
        &mut self,
        list: TokenList,
        wanted: BTreeSet<u64>,
    ) -> Parsed<BTreeMap<u64, String>> {
        let mut texts = BTreeMap::new();
        let Some(&last) = wanted.range(..list.len).next_back() else {
            return Ok(texts);
        };
        self.inner
            .seek(SeekFrom::Start(list.at))
            .map_err(|e| format!("file: {e}"))?;
        self.left = self.size - list.at;
        for id in 0..=last {
            if wanted.contains(&id) {
                texts.insert(id, self.string()?);
            } else {
                self.skip_strings(1)?;
            }
        }
        Ok(texts)
    }

    fn skip_value(&mut self, kind: u32) -> Parsed<()> {
        match kind {
            ARRAY => {
                let item = self.u32()?;
                let len = self.u64()?;
                self.skip_items(item, len)
            }
            STRING => self.skip_strings(1),
            other => self.skip(fixed_size(other)?),
        }
    }

    /// Passes over `len` items of type `item`. Arrays of arrays keep, per
    /// open array, how many item arrays are still to come, instead of
    /// recursing: each array header read is 12 bytes of the budget, so the
    /// counts kept are bounded by it.
    fn skip_items(&mut self, item: u32, len: u64) -> Parsed<()> {
        let mut open: Vec<u64> = Vec::new();
        let (mut item, mut len) = (item, len);
        loop {
            match item {
                ARRAY => open.push(len),
                STRING => self.skip_strings(len)?,
                other => self.skip(fixed_size(other)?.checked_mul(len).ok_or(TRUNCATED)?)?,
            }
            // The next item array of the innermost array with one left.
            loop {
                match open.last_mut() {
                    None => return Ok(()),
                    Some(0) => {
                        open.pop();
                    }
                    Some(left) => {
                        *left -= 1;
                        break;
                    }
                }
            }
            item = self.u32()?;
            len = self.u64()?;
        }
    }

    /// Passes over `count` strings, reading only their lengths.
    fn skip_strings(&mut self, count: u64) -> Parsed<()> {
        for _ in 0..count {
            let len = self.u64()?;
            self.skip(len)?;
        }
        Ok(())
    }
}

/// The size of a fixed-size value type.
fn fixed_size(kind: u32) -> Parsed<u64> {
    match kind {
        0 | 1 | 7 => Ok(1),
        2 | 3 => Ok(2),
        4..=6 => Ok(4),
        10..=12 => Ok(8),
        other => Err(format!("metadata: unknown value type {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_path(path: &Path) -> Result<GgufChat> {
        read(File::open(path).unwrap(), path)
    }

    fn string(out: &mut Vec<u8>, s: &str) {
        out.extend((s.len() as u64).to_le_bytes());
        out.extend(s.as_bytes());
    }

    /// A GGUF v3 header declaring `pairs` metadata pairs.
    fn header(pairs: u64) -> Vec<u8> {
        let mut f = b"GGUF".to_vec();
        f.extend(3u32.to_le_bytes());
        f.extend(0u64.to_le_bytes());
        f.extend(pairs.to_le_bytes());
        f
    }

    /// Reads `bytes` as a GGUF file of `len` bytes (zeros after `bytes`,
    /// sparse on disk), on a thread with a server worker's 2 MiB of stack;
    /// `None` when that takes over 20 s (a debug build's generous bound).
    fn read_crafted(name: &str, bytes: &[u8], len: u64) -> Option<Result<GgufChat>> {
        let path =
            std::env::temp_dir().join(format!("cap-gguf-unit-{}-{name}.gguf", std::process::id()));
        let file = std::fs::File::create(&path).unwrap();
        std::io::Write::write_all(&mut &file, bytes).unwrap();
        file.set_len(len.max(bytes.len() as u64)).unwrap();
        let (done, result) = std::sync::mpsc::channel();
        let reading = path.clone();
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || done.send(Box::new(read_path(&reading))))
            .unwrap();
        let outcome = result.recv_timeout(std::time::Duration::from_secs(20)).ok();
        let outcome = outcome.map(|boxed| *boxed);
        std::fs::remove_file(&path).ok();
        outcome
    }

    fn error_of(outcome: Option<Result<GgufChat>>) -> String {
        let error = outcome.expect("read within the time bound").unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Input);
        let message = error.message();
        message[message.find(": GGUF ").expect("names the file") + 2..].to_owned()
    }

    #[test]
    fn arrays_nested_a_hundred_thousand_deep_are_skipped_on_a_small_stack() {
        let mut f = header(2);
        string(&mut f, "general.nested");
        f.extend(ARRAY.to_le_bytes());
        for _ in 0..100_000 {
            f.extend(ARRAY.to_le_bytes());
            f.extend(1u64.to_le_bytes());
        }
        f.extend(0u32.to_le_bytes()); // the innermost: an empty array of u8
        f.extend(0u64.to_le_bytes());
        string(&mut f, "tokenizer.chat_template");
        f.extend(STRING.to_le_bytes());
        string(&mut f, "T");
        assert!(f.len() > 1_200_000);
        let chat = read_crafted("nested", &f, 0)
            .expect("read in time")
            .unwrap();
        assert_eq!(chat.template.as_deref(), Some("T"));
    }

    #[test]
    fn declared_sizes_beyond_the_file_are_truncation_errors() {
        let pair = |key_len: u64, kind: u32, value: &[u8]| {
            let mut f = header(1);
            f.extend(key_len.to_le_bytes());
            f.extend(b"k");
            f.extend(kind.to_le_bytes());
            f.extend(value);
            f
        };
        let array =
            |item: u32, len: u64| [item.to_le_bytes().as_slice(), &len.to_le_bytes()].concat();
        let cases = [
            ("key", pair(u64::MAX, STRING, &[])),
            ("string", pair(1, STRING, &(1u64 << 62).to_le_bytes())),
            ("numbers", pair(1, ARRAY, &array(10, u64::MAX / 4))),
            ("strings", pair(1, ARRAY, &array(STRING, 4_000_000_000))),
            ("pairs", header(u64::MAX)),
        ];
        for (name, bytes) in cases {
            assert_eq!(
                error_of(read_crafted(name, &bytes, 0)),
                "GGUF file: truncated metadata",
                "{name}"
            );
        }
    }

    #[test]
    fn a_token_list_of_billions_of_strings_stops_at_the_read_bound() {
        // 4e9 empty strings, 8 bytes each: a sparse 32 GB file.
        let mut f = header(1);
        string(&mut f, "tokenizer.ggml.tokens");
        f.extend(ARRAY.to_le_bytes());
        f.extend(STRING.to_le_bytes());
        f.extend(4_000_000_000u64.to_le_bytes());
        assert_eq!(
            error_of(read_crafted("tokens", &f, 32_000_000_100)),
            "GGUF metadata: more than 64 MiB to read"
        );
    }

    #[test]
    fn billions_of_metadata_pairs_stop_at_the_read_bound() {
        // Zeros read as pairs: an empty key, type u8, one byte (13 bytes).
        assert_eq!(
            error_of(read_crafted("zeros", &header(u64::MAX), 13_000_000_000)),
            "GGUF metadata: more than 64 MiB to read"
        );
    }

    #[test]
    fn reads_template_and_token_texts_skipping_the_rest() {
        let mut f = b"GGUF".to_vec();
        f.extend(3u32.to_le_bytes());
        f.extend(1u64.to_le_bytes());
        f.extend(5u64.to_le_bytes());
        string(&mut f, "tokenizer.ggml.bos_token_id");
        f.extend(4u32.to_le_bytes());
        f.extend(1u32.to_le_bytes());
        string(&mut f, "general.scores");
        f.extend(ARRAY.to_le_bytes());
        f.extend(6u32.to_le_bytes());
        f.extend(2u64.to_le_bytes());
        f.extend([0u8; 8]);
        string(&mut f, "tokenizer.ggml.tokens");
        f.extend(ARRAY.to_le_bytes());
        f.extend(STRING.to_le_bytes());
        f.extend(3u64.to_le_bytes());
        for t in ["<unk>", "<s>", "</s>"] {
            string(&mut f, t);
        }
        string(&mut f, "tokenizer.ggml.eos_token_id");
        f.extend(5u32.to_le_bytes());
        f.extend(2i32.to_le_bytes());
        string(&mut f, "tokenizer.chat_template");
        f.extend(STRING.to_le_bytes());
        string(&mut f, "{{ bos_token }}");
        f.extend([0xAB; 64]); // tensor info and data: never read
        let path = std::env::temp_dir().join(format!("cap-gguf-unit-{}.gguf", std::process::id()));
        std::fs::write(&path, &f).unwrap();
        let chat = read_path(&path);
        let truncated = {
            std::fs::write(&path, &f[..f.len() - 80]).unwrap();
            read_path(&path)
        };
        std::fs::remove_file(&path).ok();
        let chat = chat.unwrap();
        assert_eq!(chat.template.as_deref(), Some("{{ bos_token }}"));
        assert_eq!(
            (chat.bos_token.as_deref(), chat.eos_token.as_deref()),
            (Some("<s>"), Some("</s>"))
        );
        assert_eq!(
            truncated.unwrap_err().message(),
            format!("{}: GGUF file: truncated metadata", path.display())
        );
    }

    #[test]
    fn control_and_user_defined_tokens_are_single_tokens() {
        let mut f = b"GGUF".to_vec();
        f.extend(3u32.to_le_bytes());
        f.extend(0u64.to_le_bytes());
        f.extend(3u64.to_le_bytes());
        string(&mut f, "tokenizer.ggml.token_type");
        f.extend(ARRAY.to_le_bytes());
        f.extend(5u32.to_le_bytes());
        f.extend(6u64.to_le_bytes());
        // normal, control, user-defined, byte, user-defined (a space run), control
        for t in [1i32, 3, 4, 6, 4, 3] {
            f.extend(t.to_le_bytes());
        }
        string(&mut f, "tokenizer.ggml.tokens");
        f.extend(ARRAY.to_le_bytes());
        f.extend(STRING.to_le_bytes());
        f.extend(6u64.to_le_bytes());
        for t in [
            "a",
            "<|im_end|>",
            "<tool_call>",
            "<0x0A>",
            "   ",
            "<|im_start|>",
        ] {
            string(&mut f, t);
        }
        string(&mut f, "tokenizer.chat_template");
        f.extend(STRING.to_le_bytes());
        string(&mut f, "T");
        let chat = read_crafted("types", &f, f.len() as u64).unwrap().unwrap();
        assert_eq!(
            chat.single_tokens,
            ["<|im_end|>", "<tool_call>", "<|im_start|>"]
        );
    }
}
