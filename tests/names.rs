//! Every named enum's names: unique, spelled by the rule, read back by `FromStr`, and the
//! documented spellings.

use agentwire::acp::PermissionChoice;
use agentwire::api::ErrorKind;
use agentwire::bridge::{BridgeError, Dialect};
use agentwire::cursor::DecoderError;
use agentwire::event::{EventKind, FailureKind, FinishReason, ProgressKind, ToolOutcome};
use agentwire::names::{Named, UnknownName};
use agentwire::openai::chat::ReasoningField;
use agentwire::registry::{FreshReason, ReleaseReason};
use agentwire::tools::ToolStrategy;

/// Every name is unique within its enum, spelled by the rule, and read back by
/// `FromStr`; anything else is an `UnknownName` listing them.
fn names_round_trip<T>()
where
    T: Named + std::str::FromStr<Err = UnknownName>,
{
    let mut seen = std::collections::HashSet::new();
    for &value in T::ALL {
        let name = value.name();
        assert!(seen.insert(name), "{value:?} shares its name {name:?}");
        assert!(
            !name.is_empty()
                && name.bytes().all(|b| b.is_ascii_lowercase()
                    || b.is_ascii_digit()
                    || b == b'_'
                    || b == b'-'),
            "{value:?}: {name:?}"
        );
        assert_eq!(name.parse::<T>(), Ok(value));
    }
    let error = "Nope".parse::<T>().unwrap_err();
    assert_eq!((error.what, error.name.as_str()), (T::WHAT, "Nope"));
    assert_eq!(
        error.expected,
        T::ALL.iter().map(|v| v.name()).collect::<Vec<_>>()
    );
    assert!(
        error
            .to_string()
            .starts_with(&format!("unknown {} \"Nope\" (one of: ", T::WHAT))
    );
}

#[test]
fn every_named_enum_reads_its_names_back() {
    names_round_trip::<ErrorKind>();
    names_round_trip::<FailureKind>();
    names_round_trip::<FinishReason>();
    names_round_trip::<ToolOutcome>();
    names_round_trip::<EventKind>();
    names_round_trip::<ProgressKind>();
    names_round_trip::<Dialect>();
    names_round_trip::<PermissionChoice>();
    names_round_trip::<ToolStrategy>();
    names_round_trip::<ReasoningField>();
    names_round_trip::<BridgeError>();
    names_round_trip::<DecoderError>();
    names_round_trip::<agentwire::acp::ConnectionError>();
    names_round_trip::<FreshReason>();
    names_round_trip::<ReleaseReason>();
}

#[test]
fn names_are_the_documented_spellings() {
    assert_eq!(FailureKind::UsageLimit.name(), "usage_limit");
    assert_eq!(
        ErrorKind::UnsupportedMediaType.name(),
        "unsupported_media_type"
    );
    assert_eq!(Dialect::ChatCompletions.name(), "chat-completions");
    let message = "not-found".parse::<ErrorKind>().unwrap_err().to_string();
    assert!(
        message.starts_with(
            "unknown error kind \"not-found\" (one of: invalid_request, authentication, \
             permission_denied, not_found, "
        ) && message.ends_with(')'),
        "{message}"
    );
}
