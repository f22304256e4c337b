//! The model catalogue: what `cursor-agent models` (or `--list-models`) prints, read into
//! [`ModelEntry`]s.
//!
//! The listing is meant for a terminal, so it is read defensively:
//!
//! ```text
//! Available models                                  ← header: skipped
//!                                                   ← blank: skipped
//! auto - Auto (default)                             ← `<id> - <name>` and optional markers
//! composer-2.5 - Composer 2.5 (current)
//! gpt-5 - GPT-5 (current, default)                  ← older builds combine the markers
//! claude-fable-5-thinking-high - Claude Fable 5 1M Thinking (NO ZDR)   ← other parentheses are the name's
//!
//! Tip: use --model <id> …                           ← footer: skipped
//! ```
//!
//! ANSI escape sequences (colour, bold, cursor movement) are removed first, a carriage
//! return inside a line keeps only what was drawn after it (a spinner overwritten by the
//! list), bytes that are not UTF-8 are replaced, and any line that is not `<id> - <name>`
//! is skipped. An id appearing twice is listed once, with the markers of both lines.

/// One model the CLI offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelEntry {
    /// The slug passed to `--model` (`composer-2.5`).
    pub id: String,
    /// The display name, without the `(current)`/`(default)` markers (`Composer 2.5`).
    pub name: String,
    /// Marked `(default)`: what the CLI runs without `--model`.
    pub is_default: bool,
    /// Marked `(current)`: the model persisted in the CLI's configuration.
    pub is_current: bool,
}

/// Reads the output of `cursor-agent models` into its entries, in listing order.
///
/// Never fails: lines that are not model entries (headers, tips, blank lines, progress
/// text) are skipped, so an unrecognised listing gives an empty list.
///
/// ```
/// use agentwire::cursor::parse_models;
///
/// let listing = b"\x1b[1mAvailable models\x1b[0m\n\nauto - Auto (default)\ngpt-5 - GPT-5 (current, default)\n\nTip: use --model <id>\n";
/// let models = parse_models(listing);
/// assert_eq!(models.len(), 2);
/// assert_eq!((models[1].id.as_str(), models[1].name.as_str()), ("gpt-5", "GPT-5"));
/// assert!(models[1].is_current && models[1].is_default);
/// ```
#[must_use]
pub fn parse_models(output: &[u8]) -> Vec<ModelEntry> {
    let text = strip_ansi(output);
    let text = String::from_utf8_lossy(&text);
    let mut entries: Vec<ModelEntry> = Vec::new();
    for line in text.split('\n') {
        let Some(entry) = parse_line(line) else {
            continue;
        };
        match entries.iter_mut().find(|e| e.id == entry.id) {
            Some(seen) => {
                seen.is_default |= entry.is_default;
                seen.is_current |= entry.is_current;
            }
            None => entries.push(entry),
        }
    }
    entries
}

/// One line: `[bullet] <id> <dash> <name> [(markers)]…`.
fn parse_line(line: &str) -> Option<ModelEntry> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    // A carriage return inside a line moved the cursor back: what follows overwrote it.
    let line = line.rsplit('\r').next().unwrap_or(line).trim();
    let line = ["- ", "* ", "• "]
        .iter()
        .find_map(|bullet| line.strip_prefix(bullet))
        .unwrap_or(line)
        .trim_start();
    let (id, rest) = line.split_once(char::is_whitespace)?;
    if id.is_empty()
        || !id.bytes().all(is_id_byte)
        || !id.bytes().any(|b| b.is_ascii_alphanumeric())
    {
        return None;
    }
    let rest = rest.trim_start();
    let name = ["-", "–", "—"]
        .iter()
        .find_map(|dash| rest.strip_prefix(dash))?
        .trim();
    let mut entry = ModelEntry {
        id: id.to_owned(),
        name: String::new(),
        is_default: false,
        is_current: false,
    };
    let mut name = name;
    while let Some((before, markers)) = trailing_markers(name) {
        for marker in markers.split(',') {
            match marker.trim().to_ascii_lowercase().as_str() {
                "default" => entry.is_default = true,
                _ => entry.is_current = true,
            }
        }
        name = before;
    }
    entry.name = if name.is_empty() {
        entry.id.clone()
    } else {
        name.to_owned()
    };
    Some(entry)
}

/// `name (current, default)` → (`name`, `current, default`), when the last parenthesis
/// holds only the words `current` and `default`.
fn trailing_markers(name: &str) -> Option<(&str, &str)> {
    let inner = name.strip_suffix(')')?;
    let open = inner.rfind('(')?;
    let markers = &inner[open + 1..];
    let only_markers = !markers.trim().is_empty()
        && markers.split(',').all(|m| {
            let m = m.trim();
            m.eq_ignore_ascii_case("current") || m.eq_ignore_ascii_case("default")
        });
    only_markers.then(|| (inner[..open].trim_end(), markers))
}

fn is_id_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b':' | b'/')
}

/// `bytes` without ANSI escape sequences: CSI (`ESC [` … final byte), OSC (`ESC ]` … BEL
/// or `ESC \`), and two-byte escapes.
fn strip_ansi(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != 0x1b {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        i += 1;
        match bytes.get(i) {
            Some(b'[') => {
                i += 1;
                // Parameter and intermediate bytes, then one final byte.
                while i < bytes.len() && (0x20..=0x3f).contains(&bytes[i]) {
                    i += 1;
                }
                if i < bytes.len() && (0x40..=0x7e).contains(&bytes[i]) {
                    i += 1;
                }
            }
            Some(b']') => {
                i += 1;
                while i < bytes.len() {
                    if bytes[i] == 0x07 {
                        i += 1;
                        break;
                    }
                    if bytes[i] == 0x1b && bytes.get(i + 1) == Some(&b'\\') {
                        i += 2;
                        break;
                    }
                    i += 1;
                }
            }
            Some(_) => i += 1,
            None => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(models: &[ModelEntry]) -> Vec<&str> {
        models.iter().map(|m| m.id.as_str()).collect()
    }

    #[test]
    fn markers_in_every_arrangement() {
        let models = parse_models(
            b"a - A (default)\nb - B (current)\nc - C (current, default)\nd - D (default) (current)\ne - E (Default,Current)\n",
        );
        let flags: Vec<(bool, bool)> = models
            .iter()
            .map(|m| (m.is_default, m.is_current))
            .collect();
        assert_eq!(
            flags,
            [
                (true, false),
                (false, true),
                (true, true),
                (true, true),
                (true, true)
            ]
        );
        assert!(models.iter().all(|m| m.name.len() == 1), "{models:?}");
    }

    #[test]
    fn other_parentheses_are_part_of_the_name() {
        let models =
            parse_models(b"x - Fable 5 (NO ZDR)\ny - Y (beta) (default)\nz - Z (current, beta)\n");
        let names: Vec<&str> = models.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["Fable 5 (NO ZDR)", "Y (beta)", "Z (current, beta)"]);
        assert!(models[1].is_default && !models[2].is_current);
    }

    #[test]
    fn ansi_spinners_and_noise_are_skipped() {
        let listing = b"\x1b[?25l\x1b]0;cursor\x07Loading models...\r\x1b[2K\x1b[1;36mAvailable models\x1b[0m\r\n\r\n\
            \x1b[32mauto\x1b[0m - Auto \x1b[2m(default)\x1b[0m\r\n  - gpt-5 \xe2\x80\x93 GPT-5\r\n\
            Tip: use --model <id>\n- - dash\n--- - rule\nsonnet\n\xff\xfe - bad\n";
        let models = parse_models(listing);
        assert_eq!(ids(&models), ["auto", "gpt-5"]);
        assert_eq!(models[0].name, "Auto");
        assert!(models[0].is_default);
        assert_eq!(models[1].name, "GPT-5");
    }

    #[test]
    fn duplicates_merge_their_markers() {
        let models = parse_models(b"a - A (current)\nb - B\na - A (default)\n");
        assert_eq!(ids(&models), ["a", "b"]);
        assert!(models[0].is_current && models[0].is_default);
    }

    #[test]
    fn empty_and_unrecognised_listings() {
        assert!(parse_models(b"").is_empty());
        assert!(parse_models(b"No models available for this account.\n").is_empty());
        assert!(parse_models(&[0x1b]).is_empty());
        assert!(parse_models(b"\x1b[").is_empty());
        assert!(parse_models(b"\x1b]unterminated").is_empty());
        let only_id = parse_models(b"solo - (default)\n");
        assert_eq!(
            only_id[0].name, "solo",
            "a missing name falls back to the id"
        );
    }
}
