//! The package's names for the core's enums: the core's stable names (`names::Named`) in
//! camelCase (`usage_limit` is `usageLimit`; a dialect's `chat-completions` stays as it
//! is). Nothing here lists an enum's values: a value added to the core has its name in
//! the package at once, and the tests below fail until the TypeScript types that list them
//! (`ts/*.ts`) list it too.

use std::fmt::{self, Write};

use agentwire::names::Named;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A core name in camelCase, written without allocating.
pub(crate) struct CamelCase(pub(crate) &'static str);

impl fmt::Display for CamelCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut words = self.0.split('_');
        f.write_str(words.next().unwrap_or_default())?;
        for word in words {
            let mut chars = word.chars();
            if let Some(first) = chars.next() {
                f.write_char(first.to_ascii_uppercase())?;
                f.write_str(chars.as_str())?;
            }
        }
        Ok(())
    }
}

/// Whether `name` is `core`'s name in camelCase.
fn is_camel_case_of(name: &str, core: &'static str) -> bool {
    /// Compares what is written with `expected`, consuming it.
    struct Matches<'a>(&'a str, bool);
    impl Write for Matches<'_> {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            match self.0.strip_prefix(s) {
                Some(rest) if self.1 => self.0 = rest,
                _ => self.1 = false,
            }
            Ok(())
        }
    }
    let mut matches = Matches(name, true);
    write!(matches, "{}", CamelCase(core)).expect("comparing cannot fail");
    matches.1 && matches.0.is_empty()
}

/// The value of `T` whose name in the package is `name`.
pub(crate) fn parse<T: Named>(name: &str) -> Option<T> {
    T::ALL
        .iter()
        .copied()
        .find(|value| is_camel_case_of(name, value.name()))
}

/// Every name of `T` in the package, each quoted with `quote`, joined with `, ` (and `last`
/// before the last), for messages.
pub(crate) fn choices<T: Named>(quote: &str, last: &str) -> String {
    let names: Vec<String> = T::ALL
        .iter()
        .map(|value| format!("{quote}{}{quote}", CamelCase(value.name())))
        .collect();
    match names.split_last() {
        Some((final_name, rest)) if !rest.is_empty() => {
            format!("{}{last}{final_name}", rest.join(", "))
        }
        _ => names.concat(),
    }
}

/// A core enum's value as the package spells it, in JSON: its name in camelCase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Camel<T>(pub(crate) T);

impl<T: Named> Serialize for Camel<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&CamelCase(self.0.name()))
    }
}

impl<'de, T: Named> Deserialize<'de> for Camel<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Camel<T>, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        parse(&name).map(Camel).ok_or_else(|| {
            serde::de::Error::custom(format_args!(
                "unknown variant `{name}`, expected one of {}",
                choices::<T>("`", ", ")
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use agentwire::acp::{ConnectionError, NativeTools, PermissionChoice};
    use agentwire::api::ErrorKind;
    use agentwire::bridge::{BridgeError, Dialect};
    use agentwire::cursor::DecoderError;
    use agentwire::event::{EventKind, FailureKind, FinishReason, ProgressKind, ToolOutcome};
    use agentwire::openai::chat::ReasoningField;
    use agentwire::registry::{FreshReason, ReleaseReason};
    use agentwire::tools::ToolStrategy;

    use super::*;

    #[test]
    fn names_are_camel_case() {
        let camel = |name| CamelCase(name).to_string();
        assert_eq!(camel("usage_limit"), "usageLimit");
        assert_eq!(camel("unsupported_media_type"), "unsupportedMediaType");
        assert_eq!(camel("timeout"), "timeout");
        assert_eq!(camel("chat-completions"), "chat-completions");
        assert_eq!(
            parse::<FailureKind>("usageLimit"),
            Some(FailureKind::UsageLimit)
        );
        for wrong in [
            "usage_limit",
            "usage-limit",
            "UsageLimit",
            "usageLimitX",
            "usage",
            "",
        ] {
            assert_eq!(parse::<FailureKind>(wrong), None, "{wrong}");
        }
        assert_eq!(
            choices::<Dialect>("'", " or "),
            "'chat-completions', 'responses' or 'messages'"
        );
        assert_eq!(
            serde_json::to_string(&Camel(ToolStrategy::EnvelopeOnly)).unwrap(),
            r#""envelopeOnly""#
        );
        let error = serde_json::from_str::<Camel<ToolStrategy>>(r#""read-only""#).unwrap_err();
        assert_eq!(
            error.to_string(),
            "unknown variant `read-only`, expected one of `readOnly`, `native`, `envelopeOnly`"
        );
    }

    /// The file of the package's TypeScript sources.
    fn typescript(file: &str) -> String {
        let path = format!("{}/ts/{file}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// The string literals (`'…'`) of the declaration in `file` that starts with
    /// `declaration`, up to the `;` that ends it (outside braces).
    fn literals(file: &str, declaration: &str) -> Vec<String> {
        let source = typescript(file);
        let start = source
            .find(declaration)
            .unwrap_or_else(|| panic!("ts/{file} declares {declaration}"));
        let text = &source[start + declaration.len()..];
        let mut depth = 0i32;
        let end = text
            .char_indices()
            .find(|&(_, c)| {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                c == ';' && depth == 0
            })
            .expect("the declaration ends")
            .0;
        text[..end]
            .split('\'')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    }

    /// The package's names of every value of `T`, in the order of `T::ALL`.
    fn package_names<T: Named>() -> Vec<String> {
        T::ALL
            .iter()
            .map(|value| CamelCase(value.name()).to_string())
            .collect()
    }

    /// The TypeScript declaration lists the package's names of `T`, in the core's order.
    fn lists<T: Named>(file: &str, declaration: &str) {
        assert_eq!(
            literals(file, declaration),
            package_names::<T>(),
            "ts/{file}: `{declaration}` against the core's {}s",
            T::WHAT
        );
    }

    #[test]
    fn typescript_types_list_every_core_value() {
        lists::<ErrorKind>("reply.ts", "export type ErrorReplyKind =");
        lists::<FailureKind>("events.ts", "export type FailureKind =");
        lists::<FinishReason>("events.ts", "export type FinishReason =");
        lists::<ToolOutcome>("events.ts", "export type ToolOutcome =");
        lists::<Dialect>("bridge.ts", "export type Dialect =");
        lists::<Dialect>("bridge.ts", "export const DIALECTS");
        lists::<PermissionChoice>("acp.ts", "export type AcpPermission =");
        lists::<PermissionChoice>("acp.ts", "const ACP_PERMISSIONS");
        lists::<NativeTools>("acp.ts", "export type NativeTools =");
        lists::<NativeTools>("acp.ts", "const NATIVE_TOOLS");
        lists::<ToolStrategy>("config.ts", "export type ToolStrategy =");
        lists::<ReasoningField>("config.ts", "export type ReasoningField =");
        lists::<FreshReason>("registry.ts", "export type FreshReason =");
        lists::<ReleaseReason>("registry.ts", "export type ReleaseReason =");
    }

    #[test]
    fn typescript_mcp_events_are_the_ones_written() {
        assert_eq!(
            literals("mcp.ts", "export type McpCancelReason ="),
            crate::mcp::CANCEL_REASONS
        );
        let source = typescript("mcp.ts");
        let start = source.find("export interface McpCall ").expect("McpCall");
        let end = source.find("export type McpEvent =").expect("McpEvent");
        let tags: Vec<&str> = source[start..end]
            .split("type: '")
            .skip(1)
            .map(|rest| &rest[..rest.find('\'').expect("the tag ends")])
            .collect();
        assert_eq!(
            tags,
            crate::mcp::EVENT_TYPES,
            "ts/mcp.ts: the events' `type` tags"
        );
    }

    #[test]
    fn typescript_events_have_every_core_kind() {
        let events = typescript("events.ts");
        let mut tags: Vec<&str> = events
            .split("type: '")
            .skip(1)
            .map(|rest| &rest[..rest.find('\'').expect("the tag ends")])
            .collect();
        tags.dedup();
        assert_eq!(
            tags,
            package_names::<EventKind>(),
            "ts/events.ts: the `type` tags"
        );
        let mut kinds = literals("events.ts", "export type Progress =");
        kinds.retain(|kind| kind != "progress");
        kinds.sort();
        let mut expected = package_names::<ProgressKind>();
        expected.sort();
        assert_eq!(kinds, expected, "ts/events.ts: the `Progress` kinds");
    }

    #[test]
    fn typescript_error_codes_name_every_misuse() {
        let codes = literals("errors.ts", "export type ErrorCode =");
        let misuse = package_names::<BridgeError>()
            .into_iter()
            .chain(package_names::<ConnectionError>())
            .chain(package_names::<DecoderError>());
        for code in misuse {
            assert!(
                codes.contains(&code),
                "ts/errors.ts: ErrorCode lacks '{code}'"
            );
        }
    }
}
